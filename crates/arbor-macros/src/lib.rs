//! Procedural macros for Arbor, used through the facade: `#[arbor::tool]` makes a plain
//! async function a tool, and `#[derive(arbor::JsonSchema)]` derives a JSON Schema in a
//! crate that depends on `arbor` alone.
//!
//! This crate holds no runtime code and is not meant to be depended on directly: the
//! expansions name `::arbor::__private::…`, so the crate using them must depend on `arbor`
//! under that name (a renamed `arbor` dependency is not supported). Invariant: a misuse is
//! a compile error at the offending span, never a panic in the macro.

#![forbid(unsafe_code)]

use proc_macro::TokenStream;

mod schema;
mod tool;

/// Makes a plain async function a tool: the name is the function's, the description is its
/// doc comment, the arguments are its one typed parameter (a struct deriving `Deserialize`
/// and `JsonSchema`, whose schema is the `inputSchema`), and a parameter of type
/// `RequestContext`, before or after it, is optional. A tool without arguments takes none
/// (its schema is the empty object).
///
/// The function stays as written; the macro adds beside it a struct of the same name
/// (type namespace only) whose `route()` returns the tool's `ToolRoute`, so registering it
/// is one call: `Router::new(..).tool_route(add::route())`. `route()` panics where
/// `ToolRoute::new` would (an argument type whose schema is not an object); `try_route()`
/// returns that `RouterError` instead, for `Router::try_tool_route` or a `RouterHandle`
/// registering at run time. The route is an ordinary
/// `ToolRoute`: chain `.deadline(..)`, `.icon(..)`, `.task_support(..)` on it as usual.
/// The existing `Router::tool(name, description, fn)` form is unchanged.
///
/// ```
/// use arbor::prelude::*;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     /// The first addend.
///     a: i64,
///     /// The second addend.
///     b: i64,
/// }
///
/// /// Adds two numbers.
/// #[tool(read_only, idempotent, open_world = false)]
/// async fn add(args: AddArgs) -> Result<String, ToolError> {
///     let sum = args.a.checked_add(args.b).ok_or_else(|| ToolError::failed("the sum overflows"))?;
///     Ok(sum.to_string())
/// }
///
/// #[derive(Serialize, JsonSchema)]
/// struct Deleted {
///     path: String,
/// }
///
/// #[derive(Deserialize, JsonSchema)]
/// struct PathArgs {
///     path: String,
/// }
///
/// /// Deletes a file.
/// #[tool(name = "files.delete", title = "Delete file", destructive, structured, scopes = ["files:write"])]
/// async fn delete(_cx: RequestContext, args: PathArgs) -> Result<Deleted, ToolError> {
///     Ok(Deleted { path: args.path })
/// }
///
/// let router = Router::new("calculator", "1.0.0").tool_route(add::route()).tool_route(delete::route());
/// assert_eq!(add::route().definition().description.as_deref(), Some("Adds two numbers."));
/// assert_eq!(delete::route().definition().name, "files.delete");
/// # let _ = router;
/// ```
///
/// The attribute's keys, all optional:
///
/// | key | meaning |
/// | --- | --- |
/// | `name = "..."` | the tool's name instead of the function's (1-128 of `A-Za-z0-9_.-`) |
/// | `title = "..."` | a display name (2025-06-18 on) |
/// | `description = "..."` | instead of the doc comment |
/// | `structured` | `outputSchema` from the `Ok` type, the value sent as `structuredContent` (`ToolRoute::with_output`) |
/// | `read_only`, `destructive`, `idempotent`, `open_world` | the behaviour hints; alone they mean `= true`, or say `= false` |
/// | `scopes = ["a", "b"]` | the OAuth scopes the tool needs, kept for authorization in the tool's `_meta` under `"arbor/scopes"` (a JSON array of strings) |
///
/// Compile errors, each at the offending token: a function that is not `async`, is
/// `unsafe`, generic or a method; no doc comment and no `description`; more than one
/// argument parameter; an unknown or repeated key; a name clients would drop; a scope that
/// is not an OAuth scope token.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let original = proc_macro2::TokenStream::from(item.clone());
    match tool::expand(attr.into(), item.into()) {
        Ok(expansion) => expansion.into(),
        // The function is kept, so the only error the user sees is this one.
        Err(error) => {
            let error = error.to_compile_error();
            quote::quote!(#error #original).into()
        }
    }
}

/// Derives `JsonSchema` (schemars 1.x) through the facade: `#[derive(arbor::JsonSchema)]`,
/// or `#[derive(JsonSchema)]` after `use arbor::prelude::*;`, in a crate with no schemars
/// dependency of its own. Every `#[schemars(...)]`, `#[serde(...)]` and doc comment means
/// what it means to schemars' derive, which does the work.
///
/// ```
/// #[derive(serde::Deserialize, arbor::JsonSchema)]
/// struct Search {
///     /// What to look for.
///     query: String,
///     #[serde(default)]
///     limit: Option<u32>,
/// }
///
/// let router = arbor::server::Router::new("s", "1")
///     .tool("search", "Searches", |args: Search| async move { format!("{} {:?}", args.query, args.limit) });
/// # let _ = router;
/// ```
#[proc_macro_derive(JsonSchema, attributes(schemars, serde, validate, garde))]
pub fn derive_json_schema(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    schema::expand(input).unwrap_or_else(syn::Error::into_compile_error).into()
}
