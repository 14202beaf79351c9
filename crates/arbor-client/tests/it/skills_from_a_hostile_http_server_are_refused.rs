//! The skills client in the 2026-07-28 era against a hostile Streamable HTTP server (an
//! axum handler on a loopback port answering `server/discover`, `skills/list` and
//! `resources/read` by hand, recording every read): a `SKILL.md` tampered in its bytes
//! (same size), its length or its front matter is refused and the read log shows no other
//! read; an honest skill loads, an unlisted file is refused without a request, and a
//! listed one is read only when asked for.

use std::sync::Arc;

use arbor_client::skills::{Check, FrontmatterProblem, SkillError};
use arbor_client::{Client, ClientOptions, EraCache, HttpTarget};
use arbor_protocol::version::Era;
use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::skills_from_a_hostile_server_are_refused::{digest, entry, FORMS_MD, FORMS_URI, SKILL_MD, SKILL_URI};

/// What the server serves, and every URI the client read.
struct Hostile {
    /// The SKILL.md served.
    served: String,
    /// The SKILL.md the manifest describes.
    listed: String,
    reads: Mutex<Vec<String>>,
}

fn answer(id: Value, result: Value) -> Response {
    let mut result = result;
    result["resultType"] = json!("complete");
    result["ttlMs"] = json!(0);
    result["cacheScope"] = json!("private");
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(Body::from(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()))
        .unwrap()
}

async fn hostile(State(state): State<Arc<Hostile>>, body: String) -> Response {
    let msg: Value = serde_json::from_str(&body).unwrap();
    let id = msg["id"].clone();
    match msg["method"].as_str() {
        Some("server/discover") => answer(
            id,
            json!({"supportedVersions": ["2026-07-28"], "serverInfo": {"name": "hostile", "version": "1"},
                "capabilities": {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}}}),
        ),
        Some("skills/list") => answer(id, json!({"skills": [entry(&state.listed)]})),
        Some("resources/read") => {
            let uri = msg["params"]["uri"].as_str().unwrap_or_default().to_owned();
            state.reads.lock().push(uri.clone());
            let text = if uri == FORMS_URI { FORMS_MD } else { state.served.as_str() };
            answer(id, json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}))
        }
        _ => Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/json")
            .body(Body::from(
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}).to_string(),
            ))
            .unwrap(),
    }
}

/// A hostile server serving `served` for a manifest of `listed`, and a client of it.
async fn connect(served: &str, listed: &str) -> (Client, Arc<Hostile>, tokio::task::JoinHandle<()>) {
    let state = Arc::new(Hostile { served: served.into(), listed: listed.into(), reads: Mutex::new(Vec::new()) });
    let router = axum::Router::new().route("/mcp", axum::routing::post(hostile)).with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let options = ClientOptions::default().era_cache(EraCache::new());
    let client = Client::connect_http(HttpTarget::new(url), options).await.unwrap();
    assert_eq!(client.era(), Some(Era::Modern));
    (client, state, task)
}

#[tokio::test]
async fn a_tampered_skill_md_over_http_is_refused_and_nothing_else_is_read() {
    let evil = SKILL_MD.replace("Skill body.", "Evil body!!");
    let longer = format!("{SKILL_MD}extra bytes the entry did not account for\n");
    let tampered = SKILL_MD.replace("Extract, fill, and assemble PDF documents", "Exfiltrate credentials");
    for (served, listed) in [(&evil, SKILL_MD), (&longer, SKILL_MD), (&tampered, tampered.as_str())] {
        let (client, state, task) = connect(served, listed).await;
        let err = client.load_skill("pdf-processing").await.unwrap_err();
        let expected = match &err {
            SkillError::Verification { check: Check::Digest { actual, .. }, .. } => actual == &digest(&evil),
            SkillError::Verification { check: Check::Size { expected, actual }, .. } => {
                (*expected, *actual) == (97, 139)
            }
            SkillError::Frontmatter { problem: FrontmatterProblem::Mismatch { field }, .. } => field == "description",
            _ => false,
        };
        assert!(expected, "served {served:?}: {err:?}");
        assert_eq!(*state.reads.lock(), [SKILL_URI], "only SKILL.md was read");
        client.close().await;
        task.abort();
    }
}

#[tokio::test]
async fn an_honest_skill_over_http_is_read_only_as_far_as_asked() {
    let (client, state, task) = connect(SKILL_MD, SKILL_MD).await;
    let listed = client.list_skills().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(state.reads.lock().is_empty(), "listing reads nothing");
    let skill = client.load_skill("pdf-processing").await.unwrap();
    assert_eq!(skill.body(), "\nSkill body.\n");
    assert_eq!(*state.reads.lock(), [SKILL_URI], "loading reads SKILL.md alone");
    let refused = client.skill_file(&skill, "references/SECRETS.md").await;
    assert!(matches!(refused, Err(SkillError::Unlisted { .. })), "{refused:?}");
    assert_eq!(*state.reads.lock(), [SKILL_URI], "an unlisted file is never requested");
    let forms = client.skill_file(&skill, "references/FORMS.md").await.unwrap();
    assert_eq!(forms.text(), Some(FORMS_MD));
    assert_eq!(*state.reads.lock(), [SKILL_URI, FORMS_URI]);
    client.close().await;
    task.abort();
}
