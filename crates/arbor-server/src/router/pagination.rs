//! Opaque pagination cursors.
//!
//! A cursor is the URL-safe base64 of `<list>:<sequence number>`: which list it pages
//! (so a tools cursor is refused by `prompts/list`) and the sequence number of the last
//! entry already sent (see `registry`). The next page starts after that number, so adding
//! or removing entries between two pages neither repeats nor skips the entries that stay.
//! That is why the cursor holds no list generation: a generation would have to fail every
//! cursor on any change, and clients do not retry. Two servers with the same registrations
//! issue the same cursors, which suits stateless 2026-07-28 deployments behind a balancer.
//!
//! Cursors are not secrets and not signed: a forged one only selects another page of the
//! same public list. Invariant: a cursor that does not decode, names another list, or
//! names a number never issued is -32602, as the spec asks; an empty string is a cursor
//! (an invalid one), never "the start".

use super::registry::Registry;
use arbor_protocol::error::McpError;
use arbor_protocol::model::common::Cursor;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use std::sync::Arc;

/// Which list a cursor pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListId {
    Tools,
    Prompts,
    Resources,
    Templates,
}

impl ListId {
    fn tag(self) -> &'static str {
        match self {
            ListId::Tools => "t",
            ListId::Prompts => "p",
            ListId::Resources => "r",
            ListId::Templates => "u",
        }
    }
}

pub(crate) fn encode(list: ListId, after: u64) -> Cursor {
    URL_SAFE_NO_PAD.encode(format!("{}:{after}", list.tag()))
}

/// The sequence number a cursor continues after, if it is one of ours for `list`.
pub(crate) fn decode(list: ListId, cursor: &str) -> Option<u64> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    let (tag, after) = text.split_once(':')?;
    if tag != list.tag() {
        return None;
    }
    // `u64::from_str` accepts a leading `+`; a cursor we issued never has one.
    if after.is_empty() || !after.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    after.parse().ok()
}

/// One page of `registry` for the request's `cursor`: the entries and the next cursor.
pub(crate) fn page<T>(
    registry: &Registry<T>,
    list: ListId,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<Arc<T>>, Option<Cursor>), McpError> {
    let after = match cursor {
        None => 0,
        Some(c) => decode(list, c).filter(|&seq| registry.issued(seq)).ok_or_else(|| {
            McpError::invalid_params(format!("Invalid cursor: {:?}", arbor_protocol::reflect::Clamped(c).to_string()))
        })?,
    };
    let (entries, next) = registry.page(after, size);
    Ok((entries, next.map(|seq| encode(list, seq))))
}
