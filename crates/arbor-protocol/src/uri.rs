//! String surgery on URLs that must stay exactly as written: OAuth identifiers (a
//! resource, an issuer) are compared as strings, and a URL parser would re-serialise them
//! (`http://host:1234` becomes `http://host:1234/`, a host is lower-cased).
//!
//! Not a URL parser: nothing is validated or normalised. Invariant: every part returned is
//! a slice of the input.

/// `scheme://authority` and the path (without query or fragment) of `url`, as written.
/// A string without `://` is all authority and path.
pub fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[after_scheme..];
    let path_at = rest.find(['/', '?', '#']).map_or(url.len(), |i| after_scheme + i);
    let (origin, tail) = url.split_at(path_at);
    let end = tail.find(['?', '#']).unwrap_or(tail.len());
    (origin, &tail[..end])
}

#[cfg(test)]
mod tests {
    use super::split_origin;

    #[test]
    fn the_parts_are_the_input_as_written() {
        assert_eq!(split_origin("http://Host:1234"), ("http://Host:1234", ""));
        assert_eq!(split_origin("https://a.example/mcp/?x=1#f"), ("https://a.example", "/mcp/"));
        assert_eq!(split_origin("https://a.example?x"), ("https://a.example", ""));
        assert_eq!(split_origin("https://a.example#/p"), ("https://a.example", ""));
    }
}
