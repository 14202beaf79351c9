//! The seam for serving legacy sessions from several nodes behind one load balancer: what
//! a node shares about a session so that any other node can serve its next request.
//!
//! A [`SessionStore`] keeps, for each 2025-03-26 … 2025-11-25 session, the record another
//! node needs to adopt it ([`SessionRecord`]: its tenant, its owner, the `initialize` it
//! opened with, its log level), the events of its SSE streams (so `Last-Event-ID` resumes
//! on any node), which node waits for the answer to each server→client request, and a
//! way to reach the other nodes ([`Delivery`]). `arbor-cluster`'s `RedisSessionStore` is
//! the implementation; without one ([`HttpConfig::session_store`](crate::HttpConfig)
//! unset) sessions live in one node's memory, as they always did.
//!
//! It is not the task store (`arbor_server::TaskStore`) nor the `requestState` keyring:
//! 2026-07-28 requests have no session and need neither this nor stickiness.
//!
//! Invariants an implementation keeps: a record is visible to every node once `save`
//! returned; `end` is seen by every node (its copy is closed); the events of one stream
//! come back in the order and with the seqs they were appended with; the answer to a
//! server→client request is handed to the node that asked at most once
//! ([`SessionStore::answer`] takes the entry). Every call is bounded in time: a store that
//! cannot reach its backend answers [`SessionStoreError`], never hangs.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// What a node needs to serve a session it did not open.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// The tenant it was opened in (`None`: the default tenant).
    pub tenant: Option<String>,
    /// The principal that opened it (its key, compared as an exact string), when
    /// authorization is on: the only one it serves.
    pub owner: Option<String>,
    /// The params of the `initialize` it was opened with: a node adopting the session
    /// replays them (and `notifications/initialized`) into its own connection, so it
    /// negotiates the same revision and sees the same client capabilities.
    pub initialize: serde_json::Value,
    /// The params of the last `logging/setLevel`, replayed after `initialize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<serde_json::Value>,
}

/// One event of a stream, as appended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its number in the stream (the `N` of the event id `S-N`).
    pub seq: u64,
    /// The JSON-RPC message, one line of JSON.
    pub data: Bytes,
}

/// What [`SessionStore::read`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventPage {
    /// The stream is known (something was appended and it has not expired).
    pub exists: bool,
    /// The events after the cursor, oldest first (at most the limit asked).
    pub events: Vec<StoredEvent>,
    /// No event will follow those returned.
    pub finished: bool,
    /// The last seq given out (for the session-wide stream, where a new reader starts).
    pub last_seq: u64,
}

/// What became of a client's answer handed to [`SessionStore::answer`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answered {
    /// The node named here waits for it (possibly this one: the caller then submits it
    /// itself); other nodes' answers were already sent on.
    Waiting {
        /// The node that asked.
        node: String,
        /// Whether the answer was sent to that node (false when the node is this one).
        sent: bool,
    },
    /// No node waits for an answer with this id (already answered, never asked, or
    /// its request ended).
    NobodyWaits,
    /// The node that asked is gone: nobody will read the answer.
    OwnerGone,
}

/// A message from another node for this one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// The client's answer to a server→client request this node sent on `session`.
    Answer {
        /// The session.
        session: String,
        /// The JSON-RPC response, as the client sent it.
        body: Bytes,
    },
    /// A message every copy of `session` applies: `notifications/cancelled` (the request
    /// runs on one node only), `logging/setLevel`, `resources/unsubscribe`.
    Relay {
        /// The session.
        session: String,
        /// The JSON-RPC message to submit to this node's copy.
        body: Bytes,
        /// When the sending node waits for it to be applied
        /// ([`SessionStore::relay_applied`]): the token this node hands to
        /// [`SessionStore::applied`] once it has submitted the message to its copy (or found
        /// it holds none).
        ack: Option<String>,
    },
    /// The session ended through another node (DELETE) or expired: close this copy.
    Ended {
        /// The session.
        session: String,
    },
}

/// A store call that could not be done.
#[derive(Debug, thiserror::Error)]
pub enum SessionStoreError {
    /// The backend did not answer (down, unreachable, or past the call's timeout).
    #[error("the session store is unavailable: {0}")]
    Unavailable(String),
    /// The backend answered something this store cannot read.
    #[error("the session store holds a malformed entry: {0}")]
    Malformed(String),
}

