//! The skills extension served by `Router::skills_dir`, raw JSON over the in-memory
//! transport in both eras: the capability with `directoryRead`, `skills/list` and
//! `skills/get` entries whose front matter is the file's and whose manifest names every
//! file on disk exactly once with the digest and size of the bytes `resources/read`
//! returns, each `SKILL.md` listed as a resource, directories read one level at a time,
//! and -32602 for what is not served.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use arbor_server::{ConnectOptions, Connection, Router, Server, Transport};
use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};

use crate::support::{modern_meta, ScriptedPeer};

pub fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/skills")
}

/// How requests of one era are made: its `_meta`, and whether 2026-07-28 fields are due.
#[derive(Clone, Copy)]
pub enum Era {
    Legacy,
    Modern,
}

impl Era {
    pub fn params(self, mut params: Value) -> Value {
        if let Era::Modern = self {
            params["_meta"] = modern_meta(json!({}));
        }
        params
    }
}

/// A server and one connection to it.
pub struct Served {
    pub server: Server,
    pub connection: Connection,
}

impl Served {
    /// Closes the peer, waits for the connection, stops the server.
    pub async fn finish(self, peer: ScriptedPeer) {
        peer.close().await;
        self.connection.closed().await;
        self.server.shutdown().await;
    }
}

/// Serves `router`, and connects a peer of `era` (initialized, or after `server/discover`);
/// returns the capabilities it was told.
pub async fn connect(router: Router, era: Era) -> (Served, ScriptedPeer, Value) {
    let server = Server::new(router);
    let (server_side, client_side) = Transport::memory_pair();
    let connection = server.connect(server_side, ConnectOptions::default()).await.unwrap();
    let mut peer = ScriptedPeer::new(client_side);
    let capabilities = match era {
        Era::Legacy => peer.initialize("2025-11-25", json!({})).await["capabilities"].clone(),
        Era::Modern => {
            let discover = peer.call(0, "server/discover", json!({"_meta": modern_meta(json!({}))})).await;
            discover["result"]["capabilities"].clone()
        }
    };
    (Served { server, connection }, peer, capabilities)
}

/// Every file below `dir` as `skill://<prefix>/<path>` URIs.
fn files_on_disk(dir: &Path, prefix: &str, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let child = format!("{prefix}/{name}");
        if entry.file_type().unwrap().is_dir() {
            files_on_disk(&entry.path(), &child, out);
        } else {
            out.insert(format!("skill://{child}"));
        }
    }
}

/// The bytes a `resources/read` answer carries: the UTF-8 of `text`, or the decoded `blob`.
fn served_bytes(read: &Value) -> Vec<u8> {
    let contents = &read["result"]["contents"][0];
    match contents["text"].as_str() {
        Some(text) => text.as_bytes().to_vec(),
        None => base64::engine::general_purpose::STANDARD.decode(contents["blob"].as_str().unwrap()).unwrap(),
    }
}

