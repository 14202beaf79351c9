//! How a [`TaskRecord`] is kept in Redis: a private serde mirror ([`Stored`]) and the key
//! names.
//!
//! The mirror exists so arbor-server's types stay free of serde derives that are not wire
//! types; the parts that are wire types (`TaskStatus`, `ErrorObject`, `InputRequests`,
//! `JsonObject`) serialize as they travel. Timestamps are milliseconds since the epoch, so
//! a record read back loses sub-millisecond precision. It is not a schema migration layer:
//! an unreadable record is reported as the store failing. Invariant: two owners are equal
//! exactly when their [`StoredOwner`]s are, which is what every owner check compares.

use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arbor_protocol::jsonrpc::ErrorObject;
use arbor_protocol::model::common::JsonObject;
use arbor_protocol::model::mrtr::InputRequests;
use arbor_protocol::model::tasks::TaskStatus;
use arbor_server::tasks::TaskOwner;
use arbor_server::{Requester, TaskRecord};
use serde::{Deserialize, Serialize};

/// A requester as stored. `Other` keeps a variant this crate does not know yet (the enum
/// is non-exhaustive) by its debug form: still compared exactly, so never widened to
/// another requester.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum StoredRequester {
    Principal(String),
    Peer(IpAddr),
    Unknown,
    Other(String),
}

/// An owner as stored and compared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct StoredOwner {
    tenant: String,
    requester: StoredRequester,
}

impl StoredOwner {
    pub(super) fn of(owner: &TaskOwner) -> StoredOwner {
        let requester = match &owner.requester {
            Requester::Principal(p) => StoredRequester::Principal(p.to_string()),
            Requester::Peer(ip) => StoredRequester::Peer(*ip),
            Requester::Unknown => StoredRequester::Unknown,
            other => StoredRequester::Other(format!("{other:?}")),
        };
        StoredOwner { tenant: owner.tenant.clone(), requester }
    }

    fn to_owner(&self) -> TaskOwner {
        let requester = match &self.requester {
            StoredRequester::Principal(p) => Requester::new(Some(p), None),
            StoredRequester::Peer(ip) => Requester::peer(*ip),
            // Only reached for a variant this build cannot name; the check is on the
            // stored form, so this copy never decides who sees the record.
            StoredRequester::Unknown | StoredRequester::Other(_) => Requester::Unknown,
        };
        TaskOwner { tenant: self.tenant.clone(), requester }
    }

    /// A stable 64-bit FNV-1a hash of the owner, naming its sorted set. Stable across
    /// builds and nodes (std's hasher is not promised to be); a collision only makes two
    /// owners share a set, never a record, since every read checks the owner itself.
    pub(super) fn hash(&self) -> String {
        let bytes = serde_json::to_vec(self).expect("an owner serializes");
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for b in bytes {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        format!("{hash:016x}")
    }
}

/// A record as stored (JSON under `{prefix}task:{id}`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Stored {
    id: String,
    pub(super) owner: StoredOwner,
    status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status_message: Option<String>,
    created_at_ms: u64,
    updated_at_ms: u64,
    ttl_ms: u64,
    poll_interval_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<JsonObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ErrorObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input_requests: Option<InputRequests>,
}

pub(super) fn ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

pub(super) fn now_ms() -> u64 {
    ms(SystemTime::now())
}

impl Stored {
    pub(super) fn of(record: &TaskRecord) -> Stored {
        Stored {
            id: record.id.clone(),
            owner: StoredOwner::of(&record.owner),
            status: record.status,
            status_message: record.status_message.clone(),
            created_at_ms: ms(record.created_at),
            updated_at_ms: ms(record.updated_at),
            ttl_ms: record.ttl.as_millis() as u64,
            poll_interval_ms: record.poll_interval.as_millis() as u64,
            result: record.result.clone(),
            error: record.error.clone(),
            input_requests: record.input_requests.clone(),
        }
    }

    pub(super) fn to_record(&self) -> TaskRecord {
        let at = |ms: u64| UNIX_EPOCH + Duration::from_millis(ms);
        TaskRecord {
            id: self.id.clone(),
            owner: self.owner.to_owner(),
            status: self.status,
            status_message: self.status_message.clone(),
            created_at: at(self.created_at_ms),
            updated_at: at(self.updated_at_ms),
            ttl: Duration::from_millis(self.ttl_ms),
            poll_interval: Duration::from_millis(self.poll_interval_ms),
            result: self.result.clone(),
            error: self.error.clone(),
            input_requests: self.input_requests.clone(),
        }
    }

    /// When the record expires (its Redis key's `PEXPIREAT`): its TTL from creation.
    pub(super) fn expires_at_ms(&self) -> u64 {
        self.created_at_ms.saturating_add(self.ttl_ms)
    }
}

/// The key names under one prefix.
#[derive(Clone, Debug)]
pub(super) struct Keys {
    prefix: String,
}

impl Keys {
    pub(super) fn new(prefix: &str) -> Keys {
        Keys { prefix: prefix.to_owned() }
    }

    /// The record.
    pub(super) fn task(&self, id: &str) -> String {
        format!("{}task:{id}", self.prefix)
    }

    /// The lease of a non-terminal record: present while its node is alive.
    pub(super) fn lease(&self, id: &str) -> String {
        format!("{}lease:{id}", self.prefix)
    }

    /// A node's channel: signals for the tasks it runs, acks of those it forwarded.
    pub(super) fn node(&self, node: &str) -> String {
        format!("{}node:{node}", self.prefix)
    }

    /// An owner's ids, scored by creation sequence.
    pub(super) fn owner(&self, owner: &StoredOwner) -> String {
        format!("{}owner:{}", self.prefix, owner.hash())
    }

    /// Every id, scored by expiry (ms since the epoch): the global cap and the sweep.
    pub(super) fn live(&self) -> String {
        format!("{}tasks", self.prefix)
    }

    /// The creation sequence (`INCR`).
    pub(super) fn seq(&self) -> String {
        format!("{}seq", self.prefix)
    }
}