/// Shared legacy sessions (see the module's documentation). Object safe: the server
/// holds an `Arc<dyn SessionStore>`.
pub trait SessionStore: Send + Sync + fmt::Debug + 'static {
    /// This node's name, unique among the nodes sharing the store.
    fn node(&self) -> &str;

    /// Saves a new session's record, kept for `ttl` unless [`keep`](Self::keep) renews it.
    fn save<'a>(&'a self, record: &'a SessionRecord, ttl: Duration) -> BoxFuture<'a, Result<(), SessionStoreError>>;

    /// The record of session `id`, if it lives.
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, SessionStoreError>>;

    /// Records the params of the session's latest `logging/setLevel`.
    fn set_log_level<'a>(
        &'a self,
        id: &'a str,
        params: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<(), SessionStoreError>>;

    /// Ends session `id` everywhere: its record and events go, and every node is sent
    /// [`Delivery::Ended`].
    fn end<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), SessionStoreError>>;

    /// Renews the sessions this node used (for another `ttl`), and answers which of
    /// `idle` (sessions this node holds but did not use) no longer live.
    fn keep<'a>(
        &'a self,
        used: &'a [Arc<str>],
        idle: &'a [Arc<str>],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Vec<Arc<str>>, SessionStoreError>>;

    /// Appends an event to stream `stream` of `session`, keeping the last `cap` and for
    /// `ttl`. `seq: Some(n)` for a stream with one writer (a POST's); `None` for the
    /// session-wide stream (stream 0) every node writes to, numbered by the store. Answers
    /// the seq.
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        seq: Option<u64>,
        data: &'a [u8],
        cap: usize,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, SessionStoreError>>;

    /// Marks stream `stream` of `session` finished: no event follows.
    fn finish<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), SessionStoreError>>;

    /// The events of a stream after seq `after`, at most `limit`.
    fn read<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, Result<EventPage, SessionStoreError>>;

    /// Records that this node sent a server→client request with id `id` (its JSON text)
    /// on `session` and waits for the answer (for at most `ttl`).
    fn asked<'a>(
        &'a self,
        session: &'a str,
        id: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), SessionStoreError>>;

    /// Hands the client's answer `body` to the node waiting for id `id` on `session`,
    /// taking the entry (a second answer finds nobody waiting).
    fn answer<'a>(
        &'a self,
        session: &'a str,
        id: &'a str,
        body: &'a [u8],
    ) -> BoxFuture<'a, Result<Answered, SessionStoreError>>;

    /// Sends `body` to every other node's copy of `session` ([`Delivery::Relay`]).
    fn relay<'a>(&'a self, session: &'a str, body: &'a [u8]) -> BoxFuture<'a, Result<(), SessionStoreError>>;

    /// [`relay`](Self::relay), then waits until every node that heard it has applied it
    /// (each node's copy then serves the client's next request after it): `Ok(true)`, or
    /// `Ok(false)` when `within` passed first or the store cannot tell. The default only
    /// relays.
    fn relay_applied<'a>(
        &'a self,
        session: &'a str,
        body: &'a [u8],
        within: Duration,
    ) -> BoxFuture<'a, Result<bool, SessionStoreError>> {
        let _ = within;
        Box::pin(async move { self.relay(session, body).await.map(|()| false) })
    }

    /// Tells the node that relayed a message carrying `ack` ([`Delivery::Relay`]) that this
    /// node applied it. The default does nothing (its `relay_applied` waits on nobody).
    fn applied<'a>(&'a self, ack: &'a str) -> BoxFuture<'a, Result<(), SessionStoreError>> {
        let _ = ack;
        Box::pin(async { Ok(()) })
    }

    /// The messages other nodes send this one. Given once (later calls answer `None`);
    /// the server reads it for its life.
    fn deliveries(&self) -> Option<mpsc::Receiver<Delivery>>;

    /// How often a reader of a stream another node writes asks for new events.
    fn poll_interval(&self) -> Duration {
        Duration::from_millis(50)
    }
}
