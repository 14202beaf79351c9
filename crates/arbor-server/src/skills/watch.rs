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
    loop {
        // Reading a file is an event too on some platforms; the rescan's own reads
        // must not start another rescan.
        match events.recv() {
            Ok(event) if !changes(&event) => continue,
            Ok(_) => {}
            Err(_) => return,
        }
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

/// Whether an event may have changed what a scan reads (an error counts: rescan to be sure).
fn changes(event: &notify::Result<notify::Event>) -> bool {
    event.as_ref().map_or(true, |e| !e.kind.is_access())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Router;
    use std::fs;

    fn notes_digest(set: &SkillSet) -> String {
        set.catalog.load().file("w/notes.md").expect("served").digest.clone()
    }

    #[tokio::test]
    async fn a_refused_rescan_keeps_the_last_good_snapshot_and_a_good_one_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("w")).unwrap();
        fs::write(dir.path().join("w/SKILL.md"), "---\nname: w\ndescription: d\n---\n").unwrap();
        fs::write(dir.path().join("w/notes.md"), "one").unwrap();
        let router = Router::new("skills", "1.0.0").skills_dir(dir.path());
        let shared = router.shared.clone();
        let set = shared.skills.sets.read()[0].clone();
        let mut updates = shared.skills.updates.subscribe();
        let before = notes_digest(&set);

        // A malformed SKILL.md refuses the whole rescan: the changed notes are not served.
        fs::write(dir.path().join("w/SKILL.md"), "no front matter\n").unwrap();
        fs::write(dir.path().join("w/notes.md"), "two").unwrap();
        rescan(&set, &shared);
        assert_eq!(notes_digest(&set), before);
        assert!(shared
            .skills
            .read("skill://w/notes.md", arbor_protocol::version::ProtocolVersion::LATEST_LEGACY)
            .is_ok());

        fs::write(dir.path().join("w/SKILL.md"), "---\nname: w\ndescription: d2\n---\n").unwrap();
        rescan(&set, &shared);
        assert_ne!(notes_digest(&set), before);
        assert_eq!(set.catalog.load().file("w/notes.md").unwrap().bytes(), b"two");
        // Both files changed since the last good snapshot: both are announced, in key order.
        assert_eq!(updates.recv().await.as_deref(), Some("skill://w/SKILL.md"));
        assert_eq!(updates.recv().await.as_deref(), Some("skill://w/notes.md"));
        // The listed SKILL.md follows its new description.
        let listed = shared.resources.load().get("skill://w/SKILL.md").unwrap().resource.description.clone();
        assert_eq!(listed.as_deref(), Some("d2"));
    }
}
