//! Skills: folders of `SKILL.md` and supporting files served as the
//! `io.modelcontextprotocol/skills` extension (SEP-2640) says.
//!
//! A [`SkillSource`] names a folder of skills ([`SkillSource::dir`], every folder below it
//! holding a `SKILL.md`, nested paths such as `acme/billing/refunds` included) or one
//! skill folder ([`SkillSource::skill`]), with its bounds and whether to watch it. The
//! router registers it ([`Router::skills`](crate::Router::skills),
//! [`Router::skills_dir`](crate::Router::skills_dir), [`Router::skill`](crate::Router::skill)):
//! the source is scanned once, every front matter checked, every file read into memory
//! with its SHA-256 digest and size; anything wrong refuses the whole source with a
//! [`SkillError`] naming the file. Then the router serves `skills/list`, `skills/get`,
//! `resources/directory/read`, each `SKILL.md` as a listed resource and every file
//! through the template `skill://{+path}`, from those snapshots only: a read never
//! touches the filesystem, so it returns exactly the digested bytes and no URI can reach
//! a file that was not scanned (a `..` segment, an absolute path or an escaping symlink
//! is refused at registration or names nothing).
//!
//! Watching ([`SkillSource::watch`]) rescans the source when anything in it changes and
//! swaps the new snapshot in whole, announcing `notifications/resources/list_changed`
//! through the router's list changes and `notifications/resources/updated` for every
//! changed file through [`ServerHandler::resource_updates`](crate::ServerHandler::resource_updates).
//! A rescan that fails (a malformed `SKILL.md`, a file over the bound) keeps serving the
//! last good snapshot and logs why.
//!
//! This module is not the protocol (the wire types are `arbor_protocol::model::skills`)
//! and not a client. Invariant: what is served for a source is one scan's snapshot, never
//! a mix of two, and every manifest describes the bytes a read of its URIs returns.

mod catalog;
mod error;
mod frontmatter;
mod route;
mod scan;
mod serve;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::{Mutex, RwLock};

pub use arbor_protocol::model::skills::{SKILLS_EXTENSION, SKILL_FILE};
pub use error::{FrontmatterError, SkillError, SkillsRefused};

/// The prefix of every skill URI (`skill://`).
pub const URI_PREFIX: &str = catalog::PREFIX;

use crate::resource_updates::ResourceUpdateSender;
use catalog::Catalog;
use scan::Shape;

/// The default bound on one skill file: 8 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// The default bound on one skill's files together: 16 MiB, the extension's limit.
pub const DEFAULT_MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;
/// The default bound on one skill's file count, `SKILL.md` included: 512, the extension's limit.
pub const DEFAULT_MAX_FILES: usize = 512;
/// How deep folders may nest below a source.
const MAX_DEPTH: usize = 16;

/// The bounds a source is scanned within.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) max_file_bytes: u64,
    pub(crate) max_skill_bytes: u64,
    pub(crate) max_files: usize,
    pub(crate) max_depth: usize,
}

/// Where skills come from, and how they are bounded and followed.
///
/// ```no_run
/// use arbor_server::skills::SkillSource;
/// use arbor_server::Router;
///
/// let router = Router::new("docs", "1.0.0")
///     .skills(SkillSource::dir("./skills").watch().max_file_bytes(1024 * 1024));
/// ```
#[derive(Clone, Debug)]
pub struct SkillSource {
    path: PathBuf,
    shape: Shape,
    limits: Limits,
    watch: bool,
}

impl SkillSource {
    /// Every skill below `path`: each folder holding a `SKILL.md`, its skill path
    /// relative to `path` (`skill://acme/billing/refunds/SKILL.md` for
    /// `path/acme/billing/refunds/SKILL.md`). Listed shallower skills first, then by path.
    pub fn dir(path: impl Into<PathBuf>) -> Self {
        SkillSource::new(path.into(), Shape::Dir)
    }

