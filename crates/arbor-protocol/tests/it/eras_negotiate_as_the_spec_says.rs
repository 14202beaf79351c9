//! The handshake era answers `initialize` as the spec says, the per-request era
//! checks each request's `_meta` in the spec's order with the spec's codes, and
//! the feature table has the spec's rows.

use arbor_protocol::era::per_request::{decode_header_value, require, stamp};
use arbor_protocol::era::{
    arrival, Arrival, ClientNeed, Handshake, HttpHeaders, PerRequest, SupportedVersions, Transport,
};
use arbor_protocol::error::{ErrorCode, McpError};
use arbor_protocol::jsonrpc::{Batching, RequestId};
use arbor_protocol::meta::Meta;
use arbor_protocol::model::capabilities::ClientCapabilities;
use arbor_protocol::model::logging::LoggingLevel;
use arbor_protocol::version::{Era, Feature, ProtocolVersion as V};
use proptest::prelude::*;
use serde_json::{json, Value};

fn meta(value: Value) -> Meta {
    serde_json::from_value(value).unwrap()
}

fn modern_meta() -> Meta {
    meta(json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }))
}

const HTTP_OK: Transport<'static> =
    Transport::Http(HttpHeaders { protocol_version: Some("2026-07-28"), method: None, name: None });

// ---- handshake era ----

#[test]
fn initialize_echoes_a_supported_version_and_otherwise_answers_the_newest_legacy_one() {
    let h = Handshake::default();
    for v in [V::V2024_11_05, V::V2025_03_26, V::V2025_06_18, V::V2025_11_25] {
        assert_eq!(h.answer(v.as_str()), Ok(v));
    }
    assert_eq!(h.answer("2099-01-01"), Ok(V::V2025_11_25));
    assert_eq!(h.answer(""), Ok(V::V2025_11_25));
    // The modern revision is never negotiated by handshake.
    assert_eq!(h.answer("2026-07-28"), Ok(V::V2025_11_25));

    let older = Handshake::new(SupportedVersions::new([V::V2024_11_05, V::V2025_03_26]));
    assert_eq!(older.answer("2025-11-25"), Ok(V::V2025_03_26));
    assert_eq!(older.answer("2024-11-05"), Ok(V::V2024_11_05));
}

#[test]
fn a_modern_only_server_refuses_initialize_listing_what_it_speaks() {
    let h = Handshake::new(SupportedVersions::new([V::V2026_07_28]));
    let err = h.answer("2025-11-25").unwrap_err();
    assert_eq!(err.code(), ErrorCode::MethodNotFound);
    let McpError::MethodNotFound { data, .. } = err else { panic!() };
    assert_eq!(data, Some(json!({"supported": ["2026-07-28"]})));
}

#[test]
fn a_client_refuses_an_answer_it_cannot_speak() {
    let client = Handshake::new(SupportedVersions::new([V::V2025_06_18, V::V2025_11_25]));
    assert_eq!(client.accept("2025-06-18"), Ok(V::V2025_06_18));
    let err = client.accept("2024-11-05").unwrap_err();
    assert_eq!(err, McpError::unsupported_version(["2025-11-25", "2025-06-18"], "2024-11-05"));
    assert!(client.accept("2026-07-28").is_err());
}

#[test]
fn a_session_lends_its_terms_to_every_request() {
    let h = Handshake::default();
    let caps: ClientCapabilities = serde_json::from_value(json!({"roots": {"listChanged": true}})).unwrap();
    let mut session = h.open(V::V2025_06_18, &caps).unwrap();
    let terms = session.terms(None);
    assert_eq!((terms.version(), terms.era()), (V::V2025_06_18, Era::Legacy));
    assert!(terms.may_log(), "a legacy server logs at its default level until told otherwise");
    assert_eq!(terms.log_level(), None);
    assert!(terms.declares(&ClientNeed::Roots));

    session.set_log_level(LoggingLevel::Warning);
    let terms = session.terms(Some(&meta(json!({"progressToken": 9}))));
    assert_eq!(terms.log_level(), Some(LoggingLevel::Warning));
    assert_eq!(terms.typed_client_capabilities(), caps);
    assert_eq!(terms.progress_token(), Some(&RequestId::from(9)));
    assert!(h.open(V::V2026_07_28, &ClientCapabilities::default()).is_err());

    assert!(session.check_version_header(None).is_ok());
    assert!(session.check_version_header(Some("2025-06-18")).is_ok());
    assert_eq!(session.check_version_header(Some("2025-11-25")).unwrap_err().code(), ErrorCode::InvalidRequest);
}

// ---- per-request era ----

