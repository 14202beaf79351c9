//! Hardening: the checks every request passes before any MCP code sees it (`Host`,
//! `Origin`, each identity header at most once, `Accept`, `Content-Type`, body size, JSON
//! nesting depth), and the one way an HTTP-level refusal is written (status plus a
//! JSON-RPC error body).
//!
//! It is not authentication (put an auth layer in front, or use the tenant hook) and not
//! the 2026-07-28 header rules (those are `arbor_protocol::era::http`, applied by the
//! modern path after parsing).
//!
//! Invariant: a refused request costs only itself: the checks read the request head and
//! the body bytes, touch no shared state, and answer with the status the spec names.

use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use arbor_protocol::error::McpError;
use arbor_protocol::jsonrpc::RequestId;
use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{header, Extensions, HeaderMap, HeaderValue, Response, StatusCode};

use crate::config::HttpConfig;
use crate::head::Known;

/// Headers a request may carry at most once. hyper passes repeated headers through and
/// `HeaderMap::get` reads the first, so a checked `Host: localhost` followed by
/// `Host: evil.example` would let whatever reads the last one (a proxy, a tenant hook, a
/// log) see another request than the one checked; the same goes for the origin, the
/// session, the revision and the 2026-07-28 routing headers. Refused 400, not merged.
const SINGLE_HEADERS: [&str; 7] =
    ["Host", "Origin", "Mcp-Session-Id", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name", "Last-Event-ID"];

/// Loopback names accepted by default (compared without the port, lowercased).
const LOOPBACK_NAMES: [&str; 4] = ["localhost", "127.0.0.1", "[::1]", "::1"];

/// Which `Host` values are accepted.
#[derive(Clone, Debug)]
pub(crate) enum HostPolicy {
    /// No check (reached at a non-loopback address and no list given).
    Any,
    /// The loopback names, any port (reached at a loopback address, or nothing known).
    Loopback,
    /// Lowercased names, each with an optional required port.
    List(Vec<(String, Option<u16>)>),
}

impl HostPolicy {
    /// The policy for an endpoint reached at `addr` when no names are listed: loopback
    /// names for a loopback address (what DNS rebinding aims at), no check otherwise.
    pub(crate) fn reached_at(addr: SocketAddr) -> HostPolicy {
        if addr.ip().is_loopback() {
            HostPolicy::Loopback
        } else {
            HostPolicy::Any
        }
    }
}

/// The address of the listener a request came in on, stamped on each request by
/// [`crate::serve`]; a mounted router without `allowed_hosts` or `mounted_at` derives its
/// `Host` policy from it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ListenerAddr(pub(crate) SocketAddr);

/// The request checks, prepared once.
#[derive(Debug)]
pub(crate) struct Guard {
    /// From `allowed_hosts` or `mounted_at`: wins over everything else.
    configured: Option<HostPolicy>,
    /// From the address `HttpServer::bind` listens on, once bound.
    bound: OnceLock<HostPolicy>,
    /// A mounted router with nothing to go on refused a `Host`: said once in the log.
    hinted: AtomicBool,
    origins: Vec<String>,
    /// CORS with an empty origin list: any origin is welcome.
    any_origin: bool,
    pub(crate) max_body: usize,
    pub(crate) max_depth: usize,
}

impl Guard {
    pub(crate) fn new(config: &HttpConfig) -> Guard {
        let configured = match (&config.allowed_hosts, config.mounted_at) {
            (Some(list), _) => {
                Some(HostPolicy::List(list.iter().map(|h| split_host(&h.to_ascii_lowercase())).collect()))
            }
            (None, Some(addr)) => Some(HostPolicy::reached_at(addr)),
            (None, None) => None,
        };
        let mut origins = config.allowed_origins.clone();
        let mut any_origin = false;
        if let Some(cors) = &config.cors {
            any_origin = cors.allow_origins.is_empty();
            origins.extend(cors.allow_origins.iter().cloned());
        }
        Guard {
            configured,
            bound: OnceLock::new(),
            hinted: AtomicBool::new(false),
            origins,
            any_origin,
            max_body: config.max_body_bytes,
            max_depth: config.max_json_depth,
        }
    }

    /// `HttpServer::bind` listens on `addr`: requests it serves (and a mounted router that
    /// knows no better) are checked as reached there.
    pub(crate) fn set_bound(&self, addr: SocketAddr) {
        let _ = self.bound.set(HostPolicy::reached_at(addr));
    }

    /// The `Host` policy for one request: `allowed_hosts` or `mounted_at` when set; else the
    /// address of the listener [`crate::serve`] took it from; else the address
    /// `HttpServer::bind` listens on; else (a router mounted in a server that says nothing)
    /// the loopback names, the safe choice.
    fn host_policy<'a>(&'a self, extensions: &Extensions) -> (&'a HostPolicy, bool) {
        if let Some(policy) = &self.configured {
            return (policy, false);
        }
        if let Some(ListenerAddr(addr)) = extensions.get::<ListenerAddr>() {
            let policy = if addr.ip().is_loopback() { &HostPolicy::Loopback } else { &HostPolicy::Any };
            return (policy, false);
        }
        match self.bound.get() {
            Some(policy) => (policy, false),
            None => (&HostPolicy::Loopback, true),
        }
    }

    /// `Host` and `Origin`: 403 with a JSON-RPC error when either is foreign; before that,
    /// 400 when one of the headers that say whom a request is for comes twice (see
    /// [`SINGLE_HEADERS`]).
    pub(crate) fn check_origin_and_host(&self, parts: &Parts) -> Result<(), Box<Response<Body>>> {
        let (host, origin) = (parts.headers.get(header::HOST), parts.headers.get(header::ORIGIN));
        self.check_origin_and_host_of(parts, host, origin)
    }

    /// [`Guard::check_origin_and_host`] for a head whose `Host` and `Origin` were found
    /// already.
    pub(crate) fn check_head(&self, parts: &Parts, known: &Known<'_>) -> Result<(), Box<Response<Body>>> {
        self.check_origin_and_host_of(parts, known.host, known.origin)
    }

    /// [`Guard::check_origin_and_host`], given the first `Host` and `Origin` of `parts`.
    fn check_origin_and_host_of(
        &self,
        parts: &Parts,
        host: Option<&HeaderValue>,
        origin: Option<&HeaderValue>,
    ) -> Result<(), Box<Response<Body>>> {
        let headers = &parts.headers;
        // A request with no repeated header at all (nearly every one) has as many values as
        // names: then no lookup is needed (each would parse and hash a name: about 3k
        // instructions per request for the seven). `HeaderMap` looks names up
        // case-insensitively, so the spelling is only for the message.
        let repeats = headers.len() != headers.keys_len();
        if let Some(name) =
            SINGLE_HEADERS.iter().filter(|_| repeats).find(|name| headers.get_all(**name).iter().nth(1).is_some())
        {
            let err =
                McpError::InvalidRequest { message: format!("Bad Request: more than one {name} header"), data: None };
            return Err(Box::new(reject(StatusCode::BAD_REQUEST, &err, None)));
        }
        let (policy, guessed) = self.host_policy(&parts.extensions);
        let ok = match (policy, host.map(|v| v.to_str())) {
            (HostPolicy::Any, _) => true,
            (HostPolicy::Loopback, Some(Ok(host))) => {
                let (name, _) = split_host_text(host);
                LOOPBACK_NAMES.iter().any(|n| n.eq_ignore_ascii_case(name))
            }
            (HostPolicy::List(allowed), Some(Ok(host))) => {
                let (name, port) = split_host_ref(host);
                allowed.iter().any(|(n, p)| n.eq_ignore_ascii_case(name) && (p.is_none() || *p == port))
            }
            // HTTP/2 carries the authority instead of `Host`; hyper maps it to the URI,
            // and a request with neither has no name to rebind.
            (_, None) => true,
            (_, Some(Err(_))) => false,
        };
        if !ok {
            if guessed && !self.hinted.swap(true, Ordering::Relaxed) {
                // The name itself is the client's text: not logged.
                tracing::warn!(
                    "a Host header that is not a loopback name was refused (403) by a mounted MCP router that \
                     does not know where it is reached: set HttpConfig::mounted_at or allowed_hosts, or serve \
                     the app with arbor_http::serve"
                );
            }
            return Err(Box::new(reject(StatusCode::FORBIDDEN, &forbidden("Host header is not allowed"), None)));
        }
        if let Some(origin) = origin {
            if !self.origin_allowed(origin) {
                return Err(Box::new(reject(StatusCode::FORBIDDEN, &forbidden("Origin is not allowed"), None)));
            }
        }
        Ok(())
    }

    fn origin_allowed(&self, origin: &HeaderValue) -> bool {
        if self.any_origin {
            return true;
        }
        let Ok(origin) = origin.to_str() else { return false };
        if self.origins.iter().any(|o| o == origin) {
            return true;
        }
        // A page served from this machine (any port) is local; anything else, including
        // the opaque `null` origin, must be listed.
        let rest = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
        match rest {
            Some(authority) if !authority.contains('/') => {
                let (name, _) = split_host(&authority.to_ascii_lowercase());
                LOOPBACK_NAMES.contains(&name.as_str())
            }
            _ => false,
        }
    }
}