    /// The one skill in the folder `path` (and any skill nested in it), its skill path
    /// the folder's own name.
    pub fn skill(path: impl Into<PathBuf>) -> Self {
        SkillSource::new(path.into(), Shape::One)
    }

    fn new(path: PathBuf, shape: Shape) -> Self {
        let limits = Limits {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_skill_bytes: DEFAULT_MAX_SKILL_BYTES,
            max_files: DEFAULT_MAX_FILES,
            max_depth: MAX_DEPTH,
        };
        SkillSource { path, shape, limits, watch: false }
    }

    /// Refuses the source if one file is larger (default [`DEFAULT_MAX_FILE_BYTES`]).
    pub fn max_file_bytes(mut self, max: u64) -> Self {
        self.limits.max_file_bytes = max;
        self
    }

    /// Refuses the source if one skill's files add up to more (default
    /// [`DEFAULT_MAX_SKILL_BYTES`]).
    pub fn max_skill_bytes(mut self, max: u64) -> Self {
        self.limits.max_skill_bytes = max;
        self
    }

    /// Refuses the source if one skill has more files (default [`DEFAULT_MAX_FILES`]).
    pub fn max_files(mut self, max: usize) -> Self {
        self.limits.max_files = max;
        self
    }

    /// Rescans the source when its files change (the `notify` crate), and tells clients:
    /// `notifications/resources/list_changed` when the listed `SKILL.md`s change,
    /// `notifications/resources/updated` to the subscribers of each changed file. The
    /// router then accepts subscriptions ([`Router::subscriptions`](crate::Router::subscriptions))
    /// and advertises `listChanged`.
    pub fn watch(mut self) -> Self {
        self.watch = true;
        self
    }

    /// The folder this source reads.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// One registered source and its current snapshot.
pub(crate) struct SkillSet {
    source: SkillSource,
    catalog: ArcSwap<Catalog>,
    /// Kept for as long as the set lives; dropping it ends the rescan thread.
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
}

impl std::fmt::Debug for SkillSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillSet").field("source", &self.source).finish_non_exhaustive()
    }
}

/// Every source a router serves, and the channel its resource updates go out on.
#[derive(Debug, Default)]
pub(crate) struct Skills {
    sets: RwLock<Vec<Arc<SkillSet>>>,
    pub(crate) updates: ResourceUpdateSender,
}

impl Skills {
    /// The current catalogs, in registration order.
    fn catalogs(&self) -> Vec<Arc<Catalog>> {
        self.sets.read().iter().map(|s| s.catalog.load_full()).collect()
    }

    /// Whether any source is registered.
    pub(crate) fn any(&self) -> bool {
        !self.sets.read().is_empty()
    }

    /// Adds a scanned source, unless one of its skills overlaps a skill already served
    /// (the same path, or one inside the other across sources).
    fn add(&self, set: Arc<SkillSet>) -> Result<(), SkillError> {
        let mut sets = self.sets.write();
        let new = set.catalog.load();
        for other in sets.iter() {
            if let Some(path) = overlap(&new, &other.catalog.load()) {
                return Err(SkillError::Duplicate { skill_path: path });
            }
        }
        sets.push(set);
        Ok(())
    }

    /// Whether `catalog` (a rescan of `set`) overlaps another source's skills.
    fn overlaps_others(&self, set: &SkillSet, catalog: &Catalog) -> Option<String> {
        let sets = self.sets.read();
        sets.iter().filter(|s| !std::ptr::eq(s.as_ref(), set)).find_map(|s| overlap(catalog, &s.catalog.load()))
    }
}

/// A skill path of `a` equal to, inside or around one of `b`'s.
fn overlap(a: &Catalog, b: &Catalog) -> Option<String> {
    let within = |x: &str, y: &str| x == y || x.starts_with(&format!("{y}/"));
    a.skills
        .iter()
        .find(|s| b.skills.iter().any(|t| within(&s.key, &t.key) || within(&t.key, &s.key)))
        .map(|s| s.key.clone())
}