#[test]
fn a_well_formed_modern_request_yields_its_own_terms() {
    let p = PerRequest::default();
    let mut m = modern_meta();
    m.set_progress_token(&"p-1".into());
    for transport in [Transport::Stdio, HTTP_OK] {
        let terms = p.terms(Some(&m), transport).unwrap();
        assert_eq!((terms.version(), terms.era()), (V::V2026_07_28, Era::Modern));
        assert!(terms.declares(&ClientNeed::Elicitation));
        assert!(!terms.may_log(), "no logLevel, no log messages");
        assert_eq!(terms.progress_token(), Some(&"p-1".into()));
    }
    m.set_log_level(LoggingLevel::Info);
    let terms = p.terms(Some(&m), Transport::Stdio).unwrap();
    assert!(terms.may_log());
    assert_eq!(terms.log_level(), Some(LoggingLevel::Info));
}

#[test]
fn what_a_client_stamps_a_server_accepts() {
    let caps: ClientCapabilities = serde_json::from_value(json!({"sampling": {"tools": {}}})).unwrap();
    let mut m = meta(json!({"progressToken": "t", "com.example/k": 1}));
    stamp(&mut m, V::V2026_07_28, &caps, Some(LoggingLevel::Error));
    let terms = PerRequest::default().terms(Some(&m), HTTP_OK).unwrap();
    assert_eq!(terms.typed_client_capabilities(), caps);
    assert!(terms.declares(&ClientNeed::SamplingTools));
    assert_eq!(terms.log_level(), Some(LoggingLevel::Error));
    assert_eq!(m.get("com.example/k"), Some(&json!(1)));
}

#[test]
fn missing_terms_are_invalid_params() {
    let p = PerRequest::default();
    assert_eq!(p.terms(None, Transport::Stdio).unwrap_err().code(), ErrorCode::InvalidParams);
    let no_version = meta(json!({"io.modelcontextprotocol/clientCapabilities": {}}));
    assert_eq!(p.terms(Some(&no_version), Transport::Stdio).unwrap_err().code(), ErrorCode::InvalidParams);
    let no_caps = meta(json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}));
    assert_eq!(p.terms(Some(&no_caps), Transport::Stdio).unwrap_err().code(), ErrorCode::InvalidParams);
    let bad_caps = meta(json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                               "io.modelcontextprotocol/clientCapabilities": []}));
    assert_eq!(p.terms(Some(&bad_caps), Transport::Stdio).unwrap_err().code(), ErrorCode::InvalidParams);
    let number_version = meta(json!({"io.modelcontextprotocol/protocolVersion": 2026,
                                     "io.modelcontextprotocol/clientCapabilities": {}}));
    assert_eq!(p.terms(Some(&number_version), Transport::Stdio).unwrap_err().code(), ErrorCode::InvalidParams);
}

#[test]
fn an_unsupported_version_is_32022_listing_every_supported_version() {
    let p = PerRequest::default();
    for requested in ["1900-01-01", "draft", "2025-11-25"] {
        let mut m = modern_meta();
        m.insert("io.modelcontextprotocol/protocolVersion", json!(requested));
        let err = p.terms(Some(&m), Transport::Stdio).unwrap_err();
        assert_eq!(
            serde_json::to_value(err.to_error_object()).unwrap(),
            json!({"code": -32022, "message": "Unsupported protocol version",
                   "data": {"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
                            "requested": requested}})
        );
    }
    // A server that speaks only legacy versions has no per-request version at all.
    let legacy_only = PerRequest::new(SupportedVersions::new([V::V2025_11_25]));
    assert_eq!(
        legacy_only.terms(Some(&modern_meta()), Transport::Stdio).unwrap_err().code(),
        ErrorCode::UnsupportedProtocolVersion
    );
}

#[test]
fn the_http_version_header_must_be_there_and_equal_meta() {
    let p = PerRequest::default();
    let m = modern_meta();
    let missing = Transport::Http(HttpHeaders::default());
    assert_eq!(p.terms(Some(&m), missing).unwrap_err().code(), ErrorCode::HeaderMismatch);
    let other = Transport::Http(HttpHeaders { protocol_version: Some("2025-11-25"), ..HttpHeaders::default() });
    assert_eq!(p.terms(Some(&m), other).unwrap_err().code(), ErrorCode::HeaderMismatch);
    // Agreement is checked before support: an unknown version sent consistently
    // is -32022, an inconsistent one is -32020.
    let mut future = modern_meta();
    future.insert("io.modelcontextprotocol/protocolVersion", json!("2099-01-01"));
    let same = Transport::Http(HttpHeaders { protocol_version: Some("2099-01-01"), ..HttpHeaders::default() });
    assert_eq!(p.terms(Some(&future), same).unwrap_err().code(), ErrorCode::UnsupportedProtocolVersion);
    assert_eq!(p.terms(Some(&future), HTTP_OK).unwrap_err().code(), ErrorCode::HeaderMismatch);
}

