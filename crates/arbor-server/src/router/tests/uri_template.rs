//! URI template parsing and matching.

use crate::router::uri_template::UriTemplate;

fn matches(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
    UriTemplate::parse(template).unwrap().matches(uri)
}

fn pairs(list: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
    Some(list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

#[test]
fn simple_variables_match_one_encoded_value() {
    assert_eq!(matches("test://template/{id}/data", "test://template/42/data"), pairs(&[("id", "42")]));
    assert_eq!(matches("test://template/{id}/data", "test://template/a%2Fb/data"), pairs(&[("id", "a/b")]));
    assert_eq!(matches("test://template/{id}/data", "test://template/a/b/data"), None);
    assert_eq!(matches("test://template/{id}/data", "test://template//data"), None);
    assert_eq!(matches("test://template/{id}/data", "test://template/42/data/"), None);
    assert_eq!(matches("test://template/{id}/data", "test://template/%ZZ/data"), None);
    assert_eq!(matches("test://template/{id}/data", "test://template/%FF/data"), None, "not UTF-8");
}

#[test]
fn several_variables_and_unreserved_separators_backtrack() {
    assert_eq!(matches("db://{table}/{row}.json", "db://users/a.b.json"), pairs(&[("table", "users"), ("row", "a.b")]));
    assert_eq!(matches("x://{a}-{b}", "x://1-2-3"), pairs(&[("a", "1"), ("b", "2-3")]));
}

#[test]
fn reserved_variables_span_reserved_characters() {
    assert_eq!(matches("file:///{+path}", "file:///src/main.rs"), pairs(&[("path", "src/main.rs")]));
    assert_eq!(matches("file:///{+path}.txt", "file:///a.txt.txt"), pairs(&[("path", "a.txt")]));
    assert_eq!(matches("file:///{+path}", "file:///with space"), None);
}

#[test]
fn a_template_without_variables_matches_itself_only() {
    let literal = UriTemplate::parse("test://fixed").unwrap();
    assert!(literal.is_literal());
    assert_eq!(literal.matches("test://fixed"), Some(vec![]));
    assert_eq!(literal.matches("test://fixed2"), None);
}

#[test]
fn unsupported_templates_are_refused() {
    for bad in [
        "x://{?q}",
        "x://{#f}",
        "x://{a,b}",
        "x://{a:3}",
        "x://{a*}",
        "x://{a}{b}",
        "x://{a",
        "x://a}",
        "x://{}",
        "x://{a}/{a}",
    ] {
        assert!(UriTemplate::parse(bad).is_err(), "{bad}");
    }
}
