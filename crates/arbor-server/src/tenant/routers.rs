//! Per-tenant handlers, hot-swapped: which [`ServerHandler`](crate::ServerHandler) each
//! tenant's requests run on, and the version of it they run.
//!
//! A table maps a tenant name to its [`TenantSlot`]: an `ArcSwap` of the [`Versioned`]
//! handler the tenant runs now, the server's own (version 0) until
//! `Server::set_tenant_handler` gives it one. A connection looks its tenant's slot up once,
//! when it starts; each request then loads the slot once, when it is spawned, and keeps
//! that `Arc` to its end: a swap replaces what later requests load and touches nothing a
//! running request holds. A swap also starts a forwarder of the new handler's
//! `list_changes` onto the tenant's own bus topics (and ends the old handler's), and the
//! server announces it there, so only that tenant's clients hear of it.
//!
//! What it is not: a second capability set. The server advertises its own handler's
//! `info()` and `capabilities()` to every client; a tenant handler is expected to serve
//! within them, and its own are never read. Nor is it a router layer: "the shared tools
//! plus some, minus others" is a [`Router::fork`](crate::Router::fork) edited and set here.
//!
//! Invariants: a request runs, start to end, on the handler (and version) it was admitted
//! with; a tenant's version only grows, and is 0 exactly while the tenant has only ever
//! run the server's handler; at most one forwarder runs per slot, for the handler the slot
//! holds now, and none once the server has shut down. Slots of tenants that never had a
//! handler of their own are dropped from the table once no connection holds them, so the
//! table is bounded by the tenants configured plus those connected.

use std::collections::HashMap;
use std::sync::Arc;

use arbor_bus::Bus;
use arc_swap::ArcSwap;
use parking_lot::Mutex;
use tokio::task::JoinHandle;

use crate::dyn_handler::DynServerHandler;
use crate::handler::ListKind;
use crate::subscription::topics;

/// A handler as a request runs it: with the tenant's version it was current at.
pub(crate) struct Versioned {
    /// 0 for the server's handler on a tenant that never had one of its own.
    pub(crate) version: u64,
    pub(crate) handler: Arc<dyn DynServerHandler>,
}

/// One tenant's handler, swapped atomically.
pub(crate) struct TenantSlot {
    tenant: Arc<str>,
    current: ArcSwap<Versioned>,
    /// Serialises swaps, so versions are handed out in the order handlers are stored, and
    /// holds the current handler's forwarder.
    swap: Mutex<Swap>,
}

#[derive(Default)]
struct Swap {
    /// The slot holds a handler of its own (not the server's), whose list changes are forwarded.
    own: bool,
    forwarder: Option<JoinHandle<()>>,
}

impl TenantSlot {
    fn new(tenant: &str, server: Arc<Versioned>) -> TenantSlot {
        TenantSlot { tenant: Arc::from(tenant), current: ArcSwap::new(server), swap: Mutex::default() }
    }

    /// The handler a request admitted now runs on, for its whole life.
    pub(crate) fn load(&self) -> Arc<Versioned> {
        self.current.load_full()
    }

    /// The tenant's version now.
    pub(crate) fn version(&self) -> u64 {
        self.current.load().version
    }

    /// Starts forwarding the held handler's list changes, unless it is the server's or
    /// a forwarder runs already. Called under the swap lock.
    fn forward(&self, swap: &mut Swap, running: &Running) {
        if !swap.own || swap.forwarder.is_some() {
            return;
        }
        let Some(mut changes) = self.current.load().handler.list_changes() else { return };
        let (tenant, bus) = (self.tenant.clone(), running.bus.clone());
        swap.forwarder = Some(running.runtime.spawn(async move {
            // A lagging `ListChanges` yields every kind once: every list may have changed.
            while let Some(kind) = changes.recv().await {
                if bus.publish(topics::tenant_list_changed_message(&tenant, kind)).is_err() {
                    return;
                }
            }
        }));
    }
}

impl Swap {
    fn stop_forwarder(&mut self) {
        if let Some(task) = self.forwarder.take() {
            task.abort();
        }
    }
}

