//! Elicitation request checks: the mode must be one the handler declared, and a URL-mode
//! request must carry an absolute `https` URL without userinfo.
//!
//! The client never fetches or opens the URL; it only describes it to the handler
//! ([`UrlTarget`]: the full URL, its host, whether a label is punycode, and whether its
//! origin differs from the server's). Form schemas and answers are checked in `form.rs`.
//!
//! Invariant: a URL that passes parses as `https://host…` with an empty username and no
//! password, and its `host` is that URL's host.

use arbor_protocol::model::elicitation::ElicitationMode;
use url::Url;

use super::Refusal;
use crate::handler::context::UrlTarget;

/// Refuses a mode the handler did not declare.
pub(crate) fn check_mode(mode: ElicitationMode, declared: &[ElicitationMode]) -> Result<(), Refusal> {
    if declared.contains(&mode) {
        Ok(())
    } else {
        let name = match mode {
            ElicitationMode::Form => "form",
            ElicitationMode::Url => "url",
        };
        Err(Refusal::InvalidParams(format!("elicitation mode `{name}` is not supported by this client")))
    }
}

/// Checks a URL-mode target and describes it. `server_origin` is the origin the transport
/// or the configuration reports for the server, if known.
pub(crate) fn check_url(raw: &str, server_origin: Option<&str>) -> Result<UrlTarget, Refusal> {
    let url = Url::parse(raw).map_err(|e| Refusal::InvalidParams(format!("elicitation URL is not absolute: {e}")))?;
    if url.scheme() != "https" {
        return Err(Refusal::InvalidParams(format!(
            "elicitation URL scheme `{}` refused: only https URLs are accepted",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refusal::InvalidParams("elicitation URL must not carry userinfo".to_owned()));
    }
    let host = match url.host_str() {
        Some(host) if !host.is_empty() => host.to_owned(),
        _ => return Err(Refusal::InvalidParams("elicitation URL has no host".to_owned())),
    };
    // The url crate writes internationalised domain names in their ASCII (punycode) form,
    // so a look-alike Unicode host shows up here as an `xn--` label.
    let idn = host.split('.').any(|label| label.len() >= 4 && label[..4].eq_ignore_ascii_case("xn--"));
    let origin_mismatch = match server_origin.map(Url::parse) {
        Some(Ok(server)) => server.origin() != url.origin(),
        _ => true,
    };
    Ok(UrlTarget { url: url.to_string(), host, idn, origin_mismatch })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        use ElicitationMode::{Form, Url};
        assert_eq!(check_mode(Form, &[Form]), Ok(()));
        assert!(matches!(check_mode(Url, &[Form]), Err(Refusal::InvalidParams(_))));
        assert!(matches!(check_mode(Form, &[Url]), Err(Refusal::InvalidParams(_))));
        assert_eq!(check_mode(Url, &[Form, Url]), Ok(()));
    }

    #[test]
    fn urls() {
        let origin = Some("https://mcp.example.com/mcp");
        // (url, server origin, Some((host, idn, origin_mismatch)) or refused)
        type Case<'a> = (&'a str, Option<&'a str>, Option<(&'a str, bool, bool)>);
        let cases: &[Case] = &[
            ("https://mcp.example.com/auth?x=1", origin, Some(("mcp.example.com", false, false))),
            ("https://other.example.com/auth", origin, Some(("other.example.com", false, true))),
            ("https://mcp.example.com:8443/auth", origin, Some(("mcp.example.com", false, true))),
            ("https://mcp.example.com/auth", None, Some(("mcp.example.com", false, true))),
            ("https://xn--pple-43d.com/login", origin, Some(("xn--pple-43d.com", true, true))),
            ("https://аpple.com/login", origin, Some(("xn--pple-43d.com", true, true))),
            ("https://a.XN--p1ai/", None, Some(("a.xn--p1ai", true, true))),
            ("https://192.168.1.1/x", None, Some(("192.168.1.1", false, true))),
            ("http://mcp.example.com/auth", origin, None),
            ("javascript:alert(1)", origin, None),
            ("file:///etc/passwd", origin, None),
            ("data:text/html,hi", origin, None),
            ("https://user:pw@mcp.example.com/", origin, None),
            ("https://user@mcp.example.com/", origin, None),
            ("/relative/path", origin, None),
            ("", origin, None),
            ("https://", origin, None),
        ];
        for &(raw, origin, want) in cases {
            match (check_url(raw, origin), want) {
                (Ok(t), Some((host, idn, mismatch))) => {
                    assert_eq!((t.host.as_str(), t.idn, t.origin_mismatch), (host, idn, mismatch), "{raw}");
                    assert!(t.url.starts_with("https://"), "{raw}");
                }
                (Err(Refusal::InvalidParams(_)), None) => {}
                (got, want) => panic!("{raw}: wanted {want:?}, got {got:?}"),
            }
        }
    }
}
