//! Watching a skill source: a `notify` watcher on the folder and one thread per source
//! that rescans it after a burst of changes and applies the new snapshot.
//!
//! Applying a rescan swaps the source's catalog whole, replaces the listed `SKILL.md`
//! routes that changed (the router announces `notifications/resources/list_changed`), and
//! sends `notifications/resources/updated` for every file whose bytes changed, appeared
//! or disappeared, in that order, so a client that reacts to a notification reads the
//! new snapshot. A rescan that is refused leaves everything as it was and logs why.
//! The thread holds the router's state weakly: it ends when the router is dropped (the
//! watcher, owned by the source, goes with it and closes the channel). This module does
//! not decide what a valid skill is (the scanner does).
//!
//! Invariant: a catalog is replaced only by a scan that passed every check.

use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Weak};
use std::time::Duration;

use notify::{RecursiveMode, Watcher as _};

use super::{route, scan, SkillError, SkillSet};
use crate::router::handle::Shared;

/// How long the folder must stay quiet before a rescan: an editor's save or a `git
/// checkout` is a burst of events, and one rescan after it is enough.
const QUIET: Duration = Duration::from_millis(100);

type Events = Receiver<notify::Result<notify::Event>>;

/// Starts watching `set`'s folder; the returned watcher must live as long as the set.
pub(crate) fn start(set: &Arc<SkillSet>, shared: Weak<Shared>) -> Result<notify::RecommendedWatcher, SkillError> {
    let path = set.source.path.clone();
    let (tx, rx) = channel();
    let watch_error = |source| SkillError::Watch { path: path.clone(), source };
    let mut watcher = notify::recommended_watcher(tx).map_err(watch_error)?;
    watcher.watch(&path, RecursiveMode::Recursive).map_err(watch_error)?;
    let set = Arc::downgrade(set);
    std::thread::Builder::new()
        .name("arbor-skills-watch".into())
        .spawn(move || run(rx, set, shared))
        .map_err(|source| SkillError::Io { path: path.clone(), source })?;
    Ok(watcher)
}

fn run(events: Events, set: Weak<SkillSet>, shared: Weak<Shared>) {
    while events.recv().is_ok() {
        loop {
            match events.recv_timeout(QUIET) {
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        let (Some(set), Some(shared)) = (set.upgrade(), shared.upgrade()) else { return };
        rescan(&set, &shared);
    }
}

/// Rescans `set` and applies the result to the router whose state is `shared`.
pub(crate) fn rescan(set: &SkillSet, shared: &Shared) {
    let source = &set.source;
    let new = match scan::scan(&source.path, &source.shape, &source.limits) {
        Ok(catalog) => catalog,
        Err(error) => {
            tracing::warn!(path = %source.path.display(), %error, "skills: rescan refused, still serving the last good version");
            return;
        }
    };
    if let Some(skill_path) = shared.skills.overlaps_others(set, &new) {
        let error = SkillError::Duplicate { skill_path };
        tracing::warn!(path = %source.path.display(), %error, "skills: rescan refused, still serving the last good version");
        return;
    }
    let old = set.catalog.swap(Arc::new(new));
    let new = set.catalog.load_full();
    for gone in old.skills.iter().filter(|o| !new.skills.iter().any(|n| n.listed.uri == o.listed.uri)) {
        shared.remove_resource(&gone.listed.uri);
    }
    for info in &new.skills {
        let same = old.skills.iter().any(|o| o.listed == info.listed);
        if !same {
            // Replacing never fails; a URI taken meanwhile by a resource of the author's
            // own is replaced too, which is what the author asked for by watching.
            let _ = shared.add_resource(route::skill_md_route(&shared.skills, info), true);
        }
    }
    for uri in new.changed_uris(&old) {
        shared.skills.updates.send(&uri);
    }
}
