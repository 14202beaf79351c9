//! Unit and property tests of the bearer header grammars.

use super::*;
use proptest::prelude::*;

fn headers(values: &[&str]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for v in values {
        h.append(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
    }
    h
}

#[test]
fn a_full_challenge_reads_as_rfc_6750_writes_it() {
    let c = Challenge {
        resource_metadata: Some("https://mcp.example/.well-known/oauth-protected-resource/mcp".into()),
        scope: vec!["files:read".into(), "files:write".into()],
        error: Some(BearerError::InsufficientScope),
        error_description: Some("needs \"files:write\"".into()),
    };
    assert_eq!(
        c.to_header_value().to_str().unwrap(),
        "Bearer resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/mcp\", \
         scope=\"files:read files:write\", error=\"insufficient_scope\", error_description=\"needs \\\"files:write\\\"\""
    );
}

#[test]
fn a_challenge_without_parameters_is_the_bare_scheme() {
    assert_eq!(Challenge::default().to_header_value().to_str().unwrap(), "Bearer");
}

#[test]
fn control_characters_and_non_ascii_cannot_split_the_header() {
    let c = Challenge { error_description: Some("a\r\nSet-Cookie: x=1\u{7f}é".into()), ..Default::default() };
    let v = c.to_header_value();
    let text = v.to_str().unwrap();
    assert!(!text.contains('\r') && !text.contains('\n'));
    assert_eq!(text, "Bearer error_description=\"a??Set-Cookie: x=1??\"");
}

#[test]
fn several_challenges_and_token_values_parse() {
    let parsed =
        parse_challenges("Basic realm=\"x\", Bearer error=invalid_token, scope=\"a b\", DPoP algs=\"ES256\"").unwrap();
    let schemes: Vec<_> = parsed.iter().map(|c| c.scheme.as_str()).collect();
    assert_eq!(schemes, ["Basic", "Bearer", "DPoP"]);
    assert_eq!(parsed[1].param("ERROR"), Some("invalid_token"));
    assert_eq!(parsed[1].param("scope"), Some("a b"));
    assert_eq!(parse_challenges("Bearer scope=\"unterminated"), None);
}

#[test]
fn the_bearer_parser_takes_the_token_and_nothing_else() {
    assert_eq!(bearer_token(&headers(&[])), Credentials::None);
    assert_eq!(bearer_token(&headers(&["Basic dXNlcjpwYXNz"])), Credentials::None);
    assert_eq!(bearer_token(&headers(&["Bearer abc.DEF-_~+/=="])), Credentials::Bearer("abc.DEF-_~+/=="));
    assert_eq!(bearer_token(&headers(&["bEaReR   tok"])), Credentials::Bearer("tok"));
    assert!(matches!(bearer_token(&headers(&["Bearer"])), Credentials::Malformed(_)));
    assert!(matches!(bearer_token(&headers(&["Bearer "])), Credentials::Malformed(_)));
    assert!(matches!(bearer_token(&headers(&["Bearer a b"])), Credentials::Malformed(_)));
    assert!(matches!(bearer_token(&headers(&["Bearer a=b"])), Credentials::Malformed(_)));
    assert!(matches!(bearer_token(&headers(&["Bearer ==="])), Credentials::Malformed(_)));
    assert!(matches!(bearer_token(&headers(&["Bearer a", "Bearer b"])), Credentials::Malformed(_)));
}

#[test]
fn a_token_in_the_query_string_is_seen() {
    assert!(token_in_query(Some("access_token=abc")));
    assert!(token_in_query(Some("x=1&access_token")));
    assert!(token_in_query(Some("access%5Ftoken=abc")));
    assert!(!token_in_query(Some("sessionId=1&my_access_token=2")));
    assert!(!token_in_query(None));
}

proptest! {
    /// Whatever text goes into a challenge, the header is valid and reads back the same
    /// parameters (with characters a header cannot carry replaced by `?`).
    #[test]
    fn a_built_challenge_parses_back(url in any::<String>(), scopes in prop::collection::vec("[!-~]{1,12}", 0..4),
                                     description in any::<String>(), error in 0u8..4) {
        let error = [None, Some(BearerError::InvalidRequest), Some(BearerError::InvalidToken),
                     Some(BearerError::InsufficientScope)][error as usize];
        let c = Challenge { resource_metadata: Some(url.clone()), scope: scopes.clone(), error,
                            error_description: Some(description.clone()) };
        let value = c.to_header_value();
        let parsed = parse_challenges(value.to_str().unwrap()).expect("parses");
        prop_assert_eq!(parsed.len(), 1);
        let p = &parsed[0];
        prop_assert_eq!(&p.scheme, "Bearer");
        let clean = |s: &str| s.chars().map(|c| if c == ' ' || c == '\t' || c.is_ascii_graphic() { c } else { '?' })
            .collect::<String>();
        let (url, description) = (clean(&url), clean(&description));
        prop_assert_eq!(p.param("resource_metadata"), Some(url.as_str()));
        prop_assert_eq!(p.param("error_description"), Some(description.as_str()));
        prop_assert_eq!(p.param("error"), error.map(BearerError::as_str));
        let joined = scopes.join(" ");
        prop_assert_eq!(p.param("scope"), (!scopes.is_empty()).then_some(joined.as_str()));
    }

    /// The bearer parser never panics, and accepts exactly `Bearer` + spaces + b64token.
    #[test]
    fn the_bearer_parser_accepts_exactly_b64tokens(scheme in "[bB][eE][aA][rR][eE][rR]|[bB]asic|DPoP", spaces in 1usize..3,
                                                   token in "[ -~]{0,40}") {
        let value = format!("{scheme}{}{token}", " ".repeat(spaces));
        let Ok(v) = HeaderValue::from_str(&value) else { return Ok(()) };
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, v);
        let got = bearer_token(&h);
        let body = token.trim_start_matches(' ');
        let valid = {
            let b = body.trim_end_matches('=');
            !b.is_empty() && b.bytes().all(|c| c.is_ascii_alphanumeric() || b"-._~+/".contains(&c))
        };
        if !scheme.eq_ignore_ascii_case("bearer") {
            prop_assert_eq!(got, Credentials::None);
        } else if valid {
            prop_assert_eq!(got, Credentials::Bearer(body));
        } else {
            prop_assert!(matches!(got, Credentials::Malformed(_)));
        }
    }
}
