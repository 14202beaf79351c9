//! `#[derive(arbor::JsonSchema)]` with no `use` at all and no schemars dependency: the
//! schema is schemars' (docs, serde renames and defaults, generics, enums, recursion).

use serde_json::{json, Value};

/// A search.
#[derive(serde::Deserialize, arbor::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
#[allow(dead_code)]
struct Search {
    /// What to look for.
    query_text: String,
    #[serde(default)]
    limit: Option<u32>,
}

/// Settings whose every field may be left out.
#[derive(Default, serde::Deserialize, arbor::JsonSchema)]
#[serde(default)]
struct Settings {
    depth: u8,
    name: String,
}

#[derive(serde::Serialize, arbor::JsonSchema)]
struct Page<T> {
    items: Vec<T>,
}

// `#[default]` is `Default`'s helper: the schema derive's copy must not carry it.
#[derive(Default, serde::Serialize, arbor::JsonSchema)]
#[serde(rename = "Colour")]
#[allow(dead_code)]
enum Color {
    Red,
    #[default]
    Green,
}

#[derive(serde::Serialize, arbor::JsonSchema)]
struct Tree {
    children: Vec<Tree>,
}

fn schema<T: arbor::JsonSchema>() -> Value {
    arbor::schemars::schema_for!(T).to_value()
}

#[test]
fn derive_needs_no_schemars_dependency() {
    let search = schema::<Search>();
    assert_eq!(search["title"], "Search");
    assert_eq!(search["description"], "A search.");
    assert_eq!(search["properties"]["queryText"]["description"], "What to look for.");
    assert_eq!(search["required"], json!(["queryText"]));
    assert_eq!(search["additionalProperties"], false);

    let settings = schema::<Settings>();
    assert_eq!(settings["properties"]["depth"]["default"], 0, "the container default is the type's: {settings}");
    assert_eq!(settings.get("required"), None);

    // schemars 1.x names a generic type by its name alone, and tells instances apart by id.
    assert_eq!(<Page<Search> as arbor::JsonSchema>::schema_name(), "Page");
    assert_ne!(<Page<Search> as arbor::JsonSchema>::schema_id(), <Page<u8> as arbor::JsonSchema>::schema_id());
    let page = schema::<Page<u8>>();
    assert_eq!(page["properties"]["items"]["items"]["type"], "integer");

    assert_eq!(<Color as arbor::JsonSchema>::schema_name(), "Colour");
    assert_eq!(schema::<Color>()["enum"], json!(["Red", "Green"]));

    let tree = schema::<Tree>();
    assert_eq!(tree["properties"]["children"]["items"]["$ref"], "#", "recursion refers to the root: {tree}");
}
