//! The two header grammars of bearer authorization (RFC 6750): the `Authorization:
//! Bearer <token>` a client sends ([`bearer_token`]), and the `WWW-Authenticate: Bearer …`
//! challenge a refusal carries ([`Challenge`]; [`parse_challenges`], re-exported from
//! `arbor-protocol` where the client shares it, reads one back).
//!
//! This is syntax only: which challenge a request gets is the authenticator's decision.
//! Invariant: a built challenge always parses back to the same parameters (the property
//! tests check it for arbitrary text), and values are quoted strings with `"` and `\`
//! escaped and control characters replaced, so no input can break out of a parameter
//! or split the header.

pub use arbor_protocol::www_authenticate::{parse_challenges, ParsedChallenge};
use axum::http::{header, HeaderMap, HeaderValue};

/// An RFC 6750 `error` code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BearerError {
    /// The request is malformed (a token in the query string, two `Authorization` headers).
    InvalidRequest,
    /// The token is expired, revoked, malformed or not for this resource.
    InvalidToken,
    /// The token lacks scopes the request needs.
    InsufficientScope,
}

impl BearerError {
    /// The code as it appears in the header.
    pub fn as_str(self) -> &'static str {
        match self {
            BearerError::InvalidRequest => "invalid_request",
            BearerError::InvalidToken => "invalid_token",
            BearerError::InsufficientScope => "insufficient_scope",
        }
    }
}

/// A `WWW-Authenticate: Bearer` challenge, built parameter by parameter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: where the protected resource metadata is (RFC 9728 §5.1).
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated in the header.
    pub scope: Vec<String>,
    /// `error`: absent when the request carried no credentials (RFC 6750 §3.1).
    pub error: Option<BearerError>,
    /// `error_description`: human-readable, never the token.
    pub error_description: Option<String>,
}

impl Challenge {
    /// The header value: `Bearer resource_metadata="…", scope="…", error="…",
    /// error_description="…"`, each parameter present only when set.
    pub fn to_header_value(&self) -> HeaderValue {
        let mut out = String::from("Bearer");
        let mut first = true;
        let mut param = |name: &str, value: &str| {
            out.push_str(if first { " " } else { ", " });
            first = false;
            out.push_str(name);
            out.push_str("=\"");
            for c in value.chars() {
                match c {
                    '"' | '\\' => {
                        out.push('\\');
                        out.push(c);
                    }
                    // Header values are visible ASCII, space and tab; anything else
                    // (controls, non-ASCII) could split or corrupt the header.
                    ' ' | '\t' | '!'..='~' => out.push(c),
                    _ => out.push('?'),
                }
            }
            out.push('"');
        };
        if let Some(url) = &self.resource_metadata {
            param("resource_metadata", url);
        }
        if !self.scope.is_empty() {
            param("scope", &self.scope.join(" "));
        }
        if let Some(error) = self.error {
            param("error", error.as_str());
        }
        if let Some(description) = &self.error_description {
            param("error_description", description);
        }
        HeaderValue::from_str(&out).expect("a challenge is visible ASCII")
    }
}

/// What the `Authorization` header of a request says.
#[derive(Debug, PartialEq, Eq)]
pub enum Credentials<'a> {
    /// No `Authorization` header, or one of another scheme (`Basic`): no bearer
    /// credentials at all.
    None,
    /// `Bearer <token>`, the token as sent.
    Bearer(&'a str),
    /// Not a usable bearer header: more than one `Authorization` header, or `Bearer` with a
    /// token that is empty or outside the `b64token` alphabet.
    Malformed(&'static str),
}

/// Reads the bearer token of a request's headers (RFC 6750 §2.1): the scheme matched
/// case-insensitively, one or more spaces, then a `b64token`
/// (`[A-Za-z0-9-._~+/]+=*`). Nothing else of the header is accepted.
pub fn bearer_token(headers: &HeaderMap) -> Credentials<'_> {
    match raw_bearer(headers) {
        Raw::None => Credentials::None,
        Raw::Malformed(why) => Credentials::Malformed(why),
        Raw::Bearer(token) => match checked(token) {
            Ok(token) => Credentials::Bearer(token),
            Err(why) => Credentials::Malformed(why),
        },
    }
}

/// What [`raw_bearer`] found: the token's bytes not yet checked against the `b64token`
/// alphabet, so a token the cache already knows (checked when it was first verified)
/// costs no scan of its 800-odd bytes.
pub(crate) enum Raw<'a> {
    None,
    Bearer(&'a [u8]),
    Malformed(&'static str),
}

/// The scheme and the split of [`bearer_token`], without the alphabet check.
pub(crate) fn raw_bearer(headers: &HeaderMap) -> Raw<'_> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else { return Raw::None };
    if values.next().is_some() {
        return Raw::Malformed("more than one Authorization header");
    }
    let value = value.as_bytes();
    let Some(space) = value.iter().position(|&b| b == b' ') else {
        return if value.eq_ignore_ascii_case(b"bearer") {
            Raw::Malformed("the Bearer credentials have no token")
        } else {
            Raw::None
        };
    };
    if !value[..space].eq_ignore_ascii_case(b"bearer") {
        return Raw::None;
    }
    let rest = &value[space..];
    let start = rest.iter().position(|&b| b != b' ').unwrap_or(rest.len());
    Raw::Bearer(&rest[start..])
}

/// The token as text, if it is a `b64token`.
pub(crate) fn checked(token: &[u8]) -> Result<&str, &'static str> {
    let text = std::str::from_utf8(token).ok().filter(|t| is_b64token(t));
    text.ok_or("the bearer token is empty or has characters a token cannot have")
}

fn is_b64token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    // A table, not a chain of comparisons: every request's token (often 800 bytes or
    // more) goes through here.
    !body.is_empty() && body.bytes().all(|c| B64TOKEN[c as usize])
}

/// The `b64token` alphabet of RFC 6750 §2.1, without the trailing `=`.
static B64TOKEN: [bool; 256] = {
    let mut table = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        table[c] = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/');
        c += 1;
    }
    table
};

/// Whether the query string carries an `access_token` parameter (RFC 6750 §2.3), which
/// this server refuses: URLs end up in logs and histories.
pub fn token_in_query(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&').any(|pair| {
            let name = pair.split('=').next().unwrap_or("");
            name == "access_token" || name.eq_ignore_ascii_case("access%5Ftoken")
        })
    })
}

#[cfg(test)]
mod tests;
