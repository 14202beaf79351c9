//! Shared state for running several Arbor nodes behind a load balancer, on Redis; each
//! store implements a trait of arbor-server whose in-memory twin stays the default.
//!
//! Today that is [`RedisTaskStore`], an [`arbor_server::TaskStore`]: a task created
//! through one node is seen by `tasks/get`, `tasks/list` and `tasks/result` through any
//! other, and a task whose node stopped is failed once its lease has expired instead of
//! staying `working` forever; and [`RedisKeyring`], the `requestState` keys every node
//! reads, rotated in stages that wait for every live node. This crate is not a cluster
//! manager: nodes do not know each other, they only share a Redis. Invariant: every store
//! here keeps the state machine and the owner rules of its arbor-server twin (it applies
//! `TaskRecord::apply`, never its own).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod keyring;
pub mod tasks;

pub use keyring::{KeyringError, RedisKeyring};
pub use tasks::{ConnectError, RedisTaskStore, RedisTaskStoreOptions};
