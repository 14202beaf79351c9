//! The client's metrics, read from a debugging recorder installed for the test's thread
//! (the test runs on a current-thread runtime, so every record of the client, and of the
//! in-process server, lands in it): `mcp.client.operation.duration` once per call with
//! the conventions' attributes (method, version, tool, transport, server address and port,
//! `error.type` for a tool error and for a JSON-RPC error, with its status code), and
//! `mcp.client.session.duration` once per session, in both eras over HTTP.

use std::collections::BTreeMap;

use arbor_client::{ClientError, ClientOptions, EraMode};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;
use serde_json::json;

use crate::support::HttpFixture;

type Labels = BTreeMap<String, String>;

#[tokio::test]
async fn every_call_and_session_is_timed_with_the_conventions_attributes_in_both_eras() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let http = HttpFixture::start().await;
    let port = http.url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/mcp").to_owned();

    for mode in [EraMode::ForceModern, EraMode::ForceLegacy] {
        let client = http.client(ClientOptions::default().era(mode)).await;
        for _ in 0..3 {
            client.call_tool("echo", json!({"message": "timed"})).await.unwrap();
        }
        assert_eq!(client.call_tool("fails", json!({})).await.unwrap().is_error, Some(true));
        let unknown = client.call_tool("nope", json!({})).await;
        assert!(matches!(&unknown, Err(ClientError::Rpc(e)) if e.code().as_i64() == -32602), "{unknown:?}");
        client.close().await;
    }

    let mut samples: BTreeMap<(String, Labels), usize> = BTreeMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let (kind, key) = key.into_parts();
        let DebugValue::Histogram(values) = value else { continue };
        assert_eq!(kind, MetricKind::Histogram);
        if !key.name().starts_with("mcp.client.") {
            continue;
        }
        assert!(values.iter().all(|v| v.0 >= 0.0 && v.0 < 60.0), "seconds: {values:?}");
        let labels = key.labels().map(|l| (l.key().to_owned(), l.value().to_owned())).collect();
        *samples.entry((key.name().to_owned(), labels)).or_default() += values.len();
    }
    let labels = |pairs: &[(&str, &str)]| -> Labels {
        let mut l: Labels = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        l.insert("network.transport".into(), "tcp".into());
        l.insert("server.address".into(), "127.0.0.1".into());
        l.insert("server.port".into(), port.clone());
        l
    };
    let mut expected = BTreeMap::new();
    for version in ["2026-07-28", "2025-11-25"] {
        let call = [("mcp.method.name", "tools/call"), ("mcp.protocol.version", version)];
        let op = "mcp.client.operation.duration".to_owned();
        expected.insert((op.clone(), labels(&[call[0], call[1], ("gen_ai.tool.name", "echo")])), 3);
        let failed = [call[0], call[1], ("gen_ai.tool.name", "fails"), ("error.type", "tool_error")];
        expected.insert((op.clone(), labels(&failed)), 1);
        let unknown = [
            call[0],
            call[1],
            ("gen_ai.tool.name", "nope"),
            ("error.type", "-32602"),
            ("rpc.response.status_code", "-32602"),
        ];
        expected.insert((op, labels(&unknown)), 1);
        let session = labels(&[("mcp.protocol.version", version)]);
        expected.insert(("mcp.client.session.duration".to_owned(), session), 1);
    }
    // Only tools/call and sessions: whatever else the client sent (discovery) is not asserted.
    samples.retain(|(name, l), _| {
        name == "mcp.client.session.duration" || l.get("mcp.method.name").map(String::as_str) == Some("tools/call")
    });
    assert_eq!(samples, expected);
}