async fn serves_the_fixture(era: Era) {
    let (served, mut peer, capabilities) = connect(Router::new("skills", "1.0.0").skills_dir(fixture()), era).await;
    assert_eq!(capabilities["extensions"]["io.modelcontextprotocol/skills"], json!({"directoryRead": true}));
    assert!(capabilities["resources"].is_object(), "{capabilities}");

    let list = peer.call(1, "skills/list", era.params(json!({}))).await;
    let result = &list["result"];
    match era {
        Era::Modern => {
            assert_eq!(result["resultType"], "complete");
            assert!(result["ttlMs"].is_u64() && result["cacheScope"].is_string(), "{result}");
        }
        Era::Legacy => assert!(result.get("resultType").is_none() && result.get("ttlMs").is_none(), "{result}"),
    }
    assert!(result.get("nextCursor").is_none());
    let skills = result["skills"].as_array().unwrap();
    let uris: Vec<&str> = skills.iter().map(|s| s["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["skill://pdf-processing/SKILL.md", "skill://acme/billing/refunds/SKILL.md"]);

    // The front matter is the file's, every key of it.
    assert_eq!(
        skills[0]["frontmatter"],
        json!({"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents",
            "license": "Apache-2.0", "metadata": {"author": "arbor", "version": "1.0"}})
    );

    for (skill, dir, prefix) in [
        (&skills[0], fixture().join("pdf-processing"), "pdf-processing"),
        (&skills[1], fixture().join("acme/billing/refunds"), "acme/billing/refunds"),
    ] {
        let manifest = skill["resources"].as_array().unwrap();
        let listed: BTreeSet<String> = manifest.iter().map(|f| f["uri"].as_str().unwrap().to_owned()).collect();
        let mut on_disk = BTreeSet::new();
        files_on_disk(&dir, prefix, &mut on_disk);
        assert_eq!(listed, on_disk, "the manifest names every file once");
        assert_eq!(listed.len(), manifest.len(), "no file twice");
        for (i, file) in manifest.iter().enumerate() {
            let uri = file["uri"].as_str().unwrap();
            let read = peer.call(100 + i as i64, "resources/read", era.params(json!({"uri": uri}))).await;
            let bytes = served_bytes(&read);
            let disk = std::fs::read(dir.join(uri.strip_prefix(&format!("skill://{prefix}/")).unwrap())).unwrap();
            assert_eq!(bytes, disk, "{uri} is served as it is on disk");
            assert_eq!(file["size"], bytes.len(), "{uri}");
            let digest: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(file["digest"], format!("sha256:{digest}"), "{uri}");
        }
        // skills/get answers the same entry, without a cursor.
        let get = peer.call(2, "skills/get", era.params(json!({"uri": skill["uri"]}))).await;
        assert_eq!(&get["result"]["skill"], skill);
        assert!(get["result"].get("nextCursor").is_none());
        if let Era::Modern = era {
            assert!(get["result"]["ttlMs"].is_u64() && get["result"]["resultType"] == "complete", "{get}");
        }
    }

    // SKILL.md is markdown, listed with the front matter's name and description.
    let read = peer.call(3, "resources/read", era.params(json!({"uri": "skill://pdf-processing/SKILL.md"}))).await;
    assert_eq!(read["result"]["contents"][0]["mimeType"], "text/markdown");
    let resources = peer.call(4, "resources/list", era.params(json!({}))).await;
    let listed = resources["result"]["resources"].as_array().unwrap();
    let pdf = listed.iter().find(|r| r["uri"] == "skill://pdf-processing/SKILL.md").expect("SKILL.md listed");
    assert_eq!(pdf["name"], "pdf-processing");
    assert_eq!(pdf["description"], "Extract, fill, and assemble PDF documents");
    assert_eq!(pdf["mimeType"], "text/markdown");
    let templates = peer.call(5, "resources/templates/list", era.params(json!({}))).await;
    assert_eq!(templates["result"]["resourceTemplates"][0]["uriTemplate"], "skill://{+path}");

    // A directory: its direct children only, subdirectories as inode/directory.
    let dir = peer.call(6, "resources/directory/read", era.params(json!({"uri": "skill://pdf-processing"}))).await;
    let children = &dir["result"]["resources"];
    assert_eq!(
        *children,
        json!([
            {"uri": "skill://pdf-processing/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown",
                "size": std::fs::metadata(fixture().join("pdf-processing/SKILL.md")).unwrap().len()},
            {"uri": "skill://pdf-processing/references", "name": "references", "mimeType": "inode/directory"},
            {"uri": "skill://pdf-processing/templates", "name": "templates", "mimeType": "inode/directory"},
        ])
    );
    if let Era::Modern = era {
        assert_eq!(dir["result"]["resultType"], "complete");
    }
    let sub = peer.call(7, "resources/directory/read", era.params(json!({"uri": "skill://pdf-processing/templates"})));
    assert_eq!(sub.await["result"]["resources"][0]["uri"], "skill://pdf-processing/templates/invoice.md");

    // What is not served is invalid params: an unknown skill, a file as a directory, a
    // folder above every skill.
    for (method, uri) in [
        ("skills/get", "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md"),
        ("skills/get", "skill://pdf-processing/references/FORMS.md"),
        ("resources/directory/read", "skill://pdf-processing/SKILL.md"),
        ("resources/directory/read", "skill://acme"),
        ("resources/directory/read", "skill://nowhere"),
    ] {
        let answer = peer.call(8, method, era.params(json!({"uri": uri}))).await;
        assert_eq!(answer["error"]["code"], -32602, "{method} {uri}: {answer}");
    }
    served.finish(peer).await;
}

#[tokio::test]
async fn a_2025_11_25_session_is_served_the_skills() {
    serves_the_fixture(Era::Legacy).await;
}

#[tokio::test]
async fn modern_requests_are_served_the_skills_with_cache_fields() {
    serves_the_fixture(Era::Modern).await;
}

#[tokio::test]
async fn skills_list_pages_never_split_an_entry() {
    let router = Router::new("skills", "1.0.0").page_size(1).skills_dir(fixture());
    let (served, mut peer, _) = connect(router, Era::Modern).await;
    let first = peer.call(1, "skills/list", Era::Modern.params(json!({}))).await;
    assert_eq!(first["result"]["skills"].as_array().unwrap().len(), 1);
    let cursor = first["result"]["nextCursor"].as_str().expect("a second page").to_owned();
    let second = peer.call(2, "skills/list", Era::Modern.params(json!({"cursor": cursor}))).await;
    assert_eq!(second["result"]["skills"][0]["uri"], "skill://acme/billing/refunds/SKILL.md");
    assert!(second["result"].get("nextCursor").is_none());
    let bad = peer.call(3, "skills/list", Era::Modern.params(json!({"cursor": "nonsense"}))).await;
    assert_eq!(bad["error"]["code"], -32602);
    served.finish(peer).await;
}

#[tokio::test]
async fn a_router_without_skills_offers_none_of_the_methods() {
    let router = Router::new("plain", "1.0.0").resource("test://a", "a", "A", "text/plain", || async { "a" });
    let (served, mut peer, capabilities) = connect(router, Era::Legacy).await;
    assert!(capabilities.get("extensions").is_none(), "{capabilities}");
    for method in ["skills/list", "skills/get", "resources/directory/read"] {
        let answer = peer.call(1, method, json!({"uri": "skill://a/SKILL.md"})).await;
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
    }
    served.finish(peer).await;
}

#[tokio::test]
async fn one_skill_folder_serves_its_nested_skill_and_binary_files_in_its_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let outer = dir.path().join("outer");
    std::fs::create_dir_all(outer.join("inner")).unwrap();
    std::fs::write(outer.join("SKILL.md"), "---\nname: outer\ndescription: Outer\n---\n").unwrap();
    std::fs::write(outer.join("inner/SKILL.md"), "---\r\nname: inner\r\ndescription: Inner\r\n---\r\n").unwrap();
    let binary = [0u8, 159, 146, 150, 255, 10];
    std::fs::write(outer.join("inner/logo.bin"), binary).unwrap();
    std::fs::write(outer.join(".hidden"), "not part of the skill").unwrap();
    let (served, mut peer, _) = connect(Router::new("skills", "1.0.0").skill(&outer), Era::Modern).await;

    let list = peer.call(1, "skills/list", Era::Modern.params(json!({}))).await;
    let skills = list["result"]["skills"].as_array().unwrap();
    let uris: Vec<&str> = skills.iter().map(|s| s["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["skill://outer/SKILL.md", "skill://outer/inner/SKILL.md"]);
    let manifest: Vec<&str> =
        skills[0]["resources"].as_array().unwrap().iter().map(|f| f["uri"].as_str().unwrap()).collect();
    assert_eq!(manifest, ["skill://outer/SKILL.md", "skill://outer/inner/SKILL.md", "skill://outer/inner/logo.bin"]);
    assert_eq!(skills[1]["frontmatter"], json!({"name": "inner", "description": "Inner"}), "CRLF reads like LF");

    let logo = &skills[1]["resources"].as_array().unwrap()[1];
    let read = peer.call(2, "resources/read", Era::Modern.params(json!({"uri": logo["uri"]}))).await;
    assert_eq!(read["result"]["contents"][0]["mimeType"], "application/octet-stream");
    let bytes = served_bytes(&read);
    assert_eq!(bytes, binary, "a file that is not UTF-8 is a blob of its bytes");
    let digest: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(logo["digest"], format!("sha256:{digest}"));
    assert_eq!(logo["size"], binary.len());
    let hidden = peer.call(3, "resources/read", Era::Modern.params(json!({"uri": "skill://outer/.hidden"}))).await;
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");
    served.finish(peer).await;
}