/// Where forwarders run and publish, while the server serves.
#[derive(Clone)]
struct Running {
    bus: Arc<dyn Bus>,
    runtime: tokio::runtime::Handle,
}

/// The table of tenant slots, one per server (kept in `Shared`).
pub(crate) struct TenantHandlers {
    /// The server's handler as version 0: what a tenant without one of its own runs.
    server: Arc<Versioned>,
    table: Mutex<Table>,
    /// Set while the tree runs (`start`), cleared at shutdown. Read under a slot's swap
    /// lock, so a swap racing `start` or `shutdown` leaves exactly the right forwarder.
    running: Mutex<Option<Running>>,
}

struct Table {
    slots: HashMap<Arc<str>, Arc<TenantSlot>>,
    /// The table is swept of idle slots when it reaches this size.
    sweep_at: usize,
}

/// The smallest table size that triggers a sweep.
const SWEEP_MIN: usize = 64;

impl TenantHandlers {
    pub(crate) fn new(server: Arc<dyn DynServerHandler>) -> TenantHandlers {
        TenantHandlers {
            server: Arc::new(Versioned { version: 0, handler: server }),
            table: Mutex::new(Table { slots: HashMap::new(), sweep_at: SWEEP_MIN }),
            running: Mutex::new(None),
        }
    }

    /// The tenant's slot, made if it has none: what a connection holds for its life.
    pub(crate) fn slot(&self, tenant: &str) -> Arc<TenantSlot> {
        let mut table = self.table.lock();
        if let Some(slot) = table.slots.get(tenant) {
            return slot.clone();
        }
        if table.slots.len() >= table.sweep_at {
            // Only the table holds these, and they hold the server's handler at version
            // 0: a connection starting later makes the same slot again.
            table.slots.retain(|_, slot| slot.version() > 0 || Arc::strong_count(slot) > 1);
            table.sweep_at = (table.slots.len() * 2).max(SWEEP_MIN);
        }
        let slot = Arc::new(TenantSlot::new(tenant, self.server.clone()));
        table.slots.insert(slot.tenant.clone(), slot.clone());
        slot
    }

    /// What the tenant runs now, without making a slot for it.
    pub(crate) fn current(&self, tenant: &str) -> Arc<Versioned> {
        match self.table.lock().slots.get(tenant) {
            Some(slot) => slot.load(),
            None => self.server.clone(),
        }
    }

    /// The tenant's version now (0 for a tenant without a slot).
    pub(crate) fn version(&self, tenant: &str) -> u64 {
        self.table.lock().slots.get(tenant).map_or(0, |slot| slot.version())
    }

    /// Makes `handler` the tenant's (`None`: the server's again) and returns its version.
    /// While the server runs, the old handler's forwarder is ended, the new one's started,
    /// and `list_changed` of every kind published on the tenant's topics, after the
    /// handler was stored: a client that re-lists on hearing it sees the new lists.
    pub(crate) fn swap(&self, tenant: &str, handler: Option<Arc<dyn DynServerHandler>>) -> u64 {
        let slot = self.slot(tenant);
        let mut swap = slot.swap.lock();
        let version = slot.version() + 1;
        swap.own = handler.is_some();
        let handler = handler.unwrap_or_else(|| self.server.handler.clone());
        slot.current.store(Arc::new(Versioned { version, handler }));
        swap.stop_forwarder();
        if let Some(running) = self.running.lock().clone() {
            slot.forward(&mut swap, &running);
            for kind in [ListKind::Tools, ListKind::Prompts, ListKind::Resources] {
                // A bus that refuses (Redis down) loses the announcement, not the swap.
                let _ = running.bus.publish(topics::tenant_list_changed_message(tenant, kind));
            }
        }
        version
    }

    /// The tree started: forward every tenant handler's list changes onto `bus` from now
    /// on. Called inside the runtime the forwarders are to run on.
    pub(crate) fn start(&self, bus: Arc<dyn Bus>) {
        let running = Running { bus, runtime: tokio::runtime::Handle::current() };
        *self.running.lock() = Some(running.clone());
        for slot in self.slots() {
            slot.forward(&mut slot.swap.lock(), &running);
        }
    }

