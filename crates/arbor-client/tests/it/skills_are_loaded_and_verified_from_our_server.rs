//! The skills client against our own server (`Router::skills_dir` over the conformance
//! fixture `tests/fixtures/skills`), over Streamable HTTP on loopback and over stdio (a
//! spawned `stdio_test_server --skills DIR`), in both eras (2025-11-25 by `initialize`,
//! 2026-07-28 per request): every skill listed, loaded by name, by skill path and by URI,
//! its front matter and body as on disk, every file read and verified byte for byte
//! against the files on disk, its folders browsed with `resources/directory/read`; unknown
//! skills and unlisted files refused.

use std::path::PathBuf;

use arbor_client::skills::SkillError;
use arbor_client::{Client, ClientOptions, EraCache, EraMode, HttpTarget, StdioCommand};
use arbor_protocol::version::{Era, ProtocolVersion};
use arbor_server::router::Router;
use arbor_server::Server;
use serde_json::json;

use crate::a_stdio_server_is_spawned_and_restarted::server_binary;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/skills")
}

fn on_disk(path: &str) -> Vec<u8> {
    std::fs::read(fixture().join(path)).unwrap()
}

/// Everything a host does with the fixture's skills, checked against the files on disk.
async fn exercise(client: &Client, how: &str) {
    assert!(client.offers_skills(), "{how}");
    let mut listed: Vec<String> = client.list_skills().await.unwrap().into_iter().map(|e| e.uri).collect();
    listed.sort();
    assert_eq!(listed, ["skill://acme/billing/refunds/SKILL.md", "skill://pdf-processing/SKILL.md"], "{how}");

    let skill = client.load_skill("pdf-processing").await.unwrap();
    assert!(skill.is_verified());
    assert_eq!(
        (skill.name(), skill.uri(), skill.root()),
        ("pdf-processing", "skill://pdf-processing/SKILL.md", "skill://pdf-processing")
    );
    assert_eq!(skill.description(), "Extract, fill, and assemble PDF documents");
    assert_eq!(skill.frontmatter()["license"], "Apache-2.0");
    assert_eq!(skill.frontmatter()["metadata"], json!({"author": "arbor", "version": "1.0"}));
    let text = String::from_utf8(on_disk("pdf-processing/SKILL.md")).unwrap();
    assert_eq!(skill.skill_md(), text, "{how}");
    assert!(skill.body().starts_with("\n# PDF processing\n"), "{how}: {:?}", skill.body());
    assert!(text.ends_with(skill.body()));
    let mut files: Vec<(String, Option<u64>)> = skill.files().map(|f| (f.path.to_owned(), f.size)).collect();
    files.sort();
    let expected: Vec<(String, Option<u64>)> = ["SKILL.md", "references/FORMS.md", "templates/invoice.md"]
        .iter()
        .map(|p| (p.to_string(), Some(on_disk(&format!("pdf-processing/{p}")).len() as u64)))
        .collect();
    assert_eq!(files, expected, "{how}");

    // One file on demand, then every file, each verified and equal to the disk's bytes.
    let forms = client.skill_file(&skill, "references/FORMS.md").await.unwrap();
    assert!(forms.verified);
    assert_eq!(
        (forms.uri.as_str(), forms.path.as_str()),
        ("skill://pdf-processing/references/FORMS.md", "references/FORMS.md")
    );
    assert_eq!(forms.bytes, on_disk("pdf-processing/references/FORMS.md"), "{how}");
    let all = client.skill_files(&skill).await.unwrap();
    assert_eq!(all.len(), 2, "{how}: every file but SKILL.md");
    for file in &all {
        assert_eq!(file.bytes, on_disk(&format!("pdf-processing/{}", file.path)), "{how}: {}", file.uri);
    }

    // A nested skill by its name, its skill path and its URI (skills/get).
    for name in ["refunds", "acme/billing/refunds", "skill://acme/billing/refunds/SKILL.md"] {
        let refunds = client.load_skill(name).await.unwrap();
        assert_eq!(refunds.uri(), "skill://acme/billing/refunds/SKILL.md", "{how}: {name}");
        let email = client.skill_file(&refunds, "templates/refund-email.md").await.unwrap();
        assert_eq!(email.bytes, on_disk("acme/billing/refunds/templates/refund-email.md"));
    }

    // Browsing: the server declares directoryRead, so the folders can be walked.
    assert!(client.offers_directory_read(), "{how}");
    let mut children: Vec<(String, Option<String>)> = client
        .read_directory("skill://pdf-processing")
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.uri, r.mime_type))
        .collect();
    children.sort();
    let dir = Some("inode/directory".to_owned());
    assert_eq!(
        children,
        [
            ("skill://pdf-processing/SKILL.md".to_owned(), Some("text/markdown".to_owned())),
            ("skill://pdf-processing/references".to_owned(), dir.clone()),
            ("skill://pdf-processing/templates".to_owned(), dir),
        ],
        "{how}"
    );
    let refs = client.read_directory("skill://pdf-processing/references").await.unwrap();
    assert_eq!(refs.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(), [forms.uri.as_str()], "{how}");

    // What is not a skill, and what the manifest does not list.
    assert!(matches!(client.load_skill("no-such-skill").await, Err(SkillError::NotFound(_))), "{how}");
    let unknown = client.load_skill("skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md").await;
    assert!(matches!(unknown, Err(SkillError::NotFound(_))), "{how}: {unknown:?}");
    for path in ["references/missing.md", "../acme/billing/refunds/SKILL.md", "skill://acme/billing/refunds/SKILL.md"] {
        let refused = client.skill_file(&skill, path).await;
        assert!(matches!(refused, Err(SkillError::Unlisted { .. })), "{how}: {path}: {refused:?}");
    }
}

#[tokio::test]
async fn skills_are_loaded_and_verified_over_http_in_both_eras() {
    let router = Router::new("skills-test", "0.0.1").skills_dir(fixture());
    let config = arbor_http::HttpConfig { bind: "127.0.0.1:0".parse().unwrap(), ..Default::default() };
    let bound = arbor_http::HttpServer::with_config(Server::new(router), config).bind().await.unwrap();
    let url = format!("http://{}/mcp", bound.local_addr());
    let shutdown = bound.shutdown_handle();
    tokio::spawn(bound.run());
    for (mode, era) in [(EraMode::Detect, Era::Modern), (EraMode::ForceLegacy, Era::Legacy)] {
        let options = ClientOptions::default().era(mode).era_cache(EraCache::new());
        let client = Client::connect_http(HttpTarget::new(url.clone()), options).await.unwrap();
        assert_eq!(client.era(), Some(era));
        if era == Era::Legacy {
            assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2025_11_25));
        }
        exercise(&client, &format!("http {era:?}")).await;
        client.close().await;
    }
    shutdown.shutdown();
}

#[tokio::test]
async fn skills_are_loaded_and_verified_over_stdio_in_both_eras() {
    for (mode, era) in [(EraMode::ForceModern, Era::Modern), (EraMode::ForceLegacy, Era::Legacy)] {
        let command = StdioCommand::new(server_binary()).arg("--skills").arg(fixture().display().to_string());
        let options = ClientOptions::default().era(mode).era_cache(EraCache::new());
        let client = Client::connect_stdio(command, options).await.unwrap();
        assert_eq!(client.era(), Some(era));
        exercise(&client, &format!("stdio {era:?}")).await;
        client.close().await;
    }
}
