//! Resources, templates and subscriptions.

use super::*;
use arbor_protocol::model::resources::{ReadResourceRequestParams, ReadResourceResult, ResourceSubscriptionParams};
use std::collections::HashMap;

async fn read_with(router: &Router, uri: &str, version: ProtocolVersion) -> Result<ReadResourceResult, McpError> {
    let params = ReadResourceRequestParams::new(uri);
    match router.read_resource(params, cx_for(version)).await? {
        Reply::Complete(result) => Ok(result),
        Reply::InputRequired(_) => panic!("input required"),
    }
}

async fn read(router: &Router, uri: &str) -> Result<ReadResourceResult, McpError> {
    read_with(router, uri, ProtocolVersion::V2025_11_25).await
}

#[tokio::test]
async fn static_resources_are_listed_and_read_with_their_uri_and_mime_type() {
    let router = fixture();
    let list = router.list_resources(first_page(), cx()).await.unwrap();
    let uris: Vec<_> = list.resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["test://static/readme", "test://static/bytes"]);
    assert_eq!(list.resources[0].mime_type.as_deref(), Some("text/plain"));

    let text = read(&router, "test://static/readme").await.unwrap();
    match &text.contents[..] {
        [ResourceContents::Text(t)] => {
            assert_eq!(
                (t.uri.as_str(), t.mime_type.as_deref(), t.text.as_str()),
                ("test://static/readme", Some("text/plain"), "hello")
            );
        }
        other => panic!("{other:?}"),
    }
    let bytes = read(&router, "test://static/bytes").await.unwrap();
    match &bytes.contents[..] {
        [ResourceContents::Blob(b)] => assert_eq!(b.blob, "AAEC/w=="),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn templates_are_listed_and_match_with_their_variables() {
    let router = fixture();
    let list = router.list_resource_templates(first_page(), cx()).await.unwrap();
    let templates: Vec<_> = list.resource_templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(templates, ["test://template/{id}/data", "test://names/{name}"]);

    let found = read(&router, "test://template/42/data").await.unwrap();
    assert_eq!(only_text(&found.contents), r#"{"id":42}"#);
    assert_eq!(found.contents[0].uri(), "test://template/42/data");
}

#[tokio::test]
async fn template_values_are_percent_decoded() {
    let found = read(&fixture(), "test://names/caf%C3%A9%20au%2Flait").await.unwrap();
    assert_eq!(only_text(&found.contents), "named café au/lait");
}

#[tokio::test]
async fn uris_no_template_serves_are_not_found_in_the_revisions_form() {
    let router = fixture();
    for uri in [
        "test://template/42/other",  // the literal differs
        "test://template/4/2/data",  // a simple variable never spans `/`
        "test://template//data",     // a variable is never empty
        "test://template/abc/data",  // `abc` is not a u32
        "test://names/a b",          // a raw space is not in a URI
        "test://static/readme/more", // static resources match exactly
    ] {
        let legacy = read(&router, uri).await.unwrap_err();
        assert_eq!(code(&legacy), -32002, "{uri}");
        let modern = read_with(&router, uri, ProtocolVersion::V2026_07_28).await.unwrap_err();
        assert_eq!(code(&modern), -32602, "{uri}");
        assert!(modern.is_resource_not_found());
    }
}

#[tokio::test]
async fn reserved_variables_span_slashes_and_maps_take_any_variables() {
    let router = Router::new("s", "1").resource_template(
        "file:///{+path}",
        "files",
        "",
        "text/plain",
        |vars: HashMap<String, String>| async move { vars["path"].clone() },
    );
    assert_eq!(only_text(&read(&router, "file:///src/lib.rs").await.unwrap().contents), "src/lib.rs");
}

#[tokio::test]
async fn a_reader_returning_none_is_not_found() {
    let router = Router::new("s", "1").resource_template(
        "test://maybe/{name}",
        "m",
        "",
        "text/plain",
        |v: NameVars| async move { (v.name == "yes").then_some("found") },
    );
    assert_eq!(only_text(&read(&router, "test://maybe/yes").await.unwrap().contents), "found");
    assert!(read(&router, "test://maybe/no").await.unwrap_err().is_resource_not_found());
}

#[tokio::test]
async fn subscriptions_are_refused_unless_enabled_and_only_for_known_uris() {
    let params = ResourceSubscriptionParams::new;
    let plain = fixture();
    assert_eq!(code(&plain.subscribe(params("test://static/readme"), cx()).await.unwrap_err()), -32601);
    assert_eq!(plain.capabilities().resources.unwrap().subscribe, None);

    let subscribing = fixture().subscriptions();
    assert_eq!(subscribing.capabilities().resources.unwrap().subscribe, Some(true));
    subscribing.subscribe(params("test://static/readme"), cx()).await.unwrap();
    subscribing.subscribe(params("test://template/7/data"), cx()).await.unwrap();
    let unknown = subscribing.subscribe(params("test://elsewhere"), cx()).await.unwrap_err();
    assert!(unknown.is_resource_not_found());
    subscribing.unsubscribe(params("test://elsewhere"), cx()).await.unwrap();
}

#[test]
#[should_panic(expected = "only {var} and {+var}")]
fn a_template_with_unsupported_expressions_is_refused() {
    let _ = TemplateRoute::new("test://search{?q}", "s", |_: HashMap<String, String>| async { "" });
}