    /// The server shut down: every forwarder ends, and none starts again.
    pub(crate) fn shutdown(&self) {
        *self.running.lock() = None;
        for slot in self.slots() {
            slot.swap.lock().stop_forwarder();
        }
    }

    fn slots(&self) -> Vec<Arc<TenantSlot>> {
        self.table.lock().slots.values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handler::{ListChangeSender, ListChanges, ServerHandler, ServerInfo};
    use arbor_bus::LocalBus;
    use arbor_protocol::model::capabilities::ServerCapabilities;

    struct Named(&'static str, ListChangeSender);

    impl ServerHandler for Named {
        fn info(&self) -> ServerInfo {
            ServerInfo::new(self.0, "1")
        }

        fn capabilities(&self) -> ServerCapabilities {
            ServerCapabilities::default()
        }

        fn list_changes(&self) -> Option<ListChanges> {
            Some(self.1.subscribe())
        }
    }

    fn named(name: &'static str) -> (Arc<dyn DynServerHandler>, ListChangeSender) {
        let changes = ListChangeSender::default();
        (Arc::new(Named(name, changes.clone())), changes)
    }

    fn name(v: &Versioned) -> String {
        v.handler.info().implementation.name
    }

    /// Lets the runtime drop the futures of aborted tasks (and so their receivers).
    async fn settle() {
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
    }

    #[test]
    fn a_tenant_runs_the_servers_handler_at_version_0_until_it_gets_its_own() {
        let handlers = TenantHandlers::new(named("server").0);
        let slot = handlers.slot("a");
        assert_eq!((slot.version(), name(&slot.load())), (0, "server".into()));
        let held = slot.load();
        assert_eq!(handlers.swap("a", Some(named("mine").0)), 1);
        // What was loaded before the swap stays what it was.
        assert_eq!((held.version, name(&held)), (0, "server".into()));
        assert_eq!((slot.version(), name(&slot.load())), (1, "mine".into()));
        assert_eq!(handlers.swap("a", None), 2);
        assert_eq!((slot.version(), name(&slot.load())), (2, "server".into()));
        assert_eq!((handlers.version("a"), handlers.version("b")), (2, 0));
        assert_eq!(name(&handlers.current("b")), "server");
    }

    #[test]
    fn idle_slots_leave_the_table_and_swapped_ones_stay() {
        let handlers = TenantHandlers::new(named("server").0);
        handlers.swap("kept", Some(named("mine").0));
        let held = handlers.slot("held");
        for i in 0..10 * SWEEP_MIN {
            handlers.slot(&format!("idle-{i}"));
        }
        let table = handlers.table.lock();
        assert!(table.slots.len() <= 2 * SWEEP_MIN, "{} slots", table.slots.len());
        assert!(table.slots.contains_key("kept") && table.slots.contains_key("held"));
        drop(held);
    }

    #[tokio::test]
    async fn one_forwarder_runs_per_tenant_handler_and_none_after_shutdown() {
        let handlers = TenantHandlers::new(named("server").0);
        let (first, first_changes) = named("first");
        handlers.swap("a", Some(first));
        // Not serving yet: nothing forwards.
        assert_eq!(first_changes.receiver_count(), 0);
        handlers.start(Arc::new(LocalBus::new()));
        assert_eq!(first_changes.receiver_count(), 1);
        let (second, second_changes) = named("second");
        handlers.swap("a", Some(second));
        settle().await;
        assert_eq!((first_changes.receiver_count(), second_changes.receiver_count()), (0, 1));
        handlers.swap("a", None);
        settle().await;
        assert_eq!(second_changes.receiver_count(), 0);
        let (third, third_changes) = named("third");
        handlers.swap("a", Some(third));
        handlers.shutdown();
        settle().await;
        assert_eq!(third_changes.receiver_count(), 0);
        handlers.swap("a", Some(named("late").0));
        assert!(handlers.slot("a").swap.lock().forwarder.is_none());
    }
}
