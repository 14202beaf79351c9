//! The protected resource metadata document (RFC 9728) and where it is served.
//!
//! A client that got a 401 reads this document to learn which authorization server
//! issues tokens for this resource. It is served unauthenticated, to any origin, at
//! `/.well-known/oauth-protected-resource` followed by the endpoint's path (RFC 9728
//! §3.1) and at the bare well-known path (the root fallback MCP clients try next).
//! Invariant: `resource` is the configured identifier verbatim (clients compare it as a
//! string with the URL they used), never a URL re-serialised by a parser.

use axum::body::Body;
use axum::http::{header, HeaderValue, Method, Response, StatusCode};
use bytes::Bytes;
use serde::Serialize;

use super::AuthConfig;

/// The well-known prefix of RFC 9728.
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The document's members this server fills in.
#[derive(Serialize)]
struct Document<'a> {
    resource: &'a str,
    authorization_servers: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    scopes_supported: &'a [String],
    bearer_methods_supported: [&'static str; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_documentation: Option<&'a str>,
}

/// The document's bytes, made once when the server is built.
pub(crate) fn document(config: &AuthConfig) -> Vec<u8> {
    let doc = Document {
        resource: &config.resource,
        authorization_servers: &config.authorization_servers,
        scopes_supported: config.advertised_scopes(),
        bearer_methods_supported: ["header"],
        resource_name: config.resource_name.as_deref(),
        resource_documentation: config.resource_documentation.as_deref(),
    };
    serde_json::to_vec(&doc).expect("the metadata document serialises")
}

/// The two paths the document is served at for an endpoint at `path` (`/mcp`).
pub(crate) fn paths(path: &str) -> [String; 2] {
    let suffix = if path == "/" { "" } else { path };
    [format!("{WELL_KNOWN}{suffix}"), WELL_KNOWN.to_owned()]
}

/// The answer to a request for the document: GET and HEAD get it, OPTIONS the CORS
/// preflight, anything else 405. CORS is open whatever the endpoint's own policy: the
/// document is public and browser clients must read it cross-origin.
pub(crate) fn answer(method: &Method, document: &Bytes) -> Response<Body> {
    let mut response = match *method {
        Method::GET | Method::HEAD => {
            let mut r =
                Response::new(if *method == Method::GET { Body::from(document.clone()) } else { Body::empty() });
            r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("max-age=300"));
            r
        }
        Method::OPTIONS => {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::NO_CONTENT;
            r.headers_mut()
                .insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, HEAD, OPTIONS"));
            r.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("*"));
            r.headers_mut().insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("86400"));
            r
        }
        _ => {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
            r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD, OPTIONS"));
            r
        }
    };
    response.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    response
}
