//! The `try_` builders: each mistake a panicking builder would panic on comes back as the
//! [`RouterError`] naming it, and a refused registration changes nothing.

use super::*;
use crate::handler::ListKind;
use crate::router::{NoArgs, ResourceRoute, RouteKind, RouterError, SchemaPart};
use std::collections::HashMap;

#[test]
fn a_non_object_argument_type_is_a_schema_error() {
    let err = ToolRoute::try_new("bad", |_: String| async { "" }).unwrap_err();
    match &err {
        RouterError::Schema { kind: RouteKind::Tool, name, part: SchemaPart::Arguments, reason } => {
            assert_eq!(name, "bad");
            assert!(reason.contains("does not have \"type\": \"object\""), "{reason}");
        }
        other => panic!("expected a schema error, got {other:?}"),
    }
    assert!(err.to_string().starts_with("tool `bad`: arguments: "), "{err}");
    assert!(Router::new("s", "1").try_tool("bad", "", |_: String| async { "" }).is_err());
}

#[test]
fn a_non_object_output_type_is_a_schema_error_on_the_output() {
    let err = ToolRoute::try_with_output("list", |_: NoArgs| async { Ok::<_, ToolError>(vec![1, 2]) }).unwrap_err();
    assert!(
        matches!(&err, RouterError::Schema { kind: RouteKind::Tool, part: SchemaPart::Output, name, .. } if name == "list"),
        "{err:?}"
    );
    let router =
        Router::new("s", "1").try_tool_with_output("list", "", |_: NoArgs| async { Ok::<_, ToolError>(vec![1, 2]) });
    assert!(matches!(router, Err(RouterError::Schema { part: SchemaPart::Output, .. })));
}

#[test]
fn a_broken_mcp_header_is_a_schema_error() {
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Broken {
        #[schemars(extend("x-mcp-header" = "Bad Header"))]
        region: String,
    }
    let err = ToolRoute::try_new("broken", |_: Broken| async { "" }).unwrap_err();
    assert!(matches!(err, RouterError::Schema { part: SchemaPart::Arguments, .. }), "{err:?}");
}

#[tokio::test]
async fn a_duplicate_tool_is_refused_and_the_first_one_is_kept() {
    let router = Router::new("s", "1").try_tool("add", "Add", add).unwrap();
    let kept = router.clone();
    let err = router.try_tool("add", "Second", |_: NoArgs| async { "second" }).unwrap_err();
    assert_eq!(err, RouterError::Duplicate { kind: RouteKind::Tool, name: "add".into() });
    assert_eq!(err.to_string(), "tool `add` is registered twice");
    let result = call(&kept, "add", json!({"a": 1, "b": 2})).await.unwrap();
    assert_eq!(text_of(&result), "3");
}

#[test]
fn duplicates_of_every_kind_are_refused() {
    let router = fixture();
    let prompt = router.clone().try_prompt_route(PromptRoute::new("greet", greet)).unwrap_err();
    assert_eq!(prompt, RouterError::Duplicate { kind: RouteKind::Prompt, name: "greet".into() });
    let resource =
        router.clone().try_resource("test://static/readme", "again", "", "text/plain", || async { "" }).unwrap_err();
    assert_eq!(resource, RouterError::Duplicate { kind: RouteKind::Resource, name: "test://static/readme".into() });
    let template =
        router.clone().try_resource_template("test://names/{name}", "again", "", "text/plain", named).unwrap_err();
    assert_eq!(template, RouterError::Duplicate { kind: RouteKind::Template, name: "test://names/{name}".into() });
    assert_eq!(template.to_string(), "resource template `test://names/{name}` is registered twice");
    let route = ResourceRoute::new("test://static/bytes", "again", || async { "" });
    assert!(matches!(router.try_resource_route(route), Err(RouterError::Duplicate { .. })));
}

#[test]
fn an_unsupported_template_is_a_template_error() {
    let err = TemplateRoute::try_new("test://search{?q}", "s", |_: HashMap<String, String>| async { "" }).unwrap_err();
    match &err {
        RouterError::Template { template, reason } => {
            assert_eq!(template, "test://search{?q}");
            assert!(reason.contains("only {var} and {+var}"), "{reason}");
        }
        other => panic!("expected a template error, got {other:?}"),
    }
    let router = Router::new("s", "1").try_resource_template("test://search{?q}", "s", "", "text/plain", named);
    assert!(matches!(router, Err(RouterError::Template { .. })));
}

