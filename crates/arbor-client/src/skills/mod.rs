//! Skills on the client: the `io.modelcontextprotocol/skills` extension (SEP-2640) as a
//! host must use it. [`Client::list_skills`](crate::Client::list_skills) reads every page of `skills/list` (and
//! nothing else); [`Client::load_skill`](crate::Client::load_skill) resolves a name or URI to an entry, reads that
//! skill's `SKILL.md` (only then), verifies it against the manifest and compares its front
//! matter with the entry's, and returns a [`Skill`]: the front matter, the body and the
//! inventory of files. A supporting file is read when the caller asks for it
//! ([`Client::skill_file`](crate::Client::skill_file)), verified the same way.
//!
//! Why files are an inventory and not content: the extension says a host retrieves a
//! skill's files only when needed (not on connection, listing or approval), and a skill
//! may carry up to 512 files and 16 MiB; most uses of a skill need its `SKILL.md` and one
//! or two of the files it mentions. [`Client::skill_files`](crate::Client::skill_files) reads them all (verified) for a
//! caller that wants everything at once.
//!
//! The rules, each enforced here: no `skills/*` call unless the server declared the
//! extension; nothing read ahead of need; a read only of a URI the entry's manifest lists
//! (refused before it is sent); every read's byte length, then SHA-256 digest, checked
//! against its manifest line, content that fails never returned; the front matter compared
//! field by field (any difference: the skill is not loaded); `"dynamic"` entries (no
//! manifest) refused unless the caller opts in ([`LoadOptions::allow_dynamic`]).
//! [`Client::read_directory`](crate::Client::read_directory) browses a skill's folders with `resources/directory/read`,
//! only when the server declared `directoryRead: true` (a host loading a skill needs no
//! directory read: the manifest names every file). Not here: approval, or caching by TTL. Invariant: every byte a caller receives from this module was
//! verified against the entry it was loaded with, or comes from a dynamic skill the
//! caller opted into (and [`Skill::is_verified`] says so).

mod error;
mod frontmatter;
mod load;
mod verify;

use arbor_protocol::model::common::JsonObject;
use arbor_protocol::model::skills::SkillFile;

pub use arbor_protocol::model::skills::{Skill as SkillEntry, SkillResources, SKILLS_EXTENSION};
pub use error::{Check, FrontmatterProblem, SkillError};

/// How [`Client::load_skill_with`](crate::Client::load_skill_with) loads.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadOptions {
    allow_dynamic: bool,
}

impl LoadOptions {
    /// The defaults: `"dynamic"` skills refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads `"dynamic"` skills too: their files cannot be verified (there is no
    /// manifest), only their front matter compared; reads stay within the skill root.
    pub fn allow_dynamic(mut self) -> Self {
        self.allow_dynamic = true;
        self
    }
}

/// A loaded skill: its `SKILL.md` verified and its front matter equal to the entry's.
#[derive(Clone, Debug)]
pub struct Skill {
    entry: SkillEntry,
    root: String,
    name: String,
    description: String,
    frontmatter: JsonObject,
    text: String,
    body_at: usize,
    verified: bool,
}

impl Skill {
    /// The `name` of its front matter.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The `description` of its front matter.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The front matter, every field the author wrote (equal to the entry's).
    pub fn frontmatter(&self) -> &JsonObject {
        &self.frontmatter
    }

    /// The markdown after the front matter block.
    pub fn body(&self) -> &str {
        &self.text[self.body_at..]
    }

    /// The whole `SKILL.md`, as verified.
    pub fn skill_md(&self) -> &str {
        &self.text
    }

    /// The `SKILL.md` URI.
    pub fn uri(&self) -> &str {
        &self.entry.uri
    }

    /// The skill root, `skill://<skill-path>`, which relative paths resolve against.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The entry it was loaded with (the manifest every later read is checked against).
    pub fn entry(&self) -> &SkillEntry {
        &self.entry
    }

    /// Whether its files are verified against a manifest (`false` for a dynamic skill
    /// loaded with [`LoadOptions::allow_dynamic`]).
    pub fn is_verified(&self) -> bool {
        self.verified
    }

    /// Every file of the manifest, `SKILL.md` included; empty for a dynamic skill.
    pub fn files(&self) -> impl Iterator<Item = SkillFileInfo<'_>> {
        let manifest: &[SkillFile] = match &self.entry.resources {
            Some(SkillResources::Files(files)) => files,
            _ => &[],
        };
        manifest.iter().map(|f| SkillFileInfo {
            uri: &f.uri,
            path: f.uri.strip_prefix(&self.root).and_then(|p| p.strip_prefix('/')).unwrap_or(&f.uri),
            size: f.size,
            digest: &f.digest,
        })
    }
}

/// One line of a skill's manifest, as [`Skill::files`] lists it (nothing read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkillFileInfo<'a> {
    /// The file's URI.
    pub uri: &'a str,
    /// Its path relative to the skill root (`references/FORMS.md`).
    pub path: &'a str,
    /// Its size in bytes, when the manifest says.
    pub size: Option<u64>,
    /// `sha256:<hex>`.
    pub digest: &'a str,
}

/// A file of a skill, read and verified ([`Client::skill_file`](crate::Client::skill_file)(crate::Client::skill_file)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillFileContent {
    /// The file's URI.
    pub uri: String,
    /// Its path relative to the skill root.
    pub path: String,
    /// The raw bytes (the UTF-8 of a text resource, the decoded bytes of a blob).
    pub bytes: Vec<u8>,
    /// The MIME type the server gave.
    pub mime_type: Option<String>,
    /// Whether the bytes were checked against a manifest line (`false` only for a
    /// dynamic skill the caller opted into).
    pub verified: bool,
}

impl SkillFileContent {
    /// The bytes as text, when they are UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}
