//! Roots checks: only local `file://` URIs leave the client, with `.`/`..` resolved.
//!
//! A root with another scheme, a remote host (`file://server/share`), or that is not an
//! absolute URI at all is dropped from the answer (and logged), not sent; the rest are
//! rewritten in their normal form (the WHATWG URL parser resolves dot segments, including
//! percent-encoded ones, and drops a `localhost` host). This module does not read the
//! file system.
//!
//! Invariant: every root in a checked answer parses as `file:///…` with an empty host, no
//! dot segments, no query and no fragment.

use arbor_protocol::model::roots::ListRootsResult;
use url::Url;

/// The normal form of a local file root, or why it is not one.
pub(crate) fn local_root(uri: &str) -> Result<String, String> {
    let mut url = Url::parse(uri).map_err(|e| format!("not an absolute URI: {e}"))?;
    if url.scheme() != "file" {
        return Err(format!("scheme `{}` is not file", url.scheme()));
    }
    match url.host_str() {
        None | Some("") | Some("localhost") => {}
        Some(host) => return Err(format!("host `{host}` is not local")),
    }
    if url.host_str() == Some("localhost") {
        url.set_host(None).map_err(|e| e.to_string())?;
    }
    url.set_query(None);
    url.set_fragment(None);
    Ok(url.to_string())
}

/// Keeps the local file roots of an answer in their normal form; returns the URIs dropped.
pub(crate) fn check_answer(result: &mut ListRootsResult) -> Vec<String> {
    let mut dropped = Vec::new();
    result.roots.retain_mut(|root| match local_root(&root.uri) {
        Ok(normal) => {
            root.uri = normal;
            true
        }
        Err(why) => {
            tracing::warn!(uri = %root.uri, %why, "root dropped: only local file:// URIs are sent");
            dropped.push(std::mem::take(&mut root.uri));
            false
        }
    });
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn table() {
        let cases: &[(&str, Option<&str>)] = &[
            ("file:///home/me/project", Some("file:///home/me/project")),
            ("file:///home/me/project/", Some("file:///home/me/project/")),
            ("file:///home/me/a/../b/./c", Some("file:///home/me/b/c")),
            ("file:///home/me/%2e%2e/x", Some("file:///home/x")),
            ("file:///../../etc", Some("file:///etc")),
            ("file://localhost/srv/data", Some("file:///srv/data")),
            ("file:///C:/work/x", Some("file:///C:/work/x")),
            ("file:///tmp/x?q=1#f", Some("file:///tmp/x")),
            ("file://fileserver/share", None),
            ("file://10.0.0.1/share", None),
            ("https://example.com/repo", None),
            ("/home/me/project", None),
            ("relative/dir", None),
            ("", None),
            ("javascript:alert(1)", None),
        ];
        for &(uri, want) in cases {
            assert_eq!(local_root(uri).ok().as_deref(), want, "{uri}");
        }
    }

    #[test]
    fn answers_keep_only_local_roots() {
        let mut result: ListRootsResult = serde_json::from_value(json!({"roots": [
            {"uri": "file:///a/./b", "name": "b"},
            {"uri": "https://x.org/", "name": "web"},
            {"uri": "file://remote/c"}
        ]}))
        .unwrap();
        let dropped = check_answer(&mut result);
        assert_eq!(dropped, vec!["https://x.org/".to_owned(), "file://remote/c".to_owned()]);
        assert_eq!(result.roots.len(), 1);
        assert_eq!(result.roots[0].uri, "file:///a/b");
        assert_eq!(result.roots[0].name.as_deref(), Some("b"));
    }
}