#[test]
fn completing_an_unknown_template_variable_is_an_error() {
    let route = TemplateRoute::try_new("test://names/{name}", "named", named).unwrap();
    let err = route.try_complete("nme", completion::starting_with(["a"])).unwrap_err();
    assert_eq!(
        err,
        RouterError::UnknownVariable {
            kind: RouteKind::Template,
            name: "test://names/{name}".into(),
            variable: "nme".into()
        }
    );
    let route = TemplateRoute::try_new("test://names/{name}", "named", named).unwrap();
    assert!(route.try_complete("name", completion::starting_with(["a"])).is_ok());
}

#[test]
fn a_non_object_prompt_argument_type_is_a_schema_error() {
    let err = PromptRoute::try_new("bad", |_: String| async { "" }).unwrap_err();
    assert!(
        matches!(&err, RouterError::Schema { kind: RouteKind::Prompt, part: SchemaPart::Arguments, name, .. } if name == "bad"),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("prompt `bad`: arguments: "), "{err}");
    assert!(Router::new("s", "1").try_prompt("bad", "", |_: String| async { "" }).is_err());
}

#[test]
fn completing_an_unknown_prompt_argument_is_an_error() {
    let err = PromptRoute::try_new("greet", greet)
        .unwrap()
        .try_complete("nme", completion::starting_with(["a"]))
        .unwrap_err();
    assert_eq!(
        err,
        RouterError::UnknownVariable { kind: RouteKind::Prompt, name: "greet".into(), variable: "nme".into() }
    );
    assert_eq!(err.to_string(), "prompt `greet` has no argument `nme` to complete");
    assert!(PromptRoute::try_new("greet", greet)
        .unwrap()
        .try_complete("name", completion::starting_with(["a"]))
        .is_ok());
}

#[test]
#[should_panic(expected = "has no variable `nme` to complete")]
fn the_panicking_complete_panics_with_the_error() {
    let _ = TemplateRoute::new("test://names/{name}", "named", named).complete("nme", completion::starting_with(["a"]));
}

#[tokio::test]
async fn run_time_registration_refuses_a_duplicate_without_announcing_it() {
    let router = Router::new("s", "1");
    let handle = router.handle();
    let mut changes = router.list_changes().expect("a dynamic router announces changes");
    handle.try_add_tool(ToolRoute::try_new("add", add).unwrap()).unwrap();
    assert_eq!(changes.try_recv(), Some(ListKind::Tools));

    let second = ToolRoute::try_new("add", |_: NoArgs| async { "second" }).unwrap();
    let err = handle.try_add_tool(second).unwrap_err();
    assert_eq!(err, RouterError::Duplicate { kind: RouteKind::Tool, name: "add".into() });
    assert_eq!(changes.try_recv(), None, "a refused registration changes nothing");
    assert_eq!(handle.tool_names(), ["add"]);
    assert_eq!(text_of(&call(&router, "add", json!({"a": 2, "b": 2})).await.unwrap()), "4");

    let prompt = handle.try_add_prompt(PromptRoute::new("greet", greet));
    assert!(prompt.is_ok());
    assert!(handle.try_add_prompt(PromptRoute::new("greet", greet)).is_err());
    let resource = || ResourceRoute::new("test://r", "r", || async { "r" });
    assert!(handle.try_add_resource(resource()).is_ok());
    assert!(matches!(
        handle.try_add_resource(resource()),
        Err(RouterError::Duplicate { kind: RouteKind::Resource, .. })
    ));
    let template = || TemplateRoute::try_new("test://t/{name}", "t", named).unwrap();
    assert!(handle.try_add_template(template()).is_ok());
    assert!(matches!(
        handle.try_add_template(template()),
        Err(RouterError::Duplicate { kind: RouteKind::Template, .. })
    ));
    // The replacing form still replaces, and says so.
    assert!(handle.add_tool(ToolRoute::new("add", |_: NoArgs| async { "replaced" })));
    assert_eq!(text_of(&call(&router, "add", json!({})).await.unwrap()), "replaced");
}
