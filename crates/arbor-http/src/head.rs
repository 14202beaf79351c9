//! A request's head as the endpoint's handlers read it: its `Parts` (which [`Head`]
//! dereferences to) and what the server learnt of it that the head does not say: the
//! peer's address and what the tenant gate found.
//!
//! Not a request extension: each entry in a request's extensions is a box, and the first
//! also the map and its table, all freed with the request. The endpoint served straight
//! from the accept loop (`serve::Accept::direct`) stamps no extension at all; a request
//! that came through the router brings its peer as axum's `ConnectInfo`, read once here.
//!
//! [`Known`]: the headers every request is checked against, found in one pass over the
//! head's map.
//!
//! Invariant: `gate` is set only by the tenant gate (`tenant::gate_with`), once per request.

use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};

use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};

use crate::tenant::Gate;

/// A request's head and what the server learnt of it.
#[derive(Debug)]
pub(crate) struct Head {
    /// Named, not only reached through `Deref`, so that a [`Known`] borrowing its headers
    /// can live beside writes to its extensions and to `gate`.
    pub(crate) parts: Parts,
    /// The peer that sent it: from the accept loop, or axum's `ConnectInfo` (set by
    /// `into_make_service_with_connect_info::<SocketAddr>()` when the router is mounted in
    /// an application); `None` when neither said (such requests share one requester).
    pub(crate) peer: Option<SocketAddr>,
    /// What the tenant gate found, once it admitted the request.
    pub(crate) gate: Option<Gate>,
}

/// The headers the endpoint reads on every request, each the first of its name (as
/// `HeaderMap::get` answers), found in one pass in which each name is compared once: a
/// `get` hashes its name and probes the map, about 130 instructions each, and a
/// 2026-07-28 call made nine. Borrowed from the head's map (see [`Head::parts`]).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Known<'h> {
    pub(crate) host: Option<&'h HeaderValue>,
    pub(crate) origin: Option<&'h HeaderValue>,
    pub(crate) content_type: Option<&'h HeaderValue>,
    pub(crate) content_length: Option<&'h HeaderValue>,
    pub(crate) accept: Option<&'h HeaderValue>,
    /// More than one `Accept` value.
    pub(crate) accept_repeated: bool,
    pub(crate) session_id: Option<&'h HeaderValue>,
    pub(crate) protocol_version: Option<&'h HeaderValue>,
    pub(crate) method: Option<&'h HeaderValue>,
    pub(crate) name: Option<&'h HeaderValue>,
}

impl<'h> Known<'h> {
    /// The known headers of `headers`.
    pub(crate) fn of(headers: &'h HeaderMap) -> Known<'h> {
        let mut known = Known::default();
        for (name, value) in headers {
            // Lowercase, as a `HeaderName` always is.
            let slot = match name.as_str() {
                "host" => &mut known.host,
                "origin" => &mut known.origin,
                "content-type" => &mut known.content_type,
                "content-length" => &mut known.content_length,
                "accept" => {
                    known.accept_repeated |= known.accept.is_some();
                    &mut known.accept
                }
                "mcp-session-id" => &mut known.session_id,
                "mcp-protocol-version" => &mut known.protocol_version,
                "mcp-method" => &mut known.method,
                "mcp-name" => &mut known.name,
                _ => continue,
            };
            slot.get_or_insert(value);
        }
        known
    }
}

impl Head {
    /// `parts` of a request from `peer`.
    pub(crate) fn new(parts: Parts, peer: Option<SocketAddr>) -> Head {
        Head { parts, peer, gate: None }
    }

    /// The head, for a request that came through the router.
    pub(crate) fn routed(parts: Parts) -> Head {
        let peer = crate::server::peer_addr(&parts);
        Head::new(parts, peer)
    }

    /// The `Parts`, given back (their header map goes round again: `guard::recycle_headers`).
    pub(crate) fn into_parts(self) -> Parts {
        self.parts
    }
}

impl Deref for Head {
    type Target = Parts;

    fn deref(&self) -> &Parts {
        &self.parts
    }
}

impl DerefMut for Head {
    fn deref_mut(&mut self) -> &mut Parts {
        &mut self.parts
    }
}
