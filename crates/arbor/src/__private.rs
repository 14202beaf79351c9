//! What the `arbor-macros` expansions name (not public API): paths the generated code
//! uses, so a user needs no direct dependency on the crates behind the facade.
//!
//! Nothing here is for hand-written code, and its names may change in any release.
//! Invariant: every path an expansion of `#[arbor::tool]` or `#[derive(arbor::JsonSchema)]`
//! names is here, so the expansions work in a crate that depends on `arbor` alone.

/// schemars itself, for `#[derive(arbor::JsonSchema)]`: its expansion brings this into
/// scope under the name `schemars`, the name schemars' own derive writes its paths with.
pub use schemars;

/// The `_meta` key under which `#[arbor::tool(scopes = [...])]` stores the OAuth scopes a
/// tool needs: a JSON array of strings, in the order written.
pub const SCOPES_META_KEY: &str = "arbor/scopes";

#[cfg(feature = "server")]
pub use arbor_server::router::{NoArgs, RouterError, ToolRoute};
#[cfg(feature = "server")]
pub use arbor_server::RequestContext;

/// Adds `scopes` to the route's `_meta` under [`SCOPES_META_KEY`], keeping its other keys.
#[cfg(feature = "server")]
pub fn with_scopes(route: ToolRoute, scopes: &[&str]) -> ToolRoute {
    let mut meta = route.definition().meta.clone().unwrap_or_default();
    let scopes = scopes.iter().map(|s| serde_json::Value::String((*s).to_owned())).collect();
    meta.insert(SCOPES_META_KEY, serde_json::Value::Array(scopes));
    route.meta(meta)
}
