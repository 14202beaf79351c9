//! The fixture: short-lease options, owners and records, a store on a throwaway Redis,
//! and a raw JSON peer over the in-memory transport (the shared `tests::peer::Exchange`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use arbor_cluster::{RedisTaskStore, RedisTaskStoreOptions};
use arbor_server::tasks::TaskOwner;
use arbor_server::{Requester, TaskRecord, Transport};
use arbor_transport::{FrameReader, FrameWriter};
use serde_json::Value;
use tests::peer::Exchange;

/// The lease every test uses: short, so a dead node's task fails quickly.
pub const LEASE: Duration = Duration::from_millis(300);

pub fn options() -> RedisTaskStoreOptions {
    RedisTaskStoreOptions::default().lease(LEASE).poll_interval(Duration::from_millis(20))
}

pub async fn store(url: &str, options: RedisTaskStoreOptions) -> RedisTaskStore {
    RedisTaskStore::connect(url, options).await.expect("the test's redis-server is up")
}

pub fn owner(tenant: &str, principal: &str) -> TaskOwner {
    TaskOwner { tenant: tenant.into(), requester: Requester::new(Some(principal), None) }
}

/// A new `working` record of `owner` with a unique id.
pub fn record(owner: &TaskOwner, ttl: Duration) -> TaskRecord {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let id = format!("task-{:08}", NEXT.fetch_add(1, Ordering::Relaxed));
    TaskRecord::new(id, owner.clone(), ttl, Duration::from_millis(100))
}

/// A client end over the in-memory transport, reading raw JSON values.
pub struct Peer {
    reader: FrameReader,
    writer: FrameWriter,
}

impl Peer {
    pub fn new(transport: Transport) -> Peer {
        let (reader, writer) = transport.into_parts();
        Peer { reader, writer }
    }

    pub async fn close(&self) {
        self.writer.close().await;
    }
}

impl Exchange for Peer {
    async fn write_message(&mut self, message: Value) {
        self.writer.send(message.to_string().as_bytes()).unwrap();
    }

    async fn read_message(&mut self) -> Value {
        let next = tokio::time::timeout(Duration::from_secs(10), self.reader.recv()).await;
        let frame = next.expect("no message within 10 s").unwrap().expect("the server closed the connection");
        serde_json::from_slice(&frame.unwrap()).unwrap()
    }
}
