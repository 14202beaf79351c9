//! The neutral MCP model: one Rust type per schema type, one file per spec chapter.
//!
//! Each type is a superset of every revision's shape. Members a later revision added
//! are `Option`s, left out of the output when `None`, so a value built with only one
//! revision's members is valid against that revision's schema. Every struct keeps
//! the members it does not know in `extra` and every `_meta` as [`crate::meta::Meta`],
//! so a decode→encode round trip loses nothing.
//!
//! This module is not the method table (`methods` is) and does not decide what a
//! revision allows (the era modules do).

#[macro_use]
pub(crate) mod wire;

pub mod capabilities;
pub mod common;
pub mod completion;
mod constructors;
pub mod content;
pub mod elicitation;
pub mod lifecycle;
pub mod logging;
pub mod mrtr;
pub mod prompts;
pub mod resources;
pub mod roots;
pub mod sampling;
pub mod subscriptions;
pub mod tasks;
pub mod tools;
pub mod utilities;