#[test]
fn malformed_optional_terms_are_invalid_params() {
    let p = PerRequest::default();
    for (key, value) in [
        ("io.modelcontextprotocol/logLevel", json!("verbose")),
        ("io.modelcontextprotocol/logLevel", json!(3)),
        ("progressToken", json!(1.5)),
        ("progressToken", json!(null)),
        ("io.modelcontextprotocol/clientCapabilities", json!({"elicitation": 5})),
    ] {
        let mut m = modern_meta();
        m.insert(key, value);
        assert_eq!(p.terms(Some(&m), Transport::Stdio).unwrap_err().code(), ErrorCode::InvalidParams, "{key}");
    }
}

#[test]
fn method_and_name_headers_must_match_the_body_after_decoding() {
    let p = PerRequest::default();
    let h = |method, name| HttpHeaders { protocol_version: Some("2026-07-28"), method, name };
    assert!(p.check_method_headers(&h(Some("tools/call"), Some("add")), "tools/call", Some("add")).is_ok());
    assert!(p.check_method_headers(&h(Some("tools/list"), None), "tools/list", None).is_ok());
    // "café" in the base64 sentinel form.
    assert!(p
        .check_method_headers(&h(Some("tools/call"), Some("=?base64?Y2Fmw6k=?=")), "tools/call", Some("café"))
        .is_ok());
    for (headers, method, name) in [
        (h(None, None), "tools/list", None),
        (h(Some("tools/list"), None), "tools/call", Some("add")),
        (h(Some("tools/call"), Some("foo")), "tools/call", Some("bar")),
        (h(Some("tools/call"), Some("=?base64?!!!?=")), "tools/call", Some("bar")),
        (h(Some("tools/call"), Some("caf\u{e9}")), "tools/call", Some("caf\u{e9}")),
    ] {
        let err = p.check_method_headers(&headers, method, name).unwrap_err();
        assert_eq!(err.code(), ErrorCode::HeaderMismatch, "{headers:?}");
    }
    assert_eq!(decode_header_value("=?base64?IGxlYWRpbmc=?=").as_deref(), Some(" leading"));
    assert_eq!(decode_header_value("=?base64??=").as_deref(), Some(""));
    assert_eq!(decode_header_value("plain value").as_deref(), Some("plain value"));
}

#[test]
fn a_missing_client_capability_is_32021_naming_all_that_is_missing() {
    let terms = PerRequest::default().terms(Some(&modern_meta()), Transport::Stdio).unwrap();
    assert!(require(&terms, &[ClientNeed::Elicitation]).is_ok());
    let err = require(
        &terms,
        &[
            ClientNeed::Elicitation,
            ClientNeed::UrlElicitation,
            ClientNeed::SamplingTools,
            ClientNeed::Extension("io.modelcontextprotocol/tasks".into()),
        ],
    )
    .unwrap_err();
    assert_eq!(
        serde_json::to_value(err.to_error_object()).unwrap(),
        json!({"code": -32021, "message": "Missing required client capability",
               "data": {"requiredCapabilities": {
                   "elicitation": {"url": {}},
                   "sampling": {"tools": {}},
                   "extensions": {"io.modelcontextprotocol/tasks": {}}}}})
    );
}

#[test]
fn elicitation_modes_follow_the_bare_object_rule() {
    let caps = |v: Value| v.as_object().unwrap().clone();
    let bare = caps(json!({"elicitation": {}}));
    let url_only = caps(json!({"elicitation": {"url": {}}}));
    let both = caps(json!({"elicitation": {"form": {}, "url": {}}}));
    assert!(ClientNeed::Elicitation.declared_in(&bare) && !ClientNeed::UrlElicitation.declared_in(&bare));
    assert!(!ClientNeed::Elicitation.declared_in(&url_only) && ClientNeed::UrlElicitation.declared_in(&url_only));
    assert!(ClientNeed::Elicitation.declared_in(&both) && ClientNeed::UrlElicitation.declared_in(&both));
    assert!(!ClientNeed::Sampling.declared_in(&bare));
}

#[test]
fn arrivals_are_told_apart_by_meta_then_by_initialize() {
    let modern = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    assert_eq!(arrival("tools/list", Some(&modern)), Arrival::PerRequest);
    assert_eq!(arrival("initialize", Some(&modern)), Arrival::PerRequest);
    let caps_only = json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}});
    assert_eq!(arrival("tools/list", Some(&caps_only)), Arrival::PerRequest);
    assert_eq!(arrival("initialize", Some(&json!({"protocolVersion": "2025-11-25"}))), Arrival::OpensHandshake);
    assert_eq!(arrival("tools/list", Some(&json!({"_meta": {"progressToken": 1}}))), Arrival::Unmarked);
    assert_eq!(arrival("tools/list", None), Arrival::Unmarked);
}

