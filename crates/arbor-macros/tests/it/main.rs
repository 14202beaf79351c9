//! The macros as a user gets them: through `arbor` alone. This crate has no schemars
//! dependency (normal or dev), so everything here compiling proves that
//! `#[derive(arbor::JsonSchema)]` and `#[arbor::tool]` need none.

mod derive_needs_no_schemars_dependency;
mod tool_attribute_makes_a_plain_async_fn_a_tool;
