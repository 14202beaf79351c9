//! The discovery URLs and checks, exact to the byte.

use super::*;
use proptest::prelude::*;

#[test]
fn the_resource_metadata_urls_follow_the_spec_order() {
    assert_eq!(
        resource_metadata_urls("http://localhost:3000/mcp"),
        [
            "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
            "http://localhost:3000/.well-known/oauth-protected-resource"
        ]
    );
    assert_eq!(
        resource_metadata_urls("http://localhost:3000"),
        ["http://localhost:3000/.well-known/oauth-protected-resource"]
    );
    assert_eq!(
        resource_metadata_urls("https://h/a/b/?q=1"),
        ["https://h/.well-known/oauth-protected-resource/a/b", "https://h/.well-known/oauth-protected-resource"]
    );
}

#[test]
fn server_metadata_urls_insert_the_path_in_the_spec_order() {
    assert_eq!(
        server_metadata_urls("http://localhost:9000/tenant1"),
        [
            "http://localhost:9000/.well-known/oauth-authorization-server/tenant1",
            "http://localhost:9000/.well-known/openid-configuration/tenant1",
            "http://localhost:9000/tenant1/.well-known/openid-configuration",
        ]
    );
    assert_eq!(
        server_metadata_urls("http://localhost:9000"),
        [
            "http://localhost:9000/.well-known/oauth-authorization-server",
            "http://localhost:9000/.well-known/openid-configuration"
        ]
    );
}

#[test]
fn a_resource_fits_its_own_server_only() {
    assert!(resource_fits("http://localhost:3000/mcp", "http://localhost:3000/mcp"));
    assert!(resource_fits("http://localhost:3000", "http://localhost:3000/mcp"));
    assert!(resource_fits("http://LOCALHOST:3000/mcp", "http://localhost:3000/mcp"));
    assert!(!resource_fits("https://evil.example.com/mcp", "http://localhost:3000/mcp"));
    assert!(!resource_fits("http://localhost:3001/mcp", "http://localhost:3000/mcp"));
    assert!(!resource_fits("http://localhost:3000/mcp2", "http://localhost:3000/mcp"));
    assert!(!resource_fits("http://localhost:3000/mcp/deeper", "http://localhost:3000/mcp"));
}

#[test]
fn unsafe_urls_are_refused() {
    assert!(check_url("https://as.example/token", false).is_ok());
    assert!(check_url("http://as.example/token", false).is_err(), "https only");
    assert!(check_url("http://127.0.0.1:9000/token", false).is_err(), "loopback needs allowing");
    assert!(check_url("http://127.0.0.1:9000/token", true).is_ok());
    assert!(check_url("http://localhost:9000/token", true).is_ok());
    assert!(check_url("http://[::1]:9000/token", true).is_ok());
    for private in [
        "https://10.0.0.1/x",
        "https://192.168.1.1/x",
        "https://169.254.169.254/latest",
        "https://[fe80::1]/x",
        "https://[fd00::1]/x",
    ] {
        assert!(check_url(private, true).is_err(), "{private}");
    }
    assert!(check_url("javascript:alert(1)", true).is_err());
    assert!(check_url("file:///etc/passwd", true).is_err());
}

proptest! {
    /// Whatever the origin and path, the built URLs keep the origin byte for byte and
    /// never double a slash or lose a path segment.
    #[test]
    fn built_urls_keep_the_identifier_bytes(host in "[a-zA-Z][a-zA-Z0-9-]{0,12}", port in proptest::option::of(1u16..),
                                            segments in prop::collection::vec("[a-zA-Z0-9._~-]{1,8}", 0..4)) {
        let origin = match port { Some(p) => format!("http://{host}:{p}"), None => format!("http://{host}") };
        let path: String = segments.iter().map(|s| format!("/{s}")).collect();
        let id = format!("{origin}{path}");
        for url in server_metadata_urls(&id).iter().chain(resource_metadata_urls(&id).iter()) {
            prop_assert!(url.starts_with(&origin), "{url}");
            prop_assert!(!url[origin.len() + 1..].contains("//"), "{url}");
            prop_assert!(url.contains(&path) || !url.contains(".well-known/openid-configuration/") || path.is_empty());
        }
        let urls = server_metadata_urls(&id);
        if path.is_empty() {
            prop_assert_eq!(urls.len(), 2);
        } else {
            prop_assert_eq!(&urls[0], &format!("{origin}/.well-known/oauth-authorization-server{path}"));
            prop_assert_eq!(&urls[2], &format!("{origin}{path}/.well-known/openid-configuration"));
        }
        prop_assert!(resource_fits(&id, &id));
    }
}