// ---- feature table ----

fn having(feature: Feature) -> Vec<&'static str> {
    V::ALL.into_iter().filter(|v| v.supports(feature)).map(V::as_str).collect()
}

#[test]
fn the_feature_table_has_the_spec_rows() {
    assert_eq!(having(Feature::Batching), ["2025-03-26"]);
    assert_eq!(V::V2025_03_26.batching(), Batching::Allowed);
    for v in [V::V2024_11_05, V::V2025_06_18, V::V2025_11_25, V::V2026_07_28] {
        assert_eq!(Batching::for_version(v), Batching::Refused);
    }
    let from_25_03 = ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];
    for f in [Feature::AudioContent, Feature::ToolAnnotations, Feature::CompletionsCapability, Feature::ProgressMessage]
    {
        assert_eq!(having(f), from_25_03, "{f:?}");
    }
    for f in [
        Feature::StructuredToolOutput,
        Feature::Elicitation,
        Feature::ResourceLinks,
        Feature::Titles,
        Feature::ProtocolVersionHeader,
    ] {
        assert_eq!(having(f), ["2025-06-18", "2025-11-25", "2026-07-28"], "{f:?}");
    }
    for f in [Feature::Icons, Feature::UrlElicitation, Feature::SamplingTools, Feature::EnumSchemaForms] {
        assert_eq!(having(f), ["2025-11-25", "2026-07-28"], "{f:?}");
    }
    for f in [Feature::CoreTasks, Feature::SsePolling, Feature::UrlElicitationCompletion] {
        assert_eq!(having(f), ["2025-11-25"], "{f:?}");
    }
    for f in [
        Feature::ServerDiscover,
        Feature::SubscriptionsListen,
        Feature::InputRequired,
        Feature::ResultType,
        Feature::Caching,
        Feature::MethodHeaders,
        Feature::Extensions,
        Feature::ModernErrorCodes,
    ] {
        assert_eq!(having(f), ["2026-07-28"], "{f:?}");
    }
}

#[test]
fn handshake_machinery_exists_exactly_in_the_legacy_era() {
    for v in V::ALL {
        let legacy = v.era() == Era::Legacy;
        for f in [
            Feature::InitializeHandshake,
            Feature::Ping,
            Feature::SetLogLevel,
            Feature::ResourceSubscribe,
            Feature::ServerToClientRequests,
            Feature::ResourceNotFoundCode,
        ] {
            assert_eq!(v.supports(f), legacy, "{v} {f:?}");
        }
        assert_eq!(v.supports(Feature::PerRequestMeta), !legacy, "{v}");
    }
    assert_eq!(V::LATEST_LEGACY.era(), Era::Legacy);
    assert_eq!(V::LATEST.era(), Era::Modern);
}

proptest! {
    #[test]
    fn initialize_always_answers_a_supported_legacy_version(
        requested in prop_oneof![any::<String>(), prop::sample::select(V::ALL.map(V::as_str).to_vec()).prop_map(String::from)],
        subset in prop::sample::subsequence(V::ALL.to_vec(), 1..=5),
    ) {
        let supported = SupportedVersions::new(subset.clone());
        let h = Handshake::new(supported.clone());
        match h.answer(&requested) {
            Ok(v) => {
                prop_assert!(subset.contains(&v) && v.era() == Era::Legacy);
                let requested_ok = V::parse(&requested).filter(|r| subset.contains(r) && r.era() == Era::Legacy);
                prop_assert_eq!(v, requested_ok.unwrap_or_else(|| V::newest(supported.of_era(Era::Legacy)).unwrap()));
            }
            Err(e) => {
                prop_assert_eq!(e.code(), ErrorCode::MethodNotFound);
                prop_assert!(subset.iter().all(|v| v.era() == Era::Modern));
            }
        }
    }

    #[test]
    fn any_version_string_in_meta_is_served_or_refused_with_32022(requested in any::<String>()) {
        let mut m = modern_meta();
        m.insert("io.modelcontextprotocol/protocolVersion", json!(requested));
        match PerRequest::default().terms(Some(&m), Transport::Stdio) {
            Ok(t) => prop_assert_eq!(t.version().as_str(), requested.as_str()),
            // The refusal echoes what was asked through the one clamp for reflected text.
            Err(McpError::UnsupportedProtocolVersion { requested: echoed, .. }) => {
                prop_assert_eq!(echoed, arbor_protocol::reflect::clamp(&requested).into_owned())
            }
            Err(other) => return Err(TestCaseError::fail(format!("unexpected {other:?}"))),
        }
    }
}
