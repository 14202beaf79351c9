//! A request's head as the endpoint's handlers read it: its `Parts` (which [`Head`]
//! dereferences to) and what the server learnt of it that the head does not say: the
//! peer's address and what the tenant gate found.
//!
//! Not a request extension: each entry in a request's extensions is a box, and the first
//! also the map and its table, all freed with the request. The endpoint served straight
//! from the accept loop (`serve::Accept::direct`) stamps no extension at all; a request
//! that came through the router brings its peer as axum's `ConnectInfo`, read once here.
//!
//! Invariant: `gate` is set only by `tenant::admit_with`, once per request.

use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};

use axum::http::request::Parts;

use crate::tenant::Gate;

/// A request's head and what the server learnt of it.
#[derive(Debug)]
pub(crate) struct Head {
    parts: Parts,
    /// The peer that sent it: from the accept loop, or axum's `ConnectInfo` (set by
    /// `into_make_service_with_connect_info::<SocketAddr>()` when the router is mounted in
    /// an application); `None` when neither said (such requests share one requester).
    pub(crate) peer: Option<SocketAddr>,
    /// What the tenant gate found, once it admitted the request.
    pub(crate) gate: Option<Gate>,
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
