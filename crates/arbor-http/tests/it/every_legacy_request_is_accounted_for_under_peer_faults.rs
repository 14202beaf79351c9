//! Cancel races and reused ids on 2025-11-25 legacy sessions over a real loopback socket,
//! a thousand requests and more, each accounted for by the kit's ledger.

use std::time::Duration;

use arbor_http::HttpConfig;
use arbor_server::ServerConfig;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::ledger::{Cancel, Kind, Ledger};
use tests::kit::peer::{cancel, CancelRace};
use tests::kit::plan::Fault;
use tests::kit::Seed;

use crate::kit::{fault_body, legacy, legacy_answer, live, served, settle};
use crate::support::Served;

/// Records `body`'s answer on session `conn` in the ledger.
fn record(ledger: &Mutex<Ledger>, conn: usize, answer: Option<Value>) {
    if let Some(answer) = answer {
        ledger.lock().received(conn, &answer);
    }
}

/// One session's run: `count` requests, each in a race drawn from `rng`.
async fn session_run(
    served: &Served,
    ledger: &Mutex<Ledger>,
    conn: usize,
    session: &str,
    mut rng: tests::kit::Rng,
    count: usize,
) {
    for n in 0..count {
        let id = json!(1000 + n);
        match CancelRace::pick(&mut rng) {
            CancelRace::Before => {
                assert_eq!(legacy(served, session, &cancel(&id)).await, None);
                ledger.lock().sent(conn, &id, &[Kind::Result]);
                record(ledger, conn, legacy(served, session, &fault_body(&id, Fault::None)).await);
            }
            CancelRace::During => {
                // The hang's answer turns into an SSE stream after `json_wait`: once its head
                // is here the request is in the session's table, and so before whatever is
                // POSTed next. Its id reused then is refused; its cancel is accepted and its
                // stream ends with no answer.
                ledger.lock().sent(conn, &id, &[]);
                let hang = served.post(&fault_body(&id, Fault::Hang), &[("mcp-session-id", session)]);
                let hang = hang.send().await.expect("the hang's head");
                ledger.lock().sent(conn, &id, &[Kind::Error(-32600)]);
                record(ledger, conn, legacy(served, session, &fault_body(&id, Fault::None)).await);
                ledger.lock().cancelled(conn, &id, Cancel::Accepted);
                assert_eq!(legacy(served, session, &cancel(&id)).await, None);
                record(ledger, conn, legacy_answer(hang).await);
            }
            CancelRace::Racing => {
                ledger.lock().sent(conn, &id, &[Kind::Result]);
                ledger.lock().cancelled(conn, &id, Cancel::Raced);
                let (call, stop) = (fault_body(&id, Fault::None), cancel(&id));
                let (answer, _) = tokio::join!(legacy(served, session, &call), legacy(served, session, &stop));
                record(ledger, conn, answer);
            }
            CancelRace::After => {
                ledger.lock().sent(conn, &id, &[Kind::Result]);
                record(ledger, conn, legacy(served, session, &fault_body(&id, Fault::None)).await);
                ledger.lock().cancelled(conn, &id, Cancel::Raced);
                assert_eq!(legacy(served, session, &cancel(&id)).await, None);
            }
            CancelRace::Unknown => {
                assert_eq!(legacy(served, session, &cancel(&json!(format!("never-sent-{n}")))).await, None);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_sessions_honour_each_cancel_race_and_refuse_a_reused_id_in_flight() {
    let name = "legacy cancel races and reused ids over HTTP";
    let seed = Seed::for_test(name);
    // Only the cancel can end a hang in time; its answer turns into a stream at once.
    let config = ServerConfig::default().default_deadline(Duration::from_secs(60));
    let served = served(config, HttpConfig { json_wait: Duration::from_millis(20), ..HttpConfig::default() }).await;
    let ledger = Mutex::new(Ledger::new(name));
    // The sessions stay open to the end: the baseline is taken with them open and idle,
    // after a ping on each (answered once the session handled `initialized`).
    let mut sessions = Vec::new();
    for _ in 0..8 {
        let session = served.initialize("2025-11-25", json!({})).await;
        let ping = json!({"jsonrpc": "2.0", "id": "ready", "method": "ping"});
        assert_eq!(legacy(&served, &session, &ping).await.expect("a pong")["result"], json!({}));
        sessions.push(session);
    }
    let baseline = live(&served).await;
    let runs = sessions
        .iter()
        .enumerate()
        .map(|(conn, session)| session_run(&served, &ledger, conn, session, seed.rng(conn as u64), 150));
    futures::future::join_all(runs).await;
    let after = settle(&served, baseline).await;
    let summary = ledger.into_inner().finish(baseline, after);
    assert!(summary.requests >= 1000, "{summary}");
    assert!(summary.cancelled_unanswered > 0 && summary.outcomes.contains_key(&Kind::Error(-32600)), "{summary}");
    served.finish().await;
}
