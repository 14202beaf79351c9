//! Misuses of `#[arbor::tool]` are errors at the offending token. Spans are real here:
//! proc-macro2's `span-locations` (a dev-only feature) gives each token its line and
//! column in the source text parsed.

use super::expand;
use proc_macro2::TokenStream;

/// The error `attr` and `item` give: its message and the source text its span covers.
fn error(attr: &str, item: &str) -> (String, String) {
    let attr: TokenStream = attr.parse().expect("the attribute lexes");
    let tokens: TokenStream = item.parse().expect("the item lexes");
    let error = match expand(attr, tokens) {
        Ok(expansion) => panic!("expected an error, got {expansion}"),
        Err(error) => error,
    };
    let at = error.span().source_text().unwrap_or_default();
    (error.to_string(), at)
}

const DOC: &str = "#[doc = \" Adds.\"]";

#[test]
fn a_function_that_is_not_async_is_refused_at_fn() {
    let (message, at) = error("", &format!("{DOC} fn add(args: Args) -> String {{ String::new() }}"));
    assert_eq!(message, "an `#[arbor::tool]` must be an `async fn`");
    assert_eq!(at, "fn");
}

#[test]
fn no_doc_and_no_description_is_refused_at_the_name() {
    let (message, at) = error("", "async fn add(args: Args) -> String { String::new() }");
    assert!(message.starts_with("a tool needs a description for the model"), "{message}");
    assert_eq!(at, "add");
    // A blank doc comment is no description either.
    let (message, _) = error("", "#[doc = \"   \"] async fn add(args: Args) -> String { String::new() }");
    assert!(message.starts_with("a tool needs a description"), "{message}");
    // The attribute's description is enough.
    let attr: TokenStream = "description = \"Adds\"".parse().unwrap();
    let item: TokenStream = "async fn add(args: Args) -> String { String::new() }".parse().unwrap();
    assert!(expand(attr, item).is_ok());
}

#[test]
fn a_second_argument_struct_is_refused_at_it() {
    let (message, at) =
        error("", &format!("{DOC} async fn add(a: A, cx: RequestContext, b: B) -> String {{ String::new() }}"));
    assert!(message.starts_with("a tool takes one argument struct"), "{message}");
    assert_eq!(at, "b: B");
    let (message, at) =
        error("", &format!("{DOC} async fn add(cx: RequestContext, c2: arbor::prelude::RequestContext) {{}}"));
    assert_eq!(message, "a tool takes the `RequestContext` once");
    assert!(at.starts_with("c2"), "{at}");
}

#[test]
fn unknown_and_repeated_keys_are_refused_at_the_key() {
    let item = format!("{DOC} async fn add(args: Args) -> String {{ String::new() }}");
    let (message, at) = error("title = \"Add\", readonly", &item);
    assert!(message.starts_with("unknown `#[arbor::tool]` key; the keys are `name`"), "{message}");
    assert_eq!(at, "readonly");
    let (message, at) = error("read_only, read_only = false", &item);
    assert_eq!(message, "this key is given twice");
    assert!(at.starts_with("read_only = false"), "{at}");
}

#[test]
fn methods_generics_and_bad_names_or_scopes_are_refused() {
    let (message, at) = error("", &format!("{DOC} async fn add(&self, args: Args) {{}}"));
    assert!(message.starts_with("an `#[arbor::tool]` is a free async fn, not a method"), "{message}");
    assert_eq!(at, "&self");
    let (message, _) = error("", &format!("{DOC} async fn add<T>(args: T) {{}}"));
    assert!(message.starts_with("an `#[arbor::tool]` cannot be generic"), "{message}");
    let (message, _) = error("", &format!("{DOC} async unsafe fn add(args: Args) {{}}"));
    assert_eq!(message, "an `#[arbor::tool]` cannot be `unsafe`");
    let (message, at) = error("name = \"add two\"", &format!("{DOC} async fn add(args: Args) {{}}"));
    assert!(message.starts_with("a tool name is 1-128 characters"), "{message}");
    assert_eq!(at, "\"add two\"");
    let (message, at) = error("scopes = [\"files:read\", \"a b\"]", &format!("{DOC} async fn add(args: Args) {{}}"));
    assert!(message.starts_with("a scope is a non-empty OAuth scope token"), "{message}");
    assert_eq!(at, "\"a b\"");
    let (message, _) = error("scopes = [\"x\", \"x\"]", &format!("{DOC} async fn add(args: Args) {{}}"));
    assert_eq!(message, "this scope is listed twice");
    let (message, _) = error("", "struct NotAFunction;");
    assert!(message.starts_with("`#[arbor::tool]` goes on an `async fn`"), "{message}");
}

#[test]
fn the_expansion_names_only_arbor_private_paths() {
    let attr: TokenStream = "title = \"Add\", read_only, scopes = [\"s\"]".parse().unwrap();
    let item: TokenStream =
        format!("{DOC} pub async fn add(cx: RequestContext, args: Args) -> String {{ String::new() }}")
            .parse()
            .unwrap();
    let expansion = expand(attr, item).expect("expands").to_string();
    for path in ["ToolRoute", "RouterError", "RequestContext", "with_scopes"] {
        assert!(expansion.contains(&format!(":: arbor :: __private :: {path}")), "{path} in {expansion}");
    }
    // Every absolute path the expansion writes is under `::arbor::__private`.
    for (i, _) in expansion.match_indices(":: arbor ::") {
        assert!(expansion[i..].starts_with(":: arbor :: __private ::"), "{}", &expansion[i..]);
    }
    assert!(expansion.contains("pub struct add { }"), "{expansion}");
    assert!(expansion.contains(". description (\"Adds.\")"), "{expansion}");
}
