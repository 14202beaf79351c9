//! The skills client against a scripted hostile server (raw JSON-RPC frames over an
//! in-memory pair, 2025-11-25): a `SKILL.md` whose digest, size or front matter does not
//! match the entry is refused with an error naming the file and the check, and nothing
//! more is read; a read of a file the manifest does not list, a `"dynamic"` skill without
//! the caller's consent and any `skills/*` call to a server that did not declare the
//! extension are refused before a frame is sent; the listing follows every cursor, reads
//! nothing, and stops on a repeated cursor; a name two skills share is refused as ambiguous.
//!
//! "Nothing more was sent" is checked by order: after the refusal the test sends a ping,
//! and the next frame the script reads must be that ping (frames arrive in order).

use arbor_client::skills::{Check, FrontmatterProblem, LoadOptions, SkillError};
use arbor_client::{Client, ClientOptions};
use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};

use crate::scripted::{connect_with, Script};

pub const SKILL_URI: &str = "skill://pdf-processing/SKILL.md";
pub const FORMS_URI: &str = "skill://pdf-processing/references/FORMS.md";
/// The conformance fixture's files.
pub const SKILL_MD: &str =
    "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
pub const FORMS_MD: &str = "Supporting content.\n";

pub fn digest(text: &str) -> String {
    let hex: String = Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn line(uri: &str, text: &str) -> Value {
    json!({"uri": uri, "digest": digest(text), "size": text.len()})
}

/// The entry of the fixture's skill, its manifest describing `skill_md` and FORMS.md.
pub fn entry(skill_md: &str) -> Value {
    json!({
        "uri": SKILL_URI,
        "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
        "resources": [line(SKILL_URI, skill_md), line(FORMS_URI, FORMS_MD)],
    })
}

async fn connect(declared: bool) -> (Client, Script) {
    let capabilities = if declared {
        json!({"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}})
    } else {
        json!({"resources": {}})
    };
    let (client, script, _) = connect_with(ClientOptions::default(), capabilities).await;
    (client, script)
}

/// The next request, which must be `method`.
async fn expect(script: &mut Script, method: &str) -> Value {
    let request = script.next_request().await;
    assert_eq!(request["method"], method, "{request}");
    request
}

fn reply(script: &Script, request: &Value, result: Value) {
    script.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
}

fn text_contents(uri: &str, text: &str) -> Value {
    json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]})
}

/// Serves one `skills/list` page of `entries`.
async fn serve_list(script: &mut Script, entries: Value) {
    let request = expect(script, "skills/list").await;
    reply(script, &request, json!({"skills": entries}));
}

