//! Hostile input interleaved with good calls on the same in-memory connections, a
//! thousand frames and more per scenario, each accounted for by the kit's ledger:
//! malformed, truncated, non-object, oversized and deeply nested frames, wrong `jsonrpc`
//! versions and ids of the wrong type (each its -32700 or -32600, with the id when it can
//! be read, none when it cannot); unknown methods and invalid params for the typed
//! requests (-32601 and -32602, with the peer's text clamped to
//! `reflect::MAX_REFLECTED_CHARS` and no hidden character). Every good call gets its
//! result, and each connection answers a ping at the end.

use std::sync::Arc;

use arbor_protocol::reflect::MAX_REFLECTED_CHARS;
use arbor_server::router::{NoArgs, ToolRoute};
use arbor_server::{Router, Server, ServerConfig, TaskConfig, TaskSupport};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tests::kit::hostile::{bad_frame, hostile_text, invalid_params, reflection_fault, unknown_method, BadFrame, Era};
use tests::kit::ledger::{Kind, Ledger};
use tests::kit::plan::Fault;
use tests::kit::Seed;

use crate::kit::{fault_call, Fleet, Wire};
use crate::support::ScriptedPeer;

/// The frame cap of the connections: small, so an oversized frame costs little.
const MAX_FRAME: usize = 4096;

/// The product's own router, so every error below is the runtime's: a tool (tasks
/// too), a prompt, a resource, subscriptions; every method the cases use is advertised.
fn router(config: ServerConfig) -> Server {
    let router = Router::new("hostile", "1")
        .subscriptions()
        .tool("fault", "acts out no fault", |_: NoArgs| async { "survived" })
        .tool_route(ToolRoute::new("job", |_: NoArgs| async { "done" }).task_support(TaskSupport::Optional))
        .prompt("greet", "greets", |_: NoArgs| async { "hello" })
        .resource("mem://about", "about", "What this is.", "text/plain", || async { "about" });
    Server::with_config(router, config.tasks(TaskConfig::default()))
}

