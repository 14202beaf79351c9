//! Shared state for running several Arbor nodes behind a load balancer, on Redis; each
//! store implements a trait of arbor-server whose in-memory twin stays the default.
//!
//! Today that is [`RedisTaskStore`], an [`arbor_server::TaskStore`]: a task created
//! through one node is seen by `tasks/get`, `tasks/list` and `tasks/result` through any
//! other, its `tasks/update` input and `tasks/cancel` through any other reach the node
//! running it (each store is a node with a random id, listening on its own pub/sub
//! channel; an owner that is gone is a clear -32603, never a hang), and a task whose node
//! stopped is failed once its lease has expired instead of staying `working` forever; and
//! [`RedisKeyring`], the `requestState` keys every node reads, rotated in stages that wait
//! for every live node; and [`RedisSessionStore`], arbor-http's `SessionStore`: a legacy
//! session opened through one node is adopted by any other, its streams resume anywhere
//! with `Last-Event-ID`, and a client's answer to a server→client request reaches the node
//! that asked. This crate is not a cluster manager: nodes do not know each other, they
//! only share a Redis (a task's lease names the node running it). Invariant: every store
//! here keeps the state machine and the owner rules of its arbor-server twin (it applies
//! `TaskRecord::apply`, never its own, and forwarded input is checked by the owner's own
//! `tasks/update` code).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod keyring;
pub mod sessions;
pub mod tasks;

pub use keyring::{KeyringError, RedisKeyring};
pub use sessions::{RedisSessionStore, RedisSessionStoreOptions, SessionStoreConnectError};
pub use tasks::{ConnectError, RedisTaskStore, RedisTaskStoreOptions};