/// The checks of a POST's head: `Content-Type` (415) and `Accept` (406).
pub(crate) fn check_post_head(known: &Known<'_>, headers: &HeaderMap) -> Result<(), Box<Response<Body>>> {
    let json = known
        .content_type
        .and_then(|v| v.to_str().ok())
        .map(|ct| media_type(ct).eq_ignore_ascii_case("application/json"))
        .unwrap_or(false);
    if !json {
        let err = McpError::InvalidRequest {
            message: "Unsupported Media Type: Content-Type must be application/json".into(),
            data: None,
        };
        return Err(Box::new(reject(StatusCode::UNSUPPORTED_MEDIA_TYPE, &err, None)));
    }
    if !usual_accept(known)
        && (!accepts(headers, "application/json", true) || !accepts(headers, "text/event-stream", true))
    {
        let err = McpError::InvalidRequest {
            message: "Not Acceptable: Accept must list application/json and text/event-stream".into(),
            data: None,
        };
        return Err(Box::new(reject(StatusCode::NOT_ACCEPTABLE, &err, None)));
    }
    Ok(())
}

/// Whether the request carries one `Accept` header whose value is one of the two lists
/// every MCP client sends, which admit both types: a byte comparison instead of two parses
/// (about 2,400 instructions of a 2026-07-28 call's 87,000). Anything else is parsed.
fn usual_accept(known: &Known<'_>) -> bool {
    const USUAL: [&[u8]; 2] = [b"application/json, text/event-stream", b"text/event-stream, application/json"];
    match known.accept {
        Some(value) if !known.accept_repeated => USUAL.contains(&value.as_bytes()),
        _ => false,
    }
}

