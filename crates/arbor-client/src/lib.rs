//! The Arbor MCP client runtime (under construction: see the `handler` module and the
//! connection modules as they land).

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub mod handler;