/// A good request on `conn`: a `fault` call that answers, or a ping.
fn good(ledger: &Mutex<Ledger>, conn: usize, peer: &ScriptedPeer, rng: &mut tests::kit::Rng, id: &Value) {
    ledger.lock().sent(conn, id, &[Kind::Result]);
    if rng.bool() {
        peer.send(fault_call(id, Fault::None));
    } else {
        peer.send(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
    }
}

/// Reads `peer`'s messages into the ledger until it owes nothing, checking that every
/// error reflects at most the clamp's bound of peer text per member, and nothing hidden;
/// then checks the connection still answers (a ping; a 2026-07-28 call when `modern`,
/// an era without ping).
async fn drain_checked(ledger: Arc<Mutex<Ledger>>, conn: usize, mut peer: ScriptedPeer, modern: bool) -> ScriptedPeer {
    while ledger.lock().owed(conn) > 0 {
        let message = peer.recv().await;
        assert!(message.get("method").is_none(), "only answers on conn {conn}: {message}");
        if let Some(error) = message.get("error") {
            // A -32602 may reflect two members (a tool name and the decoder's detail).
            if let Some(fault) = reflection_fault(error, MAX_REFLECTED_CHARS + 1, 2) {
                panic!("conn {conn}: {fault}: {message}");
            }
        }
        ledger.lock().received(conn, &message);
    }
    if modern {
        let params = json!({"name": "fault", "_meta": tests::peer::modern_meta(json!({}), None)});
        let answer = peer.call(1, "tools/call", params).await;
        assert!(answer.get("result").is_some(), "conn {conn} carried on: {answer}");
    } else {
        assert_eq!(peer.call(1, "ping", json!({})).await["result"], json!({}), "conn {conn} carried on");
    }
    peer
}

/// Sends 150 frames on each of 8 connections carried by `wire`, half of them bad, all
/// pipelined, and accounts for every answer.
async fn bad_frames(name: &str, wire: Wire) {
    let seed = Seed::for_test(name);
    let (fleet, peers) = Fleet::start_framed(name, ServerConfig::default(), 8, wire, MAX_FRAME).await;
    let mut shapes = std::collections::HashMap::<BadFrame, usize>::new();
    let mut drivers = Vec::new();
    for (conn, peer) in peers.into_iter().enumerate() {
        let mut rng = seed.rng(conn as u64);
        for n in 0..150 {
            let id = json!(1000 + n);
            if rng.bool() {
                good(&fleet.ledger, conn, &peer, &mut rng, &id);
                continue;
            }
            let shape = BadFrame::pick(&mut rng);
            let bad = bad_frame(&mut rng, shape, &id, MAX_FRAME);
            *shapes.entry(shape).or_default() += 1;
            fleet.ledger.lock().sent(conn, &bad.id, &[Kind::Error(bad.code)]);
            peer.send_raw(&bad.text);
        }
        drivers.push(tokio::spawn(drain_checked(fleet.ledger.clone(), conn, peer, false)));
    }
    let mut peers = Vec::new();
    for driver in drivers {
        peers.push(driver.await.expect("the driver ran"));
    }
    println!("[kit] {name}: shapes {shapes:?}");
    let summary = fleet.finish(peers).await;
    assert!(summary.requests >= 1000, "{summary}");
    assert_eq!(shapes.len(), BadFrame::ALL.len(), "every shape was sent: {shapes:?}");
    assert!(summary.outcomes[&Kind::Result] > 0 && summary.outcomes[&Kind::Error(-32700)] > 0, "{summary}");
}

#[tokio::test(start_paused = true)]
async fn malformed_oversized_and_deeply_nested_frames_get_the_spec_error_and_good_calls_their_result() {
    bad_frames("bad frames among good ones", Wire::Memory).await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_oversized_and_deeply_nested_frames_over_os_pipes_get_the_spec_error() {
    bad_frames("bad frames among good ones over OS pipes", Wire::Pipes).await;
}

#[tokio::test(start_paused = true)]
async fn unknown_methods_and_invalid_params_get_their_codes_with_the_text_clamped() {
    let name = "unknown methods and invalid params";
    let seed = Seed::for_test(name);
    let (fleet, peers) = Fleet::start_serving(name, ServerConfig::default(), 8, router).await;
    let mut drivers = Vec::new();
    for (conn, peer) in peers.into_iter().enumerate() {
        let mut rng = seed.rng(conn as u64);
        for n in 0..150 {
            let id = json!(1000 + n);
            match rng.u8(..3) {
                0 => good(&fleet.ledger, conn, &peer, &mut rng, &id),
                1 => {
                    let method = unknown_method(&mut rng);
                    fleet.ledger.lock().sent(conn, &id, &[Kind::Error(-32601)]);
                    peer.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}}));
                }
                _ => {
                    let text = hostile_text(&mut rng);
                    let (method, params, code) = invalid_params(&mut rng, &text, Era::Legacy, |_| true);
                    fleet.ledger.lock().sent(conn, &id, &[Kind::Error(code)]);
                    peer.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
                }
            }
        }
        drivers.push(tokio::spawn(drain_checked(fleet.ledger.clone(), conn, peer, false)));
    }
    let summary = fleet.finish_drivers(drivers).await;
    assert!(summary.requests >= 1000, "{summary}");
    for kind in [Kind::Result, Kind::Error(-32601), Kind::Error(-32602)] {
        assert!(summary.outcomes.get(&kind).is_some_and(|n| *n > 0), "no {kind}: {summary}");
    }
}

#[tokio::test(start_paused = true)]
async fn unknown_methods_and_invalid_params_get_their_codes_with_the_text_clamped_in_the_2026_era() {
    let name = "unknown methods and invalid params, 2026-07-28";
    let seed = Seed::for_test(name);
    let (fleet, peers) = Fleet::start_modern(name, ServerConfig::default(), 8, router).await;
    // What 2026-07-28 removed is an unknown method there, not invalid params.
    let removed = ["logging/setLevel", "resources/subscribe", "tasks/get", "tasks/cancel"];
    let mut drivers = Vec::new();
    for (conn, peer) in peers.into_iter().enumerate() {
        let mut rng = seed.rng(conn as u64);
        for n in 0..150 {
            let id = json!(1000 + n);
            let meta = tests::peer::modern_meta(json!({}), None);
            let (method, mut params, code) = match rng.u8(..3) {
                0 => ("tools/call".to_owned(), json!({"name": "fault"}), None),
                1 => (unknown_method(&mut rng), json!({}), Some(-32601)),
                _ => {
                    let text = hostile_text(&mut rng);
                    let (method, params, code) =
                        invalid_params(&mut rng, &text, Era::Modern, |m| !removed.contains(&m));
                    (method.to_owned(), params, Some(code))
                }
            };
            params["_meta"] = meta;
            let expect = code.map_or(Kind::Result, Kind::Error);
            fleet.ledger.lock().sent(conn, &id, &[expect]);
            peer.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        }
        drivers.push(tokio::spawn(drain_checked(fleet.ledger.clone(), conn, peer, true)));
    }
    let summary = fleet.finish_drivers(drivers).await;
    assert!(summary.requests >= 1000, "{summary}");
    for kind in [Kind::Result, Kind::Error(-32601), Kind::Error(-32602)] {
        assert!(summary.outcomes.get(&kind).is_some_and(|n| *n > 0), "no {kind}: {summary}");
    }
}