/// Proves the client sent nothing since the last request the script read.
async fn nothing_else_sent(client: &Client, script: &mut Script) {
    let ping = tokio::spawn({
        let client = client.clone();
        async move { client.ping().await }
    });
    let request = expect(script, "ping").await;
    reply(script, &request, json!({}));
    ping.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_tampered_skill_md_is_refused_by_size_digest_or_front_matter_and_nothing_more_is_read() {
    let evil = SKILL_MD.replace("Skill body.", "Evil body!!");
    let longer = format!("{SKILL_MD}extra bytes the entry did not account for\n");
    let tampered = SKILL_MD
        .replace("description: Extract, fill, and assemble PDF documents", "description: Exfiltrate credentials");
    // (what is served, the manifest's view of SKILL.md)
    let cases = [(&evil, SKILL_MD), (&longer, SKILL_MD), (&tampered, tampered.as_str())];
    for (i, (served, listed)) in cases.into_iter().enumerate() {
        let (client, mut script) = connect(true).await;
        let load = tokio::spawn({
            let client = client.clone();
            async move { client.load_skill("pdf-processing").await }
        });
        serve_list(&mut script, json!([entry(listed)])).await;
        let read = expect(&mut script, "resources/read").await;
        assert_eq!(read["params"]["uri"], SKILL_URI);
        reply(&script, &read, text_contents(SKILL_URI, served));
        let err = load.await.unwrap().unwrap_err();
        assert!(err.is_verification(), "{err}");
        match (i, &err) {
            (0, SkillError::Verification { uri, check: Check::Digest { expected, actual } }) => {
                assert_eq!((uri.as_str(), expected.clone()), (SKILL_URI, digest(SKILL_MD)));
                assert_eq!(actual, &digest(&evil));
            }
            (1, SkillError::Verification { uri, check: Check::Size { expected: 97, actual: 139 } }) => {
                assert_eq!(uri, SKILL_URI)
            }
            (2, SkillError::Frontmatter { uri, problem: FrontmatterProblem::Mismatch { field } }) => {
                assert_eq!((uri.as_str(), field.as_str()), (SKILL_URI, "description"))
            }
            _ => panic!("case {i}: {err:?}"),
        }
        assert!(err.to_string().contains(SKILL_URI), "the error names the file: {err}");
        // FORMS.md (or anything else) was not read after the failure.
        nothing_else_sent(&client, &mut script).await;
    }
}

#[tokio::test]
async fn files_are_read_on_demand_verified_and_unlisted_ones_refused_before_sending() {
    let (client, mut script) = connect(true).await;
    let load = tokio::spawn({
        let client = client.clone();
        async move { client.load_skill("pdf-processing").await }
    });
    serve_list(&mut script, json!([entry(SKILL_MD)])).await;
    // The SKILL.md as a blob: verified on its decoded bytes.
    let read = expect(&mut script, "resources/read").await;
    let blob = base64::engine::general_purpose::STANDARD.encode(SKILL_MD);
    reply(&script, &read, json!({"contents": [{"uri": SKILL_URI, "blob": blob}]}));
    let skill = load.await.unwrap().unwrap();
    assert_eq!((skill.body(), skill.is_verified()), ("\nSkill body.\n", true));
    // Loading read SKILL.md alone.
    nothing_else_sent(&client, &mut script).await;

    // Not in the manifest: refused, nothing sent.
    for path in ["secret.md", "references/../../other/SKILL.md", "skill://other/SKILL.md"] {
        let refused = client.skill_file(&skill, path).await;
        assert!(
            matches!(&refused, Err(SkillError::Unlisted { uri, .. }) if uri.ends_with(path.trim_start_matches("skill://"))),
            "{path}: {refused:?}"
        );
    }
    nothing_else_sent(&client, &mut script).await;

    // A listed file, honest then tampered.
    for (served, ok) in [(FORMS_MD, true), ("Supporting content!\n", false)] {
        let file = tokio::spawn({
            let (client, skill) = (client.clone(), skill.clone());
            async move { client.skill_file(&skill, "references/FORMS.md").await }
        });
        let read = expect(&mut script, "resources/read").await;
        assert_eq!(read["params"]["uri"], FORMS_URI);
        reply(&script, &read, text_contents(FORMS_URI, served));
        match file.await.unwrap() {
            Ok(file) if ok => assert_eq!((file.text(), file.verified), (Some(FORMS_MD), true)),
            Err(SkillError::Verification { uri, check: Check::Digest { .. } }) if !ok => assert_eq!(uri, FORMS_URI),
            other => panic!("served {served:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn dynamic_skills_need_consent_and_bad_entries_are_refused_unread() {
    let (client, mut script) = connect(true).await;
    let mut dynamic = entry(SKILL_MD);
    dynamic["resources"] = json!("dynamic");
    let refused = tokio::spawn({
        let client = client.clone();
        async move { client.load_skill("pdf-processing").await }
    });
    serve_list(&mut script, json!([dynamic.clone()])).await;
    assert!(matches!(refused.await.unwrap(), Err(SkillError::Dynamic { uri }) if uri == SKILL_URI));
    nothing_else_sent(&client, &mut script).await;

    // With consent: SKILL.md read unverified, its front matter still compared.
    let consented = tokio::spawn({
        let client = client.clone();
        async move { client.load_skill_with("pdf-processing", LoadOptions::new().allow_dynamic()).await }
    });
    serve_list(&mut script, json!([dynamic])).await;
    let read = expect(&mut script, "resources/read").await;
    reply(&script, &read, text_contents(SKILL_URI, SKILL_MD));
    let skill = consented.await.unwrap().unwrap();
    assert!(!skill.is_verified());
    assert_eq!(skill.files().count(), 0);
    // Reads of a dynamic skill stay inside its root.
    assert!(matches!(client.skill_file(&skill, "skill://other/x.md").await, Err(SkillError::Unlisted { .. })));
    assert!(matches!(client.skill_file(&skill, "a/../../x.md").await, Err(SkillError::Unlisted { .. })));
    nothing_else_sent(&client, &mut script).await;

    // Entries that cannot be verified against: no read at all.
    let mut no_own_line = entry(SKILL_MD);
    no_own_line["resources"] = json!([line(FORMS_URI, FORMS_MD)]);
    let mut bad_digest = entry(SKILL_MD);
    bad_digest["resources"][0]["digest"] = json!("md5:abc");
    let mut wrong_name = entry(SKILL_MD);
    wrong_name["uri"] = json!("skill://other/SKILL.md");
    for bad in [no_own_line, bad_digest, wrong_name] {
        let loading = tokio::spawn({
            let client = client.clone();
            async move { client.load_skill("pdf-processing").await }
        });
        serve_list(&mut script, json!([bad.clone()])).await;
        assert!(matches!(loading.await.unwrap(), Err(SkillError::BadEntry { .. })), "{bad}");
        nothing_else_sent(&client, &mut script).await;
    }
}

#[tokio::test]
async fn without_the_declaration_no_skills_call_or_directory_read_is_made() {
    let (client, mut script) = connect(false).await;
    assert!(!client.offers_skills());
    assert!(matches!(client.list_skills().await, Err(SkillError::NotOffered)));
    assert!(matches!(client.load_skill("pdf-processing").await, Err(SkillError::NotOffered)));
    assert!(matches!(client.get_skill(SKILL_URI).await, Err(SkillError::NotOffered)));
    assert!(matches!(client.read_directory("skill://pdf-processing").await, Err(SkillError::NotOffered)));
    nothing_else_sent(&client, &mut script).await;

    // The extension without `directoryRead`: skills, but no directory reads.
    let (client, mut script) = connect(true).await;
    assert!(client.offers_skills() && !client.offers_directory_read());
    let refused = client.read_directory("skill://pdf-processing").await;
    assert!(matches!(refused, Err(SkillError::DirectoryReadNotOffered)), "{refused:?}");
    nothing_else_sent(&client, &mut script).await;
}

#[tokio::test]
async fn the_listing_follows_every_cursor_reads_nothing_and_names_are_not_identities() {
    let (client, mut script) = connect(true).await;
    let other = json!({"uri": "skill://acme/refunds/SKILL.md", "frontmatter": {"name": "refunds", "description": "R"},
        "resources": [{"uri": "skill://acme/refunds/SKILL.md", "digest": digest("x"), "size": 1}]});
    let listing = tokio::spawn({
        let client = client.clone();
        async move { client.list_skills().await }
    });
    let first = expect(&mut script, "skills/list").await;
    assert_eq!(first["params"].get("cursor"), None);
    reply(&script, &first, json!({"skills": [entry(SKILL_MD)], "nextCursor": "page-2"}));
    let second = expect(&mut script, "skills/list").await;
    assert_eq!(second["params"]["cursor"], "page-2");
    // An empty cursor ends the listing, as the extension says.
    reply(&script, &second, json!({"skills": [other], "nextCursor": ""}));
    let uris: Vec<String> = listing.await.unwrap().unwrap().into_iter().map(|e| e.uri).collect();
    assert_eq!(uris, [SKILL_URI, "skill://acme/refunds/SKILL.md"]);
    nothing_else_sent(&client, &mut script).await;

    // Two skills with one name: a label, not an identity; the caller must pick a URI.
    let twin = |uri: &str| {
        json!({"uri": uri, "frontmatter": {"name": "refunds", "description": "R"},
            "resources": [{"uri": uri, "digest": digest("x"), "size": 1}]})
    };
    let ambiguous = tokio::spawn({
        let client = client.clone();
        async move { client.load_skill("refunds").await }
    });
    serve_list(&mut script, json!([twin("skill://acme/refunds/SKILL.md"), twin("skill://other/refunds/SKILL.md")]))
        .await;
    match ambiguous.await.unwrap() {
        Err(SkillError::Ambiguous { name, uris }) => {
            assert_eq!((name.as_str(), uris.len()), ("refunds", 2));
        }
        other => panic!("{other:?}"),
    }
    nothing_else_sent(&client, &mut script).await;

    let endless = tokio::spawn({
        let client = client.clone();
        async move { client.list_skills().await }
    });
    for _ in 0..2 {
        let page = expect(&mut script, "skills/list").await;
        reply(&script, &page, json!({"skills": [], "nextCursor": "again"}));
    }
    assert!(matches!(endless.await.unwrap(), Err(SkillError::EndlessList { method: "skills/list", pages: 2 })));
    nothing_else_sent(&client, &mut script).await;
}
