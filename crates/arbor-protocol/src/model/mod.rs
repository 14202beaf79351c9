//! The neutral MCP model: one Rust type per schema type, one file per spec chapter.
//!
//! Each type is a superset of every revision's shape. Members a later revision added
//! are `Option`s, left out of the output when `None`, so a value built with only one
//! revision's members is valid against that revision's schema. Every struct keeps
//! the members it does not know in `extra` and every `_meta` as [`crate::meta::Meta`],
//! so a decode→encode round trip loses nothing.
//!
//! Because of `extra`, every model struct is `#[non_exhaustive]`: outside this crate a
//! struct literal does not compile, so adding a member is not a breaking change.
//!
//! ```compile_fail,E0639
//! use arbor_protocol::model::resources::Resource;
//!
//! let resource = Resource { uri: "file:///a.txt".into(), name: "a".into(), ..Default::default() };
//! ```
//!
//! Each type is built with its constructor instead: `new(required members)`, or
//! `default()` when every member is optional, then one `with_*` setter per optional
//! member. Fields stay public, to read and to assign on a value.
//!
//! ```
//! use arbor_protocol::model::prompts::{GetPromptResult, PromptMessage};
//! use arbor_protocol::model::resources::Resource;
//!
//! let resource = Resource::new("file:///a.txt", "a").with_mime_type("text/plain").with_size(12);
//! let mut prompt = GetPromptResult::new(vec![PromptMessage::user("Summarise a.txt")]);
//! prompt.description = Some("Summary".into());
//! assert_eq!(
//!     serde_json::to_value(&resource).unwrap(),
//!     serde_json::json!({"uri": "file:///a.txt", "name": "a", "mimeType": "text/plain", "size": 12})
//! );
//! assert_eq!(serde_json::to_value(&prompt).unwrap()["messages"][0]["role"], "user");
//! ```
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
pub mod skills;
pub mod subscriptions;
pub mod tasks;
pub mod timestamp;
pub mod tools;
pub mod utilities;
