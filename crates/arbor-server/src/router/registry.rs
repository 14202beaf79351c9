//! An ordered, keyed list of registered entries: the storage behind each list the router
//! serves (tools, prompts, resources, templates).
//!
//! Every entry gets a sequence number when its key is first registered, from a counter
//! that only grows; the list is kept in that order, which is registration order. A
//! replaced entry keeps its number (and so its place); a removed one leaves a gap.
//! Cursors name a sequence number (see `pagination`), which is why paging stays correct
//! while entries come and go.
//!
//! A registry is an immutable value once published: the router swaps in a modified copy
//! (copy-on-write), so readers never lock. It is not a map of handlers by itself: entries
//! are whatever the list needs.
//!
//! Invariant: `entries` is sorted by strictly increasing sequence number, and `index`
//! maps each key to its position in `entries`.

use std::collections::HashMap;
use std::sync::Arc;

use rustc_hash::FxBuildHasher;

/// The key index, hashed with FxHash: every request that names a tool or prompt looks it
/// up (two or three times), and SipHash cost more than the rest of the lookup. Flooding is
/// no concern: only the server registers keys; a client's name is only looked up.
type Index = HashMap<String, usize, FxBuildHasher>;

#[derive(Debug)]
pub(crate) struct Registry<T> {
    entries: Vec<(u64, Arc<T>)>,
    index: Index,
    next_seq: u64,
}

// Derived `Clone` would demand `T: Clone`; entries are shared, not copied.
impl<T> Clone for Registry<T> {
    fn clone(&self) -> Self {
        Registry { entries: self.entries.clone(), index: self.index.clone(), next_seq: self.next_seq }
    }
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Registry { entries: Vec::new(), index: Index::default(), next_seq: 1 }
    }
}

impl<T> Registry<T> {
    /// The entry registered under `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&Arc<T>> {
        self.index.get(key).map(|&i| &self.entries[i].1)
    }

    /// Whether an entry is registered under `key`.
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    /// Registers `entry` under `key`. A new key goes last; an existing key is replaced in
    /// place. Returns whether a previous entry was replaced.
    pub(crate) fn insert(&mut self, key: String, entry: T) -> bool {
        let entry = Arc::new(entry);
        if let Some(&i) = self.index.get(&key) {
            self.entries[i].1 = entry;
            return true;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.index.insert(key, self.entries.len());
        self.entries.push((seq, entry));
        false
    }

    /// Removes the entry under `key`; returns whether there was one.
    pub(crate) fn remove(&mut self, key: &str) -> bool {
        let Some(i) = self.index.remove(key) else {
            return false;
        };
        self.entries.remove(i);
        // Positions after the removed entry moved down by one.
        for position in self.index.values_mut() {
            if *position > i {
                *position -= 1;
            }
        }
        true
    }

    /// The entries in registration order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<T>> {
        self.entries.iter().map(|(_, e)| e)
    }

    /// Whether `seq` is a number this registry has handed out (0 stands for "before the
    /// first entry").
    pub(crate) fn issued(&self, seq: u64) -> bool {
        seq < self.next_seq
    }

    /// Up to `size` entries after sequence number `after`, and the sequence number of the
    /// last one returned when more entries follow it.
    pub(crate) fn page(&self, after: u64, size: usize) -> (Vec<Arc<T>>, Option<u64>) {
        let start = self.entries.partition_point(|(seq, _)| *seq <= after);
        let end = start.saturating_add(size).min(self.entries.len());
        let page: Vec<Arc<T>> = self.entries[start..end].iter().map(|(_, e)| Arc::clone(e)).collect();
        let next = (end < self.entries.len()).then(|| self.entries[end - 1].0);
        (page, next)
    }
}
