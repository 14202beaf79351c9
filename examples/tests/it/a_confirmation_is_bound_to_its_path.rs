//! The demo server's `confirm_delete` as a 2026-07-28 client sees it: the confirmation
//! sealed into `requestState` counts for the path it was asked about and no other. The
//! runtime binds every state to its call's arguments, so a replay on another path is
//! refused before the tool runs (its own path check in its state is a second fence).

use serde_json::json;

use crate::support::{modern_meta, only_text, Peer};

#[tokio::test]
async fn a_replayed_confirmation_for_another_path_is_refused() {
    let mut peer = Peer::spawn("demo_server");
    let meta = modern_meta(json!({"elicitation": {}}));
    let call = |path: &str| json!({"_meta": meta, "name": "confirm_delete", "arguments": {"path": path}});

    let asked = peer.call(1, "tools/call", call("notes/a.txt")).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let message = &asked["result"]["inputRequests"]["confirm"]["params"]["message"];
    assert!(message.as_str().is_some_and(|m| m.contains("notes/a.txt")), "{asked}");
    let state = asked["result"]["requestState"].clone();
    let yes = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});

    let mut replay = call("notes/precious.txt");
    replay["inputResponses"] = yes.clone();
    replay["requestState"] = state.clone();
    let replayed = peer.call(2, "tools/call", replay).await;
    assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
    assert_eq!(replayed["error"]["message"], "Invalid requestState: it was issued for other arguments");

    let mut retry = call("notes/a.txt");
    retry["inputResponses"] = yes;
    retry["requestState"] = state;
    let done = peer.call(3, "tools/call", retry).await;
    assert_eq!(only_text(&done), "Deleted notes/a.txt", "{done}");
    assert!(peer.close().await.success());
}
