//! `demo_server` serves its skills folder (`examples/skills`) over Streamable HTTP as the
//! skills extension says, to a 2026-07-28 client and to a 2025-11-25 session on the same
//! endpoint: the capability, `skills/list` and `skills/get` with the manifest, the
//! `SKILL.md` read whose bytes match the manifest's size, and a directory read.

use serde_json::json;

use crate::http::{answer, Client, ServerProcess};

const SKILL: &str = "skill://release-notes/SKILL.md";

#[tokio::test]
async fn demo_server_serves_its_skills_over_http_in_both_eras() {
    let server = ServerProcess::spawn("demo_server", &["--feed-interval-ms", "0"]).await;
    let client = Client::new(&server.url);

    // 2026-07-28: discover, list, read.
    let discover = answer(client.modern(json!(1), "server/discover", json!({})).await).await;
    let extension = &discover["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/skills"];
    assert_eq!(*extension, json!({"directoryRead": true}), "{discover}");
    let listed = answer(client.modern(json!(2), "skills/list", json!({})).await).await;
    let skill = listed["result"]["skills"].as_array().unwrap().iter().find(|s| s["uri"] == SKILL).cloned();
    let skill = skill.unwrap_or_else(|| panic!("release-notes is not listed: {listed}"));
    assert_eq!(skill["frontmatter"]["name"], "release-notes");
    assert_eq!(listed["result"]["resultType"], "complete");
    let read = answer(client.modern(json!(3), "resources/read", json!({"uri": SKILL})).await).await;
    let text = read["result"]["contents"][0]["text"].as_str().expect("SKILL.md as text").to_owned();
    let manifest = skill["resources"].as_array().unwrap();
    let own = manifest.iter().find(|f| f["uri"] == SKILL).expect("SKILL.md in its manifest");
    assert_eq!(own["size"], text.len(), "{own}");

    // 2025-11-25: the same skill in a session, and its folder.
    let session = client.open_session().await;
    let get = json!({"jsonrpc": "2.0", "id": 4, "method": "skills/get", "params": {"uri": SKILL}});
    let got = answer(client.legacy(Some(&session), get).await).await;
    assert_eq!(got["result"]["skill"], skill, "{got}");
    let dir = json!({"jsonrpc": "2.0", "id": 5, "method": "resources/directory/read", "params": {"uri": "skill://release-notes"}});
    let children = answer(client.legacy(Some(&session), dir).await).await;
    let templates =
        children["result"]["resources"].as_array().unwrap().iter().find(|r| r["name"] == "templates").cloned();
    assert_eq!(templates.expect("the templates folder")["mimeType"], "inode/directory", "{children}");

    assert!(server.stop().await.success(), "a clean exit on SIGTERM");
}
