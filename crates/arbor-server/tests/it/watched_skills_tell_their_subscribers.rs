//! A watched skills folder (`SkillSource::watch`): a file changed on disk is served anew,
//! its manifest digest follows, and a subscriber hears `notifications/resources/updated`
//! in both eras (a legacy `resources/subscribe`, a 2026-07-28 listen); a changed
//! `SKILL.md` description is a `list_changed`. Real files in a temp dir and the real
//! watcher, so every wait is bounded by the peer's 30-second receive limit, never timed.

use std::fs;
use std::path::Path;

use arbor_server::skills::SkillSource;
use arbor_server::Router;
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};

use crate::skills_are_served_from_snapshots_in_both_eras::{connect, Era};
use crate::support::{modern_meta, ScriptedPeer};

const NOTES: &str = "skill://watched/notes.md";

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("watched")).unwrap();
    write_skill_md(dir.path(), "Before");
    fs::write(dir.path().join("watched/notes.md"), "first version\n").unwrap();
    dir
}

fn write_skill_md(root: &Path, description: &str) {
    let text = format!("---\nname: watched\ndescription: {description}\n---\n\nSee notes.md.\n");
    fs::write(root.join("watched/SKILL.md"), text).unwrap();
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// The next notification called `method`, skipping others.
async fn next(peer: &mut ScriptedPeer, method: &str) -> Value {
    loop {
        let message = peer.recv().await;
        if message["method"] == method {
            return message;
        }
    }
}

async fn manifest_digest(peer: &mut ScriptedPeer, era: Era, uri: &str) -> Value {
    let get = peer.call(50, "skills/get", era.params(json!({"uri": "skill://watched/SKILL.md"}))).await;
    let files = get["result"]["skill"]["resources"].as_array().unwrap().clone();
    files.into_iter().find(|f| f["uri"] == uri).expect("in the manifest")["digest"].clone()
}

#[tokio::test]
async fn a_2025_11_25_subscriber_hears_a_changed_file_and_reads_it_anew() {
    let dir = folder();
    let router = Router::new("skills", "1.0.0").skills(SkillSource::dir(dir.path()).watch());
    let (served, mut peer, capabilities) = connect(router, Era::Legacy).await;
    assert_eq!(capabilities["resources"]["subscribe"], true, "{capabilities}");
    assert_eq!(capabilities["resources"]["listChanged"], true, "{capabilities}");
    assert_eq!(manifest_digest(&mut peer, Era::Legacy, NOTES).await, digest(b"first version\n"));
    let subscribed = peer.call(1, "resources/subscribe", json!({"uri": NOTES})).await;
    assert!(subscribed.get("result").is_some(), "{subscribed}");

    fs::write(dir.path().join("watched/notes.md"), "second version\n").unwrap();
    let updated = next(&mut peer, "notifications/resources/updated").await;
    assert_eq!(updated["params"]["uri"], NOTES);
    assert_eq!(manifest_digest(&mut peer, Era::Legacy, NOTES).await, digest(b"second version\n"));
    let read = peer.call(2, "resources/read", json!({"uri": NOTES})).await;
    assert_eq!(read["result"]["contents"][0]["text"], "second version\n");

    // A new description changes the listed SKILL.md: the resource list changed.
    write_skill_md(dir.path(), "After");
    next(&mut peer, "notifications/resources/list_changed").await;
    let list = peer.call(3, "resources/list", json!({})).await;
    let skill_md = list["result"]["resources"].as_array().unwrap().iter().find(|r| r["name"] == "watched").cloned();
    assert_eq!(skill_md.expect("listed")["description"], "After");
    served.finish(peer).await;
}

#[tokio::test]
async fn a_2026_07_28_listen_hears_a_changed_file() {
    let dir = folder();
    let router = Router::new("skills", "1.0.0").skills(SkillSource::dir(dir.path()).watch());
    let (served, mut peer, _) = connect(router, Era::Modern).await;
    let params = json!({"_meta": modern_meta(json!({})), "notifications": {"resourceSubscriptions": [NOTES]}});
    peer.send(json!({"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen", "params": params}));
    let ack = next(&mut peer, "notifications/subscriptions/acknowledged").await;
    assert_eq!(ack["params"]["notifications"]["resourceSubscriptions"], json!([NOTES]));

    fs::write(dir.path().join("watched/notes.md"), "second version\n").unwrap();
    let updated = next(&mut peer, "notifications/resources/updated").await;
    assert_eq!(updated["params"]["uri"], NOTES);
    assert_eq!(manifest_digest(&mut peer, Era::Modern, NOTES).await, digest(b"second version\n"));
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "listen"}}));
    served.finish(peer).await;
}