/// Whether `Accept` admits `wanted` (wildcards count); an absent header admits
/// `if_absent`.
pub(crate) fn accepts(headers: &HeaderMap, wanted: &str, if_absent: bool) -> bool {
    let mut seen = false;
    let (major, _) = wanted.split_once('/').unwrap_or((wanted, ""));
    for value in headers.get_all(header::ACCEPT) {
        seen = true;
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let t = media_type(item);
            if t.eq_ignore_ascii_case(wanted) || t == "*/*" {
                return true;
            }
            if let Some(m) = t.strip_suffix("/*") {
                if m.eq_ignore_ascii_case(major) {
                    return true;
                }
            }
        }
    }
    !seen && if_absent
}

/// The media type of a header value, without parameters or spaces.
fn media_type(value: &str) -> &str {
    value.split(';').next().unwrap_or("").trim()
}

/// Splits `name[:port]` (with `[v6]:port`) into the name and the port, borrowing.
fn split_host_ref(host: &str) -> (&str, Option<u16>) {
    let (name, port) = split_host_text(host);
    (name, port.and_then(|p| p.parse().ok()))
}

/// [`split_host_ref`] with the port left as text: the loopback check, run on every request,
/// needs only the name. By bytes rather than `str` patterns: `rsplit_once` and the port's
/// parse cost about 300 instructions per request.
fn split_host_text(host: &str) -> (&str, Option<&str>) {
    let bytes = host.as_bytes();
    if bytes.first() == Some(&b'[') {
        if let Some(end) = bytes.iter().position(|&b| b == b']') {
            return (&host[..=end], host[end + 1..].strip_prefix(':'));
        }
    }
    match bytes.iter().rposition(|&b| b == b':') {
        // A bare IPv6 address has several colons and no port.
        Some(colon) if !bytes[..colon].contains(&b':') => (&host[..colon], Some(&host[colon + 1..])),
        _ => (host, None),
    }
}

