//! The client advertises exactly what the handler declared.

use arbor_client::handler::{ClientLimits, NoHandler, SamplingLimits};
use arbor_protocol::model::elicitation::ElicitationMode;
use serde_json::{json, Value};
use std::sync::Arc;

use arbor_client::handler::HandlerRuntime;

use super::support::{rig, Notes, TestHandler};

async fn advertised(make: fn(Notes) -> TestHandler, limits: ClientLimits) -> Value {
    let r = rig(make, limits).await;
    serde_json::to_value(r.runtime.capabilities()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn capabilities_match_the_declared_callbacks() {
    let none =
        HandlerRuntime::new(Arc::new(NoHandler), ClientLimits::default(), "s".into(), "c".into(), None).await.unwrap();
    assert_eq!(serde_json::to_value(none.capabilities()).unwrap(), json!({}));
    assert_eq!(
        advertised(TestHandler::new, ClientLimits::default()).await,
        json!({}),
        "callbacks present but undeclared"
    );
    assert_eq!(
        advertised(|tx| TestHandler { sampling: true, ..TestHandler::new(tx) }, ClientLimits::default()).await,
        json!({"sampling": {}})
    );
    let context = ClientLimits {
        sampling: SamplingLimits { allow_context: true, ..SamplingLimits::default() },
        ..ClientLimits::default()
    };
    assert_eq!(
        advertised(|tx| TestHandler { sampling: true, ..TestHandler::new(tx) }, context).await,
        json!({"sampling": {"context": {}}})
    );
    assert_eq!(
        advertised(
            |tx| TestHandler { elicitation: Some(vec![ElicitationMode::Form]), ..TestHandler::new(tx) },
            ClientLimits::default()
        )
        .await,
        json!({"elicitation": {"form": {}}})
    );
    assert_eq!(
        advertised(|tx| TestHandler { elicitation: Some(vec![]), ..TestHandler::new(tx) }, ClientLimits::default())
            .await,
        json!({}),
        "no modes, nothing to answer with"
    );
    assert_eq!(
        advertised(TestHandler::all, ClientLimits::default()).await,
        json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}})
    );
}

#[tokio::test(start_paused = true)]
async fn a_built_handler_advertises_and_answers_exactly_its_closures() {
    use arbor_client::handler::HandlerBuilder;
    use arbor_protocol::model::elicitation::ElicitResult;
    use arbor_protocol::model::roots::ListRootsResult;

    let handler = HandlerBuilder::new()
        .roots(|ctx| async move {
            let uri = format!("file:///srv/{}", ctx.server_id);
            Ok(serde_json::from_value::<ListRootsResult>(json!({"roots": [{"uri": uri}]})).unwrap())
        })
        .elicitation(vec![ElicitationMode::Url], |_params, ctx| async move {
            assert!(ctx.url.is_some());
            Ok(serde_json::from_value::<ElicitResult>(json!({"action": "decline"})).unwrap())
        })
        .build();
    let runtime = HandlerRuntime::new(handler, ClientLimits::default(), "s1".into(), "c".into(), None).await.unwrap();
    assert_eq!(serde_json::to_value(runtime.capabilities()).unwrap(), json!({"elicitation": {"url": {}}, "roots": {}}));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let respond = |tx: &tokio::sync::mpsc::UnboundedSender<Vec<u8>>| -> Box<dyn FnOnce(Vec<u8>) + Send> {
        let tx = tx.clone();
        Box::new(move |frame| {
            let _ = tx.send(frame);
        })
    };
    let frame = |bytes: Vec<u8>| serde_json::from_slice::<Value>(&bytes).unwrap();
    runtime.serve_request(1.into(), "roots/list", None, None, respond(&tx));
    assert_eq!(frame(rx.recv().await.unwrap())["result"], json!({"roots": [{"uri": "file:///srv/s1"}]}));
    runtime.serve_request(
        2.into(),
        "sampling/createMessage",
        Some(super::support::sampling_params()),
        None,
        respond(&tx),
    );
    assert_eq!(frame(rx.recv().await.unwrap())["error"]["code"], -32601);
    let p = json!({"mode": "url", "message": "m", "url": "https://example.com/x", "elicitationId": "e"});
    runtime.serve_request(3.into(), "elicitation/create", Some(p), None, respond(&tx));
    assert_eq!(frame(rx.recv().await.unwrap())["result"], json!({"action": "decline"}));
    runtime.serve_request(4.into(), "elicitation/create", Some(super::support::form_params()), None, respond(&tx));
    assert_eq!(frame(rx.recv().await.unwrap())["error"]["code"], -32602, "form mode was not declared");
}