/// Splits `name[:port]` (with `[v6]:port`) into the name and the port.
fn split_host(host: &str) -> (String, Option<u16>) {
    if let Some(rest) = host.strip_prefix('[') {
        if let Some(end) = rest.find(']') {
            let name = format!("[{}]", &rest[..end]);
            let port = rest[end + 1..].strip_prefix(':').and_then(|p| p.parse().ok());
            return (name, port);
        }
    }
    match host.rsplit_once(':') {
        // A bare IPv6 address has several colons and no port.
        Some((name, port)) if !name.contains(':') => (name.to_owned(), port.parse().ok()),
        _ => (host.to_owned(), None),
    }
}

/// Whether `body` nests arrays and objects deeper than `max` (strings are skipped, escapes
/// respected). A pre-scan, so a hostile body never reaches a recursive parser.
pub(crate) fn too_deep(body: &[u8], max: usize) -> bool {
    // Nesting never exceeds the number of `[` and `{` bytes (those inside strings only add
    // to the count): counted with `memchr`'s vector search, an ordinary body is settled at
    // a small fraction of the byte-by-byte scan's cost, which only a body with more
    // openers than `max` needs.
    if memchr::memchr2_iter(b'[', b'{', body).take(max + 1).count() <= max {
        return false;
    }
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in body {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

pub(crate) fn forbidden(message: &str) -> McpError {
    McpError::Other { code: -32000, message: format!("Forbidden: {message}"), data: None }
}

/// An HTTP refusal: `status` with the JSON-RPC error body for `err`.
pub(crate) fn reject(status: StatusCode, err: &McpError, id: Option<RequestId>) -> Response<Body> {
    let body = err.to_response(id).to_vec();
    json_response(status, body)
}

thread_local! {
    /// A served request's header map, emptied, for this thread's next JSON answer.
    static SPARE_HEADERS: Cell<Option<HeaderMap>> = const { Cell::new(None) };
}

/// The most headers a kept map may have room for: a request that carried many leaves no
/// large map behind.
const SPARE_HEADERS_MAX: usize = 32;

/// Keeps `headers`, a served request's, emptied, as the map of this thread's next JSON
/// answer. hyper keeps an answer's map, emptied, as the connection's next request's; so
/// one map goes round, request to answer to request, sized for this client's requests,
/// where each request had one allocated for its answer and one freed (and a fresh
/// answer's six slots were regrown for a 2026-07-28 request's seven headers).
pub(crate) fn recycle_headers(mut headers: HeaderMap) {
    if headers.capacity() <= SPARE_HEADERS_MAX {
        headers.clear();
        SPARE_HEADERS.set(Some(headers));
    }
}

/// A JSON body with `status`.
pub(crate) fn json_response(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = SPARE_HEADERS.take().unwrap_or_default();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// An empty answer with `status` (202 for notifications, 405, DELETE's 204).
pub(crate) fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    response
}

/// 405 with the methods the endpoint answers.
pub(crate) fn method_not_allowed(allow: &'static str) -> Response<Body> {
    let err = McpError::Other { code: -32000, message: "Method Not Allowed".into(), data: None };
    let mut response = reject(StatusCode::METHOD_NOT_ALLOWED, &err, None);
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// The status a JSON answer of the 2026-07-28 era carries for an error `code`.
pub(crate) fn modern_status(code: Option<i64>) -> StatusCode {
    match code {
        Some(-32601) => StatusCode::NOT_FOUND,
        Some(-32020 | -32021 | -32022 | -32602 | -32600 | -32700) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_served_requests_header_map_is_the_next_json_answers() {
        let mut request = HeaderMap::with_capacity(12);
        for name in ["host", "accept", "mcp-method", "mcp-name", "x-a", "x-b", "x-c"] {
            request.insert(axum::http::HeaderName::from_static(name), HeaderValue::from_static("v"));
        }
        let room = request.capacity();
        recycle_headers(request);
        let answer = json_response(StatusCode::OK, b"{}".to_vec());
        let headers = answer.headers();
        assert_eq!(headers.capacity(), room, "the answer did not take the request's map");
        assert_eq!(headers.len(), 1, "the request's headers were kept: {headers:?}");
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        // Taken once: the next answer makes its own; a large map is not kept.
        assert!(json_response(StatusCode::OK, Vec::new()).headers().capacity() < room);
        recycle_headers(HeaderMap::with_capacity(100));
        assert!(json_response(StatusCode::OK, Vec::new()).headers().capacity() < 100);
    }

    #[test]
    fn depth_scan_skips_strings_and_counts_nesting() {
        assert!(!too_deep(br#"{"a":[1,{"b":"[[[[[[["}]}"#, 3));
        assert!(too_deep(br#"{"a":[[[1]]]}"#, 3));
        // At most `max` openers is settled by the count; one more needs the scan.
        assert!(!too_deep(br#"{"a":{"b":1}}"#, 2));
        assert!(too_deep(br#"{"a":{"b":{}}}"#, 2));
        assert!(!too_deep(br#"{"a":"\"[[[[\\"}"#, 1));
    }

    /// The nesting depth by the byte-by-byte scan alone, without the count's shortcut.
    fn depth(body: &[u8]) -> usize {
        let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
        for &b in body {
            match (in_string, escaped, b) {
                (true, true, _) => escaped = false,
                (true, false, b'\\') => escaped = true,
                (true, false, b'"') => in_string = false,
                (true, ..) => {}
                (false, _, b'"') => in_string = true,
                (false, _, b'[' | b'{') => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        deepest
    }

    proptest::proptest! {
        /// The count's shortcut never changes the answer: too deep exactly when the scan
        /// finds nesting past the bound, strings and escapes included.
        #[test]
        fn the_shortcut_agrees_with_the_scan(
            body in proptest::collection::vec(proptest::sample::select(b"[]{}\"\\a,".to_vec()), 0..64),
            max in 0usize..8,
        ) {
            proptest::prop_assert_eq!(too_deep(&body, max), depth(&body) > max);
        }
    }

    /// The byte-compared lists are accepted, and the fast path never accepts what the
    /// parse would refuse: every other value, and a repeated header, goes to the parse.
    #[test]
    fn the_usual_accept_lists_pass_and_anything_else_is_parsed() {
        let head = |accepts: &[&str]| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            for value in accepts {
                headers.append(header::ACCEPT, HeaderValue::from_str(value).unwrap());
            }
            headers
        };
        let usual = |headers: &HeaderMap| usual_accept(&Known::of(headers));
        let check = |headers: &HeaderMap| check_post_head(&Known::of(headers), headers);
        for list in ["application/json, text/event-stream", "text/event-stream, application/json"] {
            assert!(usual(&head(&[list])), "{list}");
            assert!(check(&head(&[list])).is_ok(), "{list}");
        }
        // Repeated: not the fast path, and the parse admits the two together.
        let repeated = head(&["application/json", "text/event-stream"]);
        assert!(!usual(&repeated));
        assert!(check(&repeated).is_ok());
        // Repeated with a usual list first: the second value still goes to the parse.
        assert!(!usual(&head(&["application/json, text/event-stream", "application/json"])));
        // Parsed like before: a wildcard passes, one type alone is 406, no header passes.
        assert!(!usual(&head(&["*/*"])));
        assert!(check(&head(&["*/*"])).is_ok());
        let refused = check(&head(&["application/json"])).unwrap_err();
        assert_eq!(refused.status(), StatusCode::NOT_ACCEPTABLE);
        assert!(check(&head(&[])).is_ok());
    }

    #[test]
    fn host_split_handles_ports_and_v6() {
        assert_eq!(split_host("localhost:3000"), ("localhost".into(), Some(3000)));
        assert_eq!(split_host("[::1]:80"), ("[::1]".into(), Some(80)));
        assert_eq!(split_host("127.0.0.1"), ("127.0.0.1".into(), None));
        assert_eq!(split_host("::1"), ("::1".into(), None));
        assert_eq!(split_host_ref("[::1]:80"), ("[::1]", Some(80)));
        assert_eq!(split_host_ref("LocalHost:3000"), ("LocalHost", Some(3000)));
        // The borrowing split agrees with the owning one on every shape.
        for host in ["localhost:3000", "[::1]:80", "[::1]", "127.0.0.1", "::1", "a:b:c", "[::1", "h:", "h:x", ""] {
            let (name, port) = split_host(host);
            assert_eq!(split_host_ref(host), (name.as_str(), port), "{host}");
        }
        assert_eq!(split_host_text("127.0.0.1:18400"), ("127.0.0.1", Some("18400")));
        assert_eq!(split_host_text("[::1]"), ("[::1]", None));
    }
}
