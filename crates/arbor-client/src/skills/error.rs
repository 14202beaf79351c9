//! The skills client's errors: one [`SkillError`] per way a listing, a load or a file
//! read can fail, naming the skill or file and, for a verification failure, which
//! check failed ([`Check`]) or which front matter field differs ([`FrontmatterProblem`]).
//!
//! This module decides nothing; it only names failures. Invariant: every variant that
//! concerns a file carries that file's URI, so a caller can report it and ask the server
//! again (`skills/get`), and no variant carries the content that failed verification.

use crate::error::ClientError;

/// Why a skills call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The server did not declare the skills extension, so no `skills/*` call is made.
    #[error("the server does not offer the skills extension (io.modelcontextprotocol/skills)")]
    NotOffered,
    /// The server did not declare `directoryRead: true` in the extension's settings, so
    /// no `resources/directory/read` is sent.
    #[error("the server does not offer resources/directory/read (directoryRead)")]
    DirectoryReadNotOffered,
    /// A call to the server failed (`skills/list`, `skills/get`, `resources/read`).
    #[error("{method} failed: {source}")]
    Call {
        /// The method called.
        method: &'static str,
        /// Why.
        #[source]
        source: ClientError,
    },
    /// No listed skill has this name (or skill path), or `skills/get` says the URI is not
    /// a skill.
    #[error("no skill {0:?}")]
    NotFound(String),
    /// Several listed skills answer to this name; load one by its URI.
    #[error("the name {name:?} is ambiguous: {uris:?}")]
    Ambiguous {
        /// The name asked for.
        name: String,
        /// The `SKILL.md` URIs of every skill with that name.
        uris: Vec<String>,
    },
    /// The skill is `"dynamic"` (no manifest, nothing to verify against) and the caller
    /// did not opt in ([`LoadOptions::allow_dynamic`](super::LoadOptions::allow_dynamic)).
    #[error("skill {uri} is dynamic (no manifest to verify against); refused")]
    Dynamic {
        /// The skill's `SKILL.md` URI.
        uri: String,
    },
    /// The entry itself cannot be trusted to verify anything (checked before any read).
    #[error("the entry of skill {uri} is unusable: {problem}")]
    BadEntry {
        /// The entry's `uri`.
        uri: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A read of a URI the skill's manifest does not list: refused before it is sent.
    #[error("{uri} is not in the manifest of skill {skill}; not read")]
    Unlisted {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// The URI asked for.
        uri: String,
    },
    /// A file read does not match its manifest line; its content was discarded.
    #[error("{uri} failed verification: {check}")]
    Verification {
        /// The file's URI.
        uri: String,
        /// The check that failed.
        check: Check,
    },
    /// The `SKILL.md` front matter is missing, malformed, or differs from the entry's;
    /// the skill is not loaded.
    #[error("{uri}: {problem}")]
    Frontmatter {
        /// The `SKILL.md` URI.
        uri: String,
        /// What is wrong.
        problem: FrontmatterProblem,
    },
    /// A list (`skills/list`, `resources/directory/read`) did not end: a cursor came back
    /// twice, or too many pages.
    #[error("{method} did not end (after {pages} pages)")]
    EndlessList {
        /// The list method.
        method: &'static str,
        /// Pages read.
        pages: usize,
    },
}

impl SkillError {
    /// Whether this is a verification failure (size, digest, front matter): the server
    /// served content that does not match what it listed.
    pub fn is_verification(&self) -> bool {
        matches!(self, SkillError::Verification { .. } | SkillError::Frontmatter { .. })
    }
}

/// The check a file read failed, in the order they run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Check {
    /// The read returned no contents for the URI, or several.
    #[error("the read returned {0} contents for the URI, not one")]
    Contents(usize),
    /// A blob that is not base64, or a `SKILL.md` that is not UTF-8.
    #[error("the content cannot be decoded: {0}")]
    Encoding(String),
    /// The byte length differs from the manifest's `size` (the digest is not computed).
    #[error("size mismatch: the manifest says {expected} bytes, the server sent {actual}")]
    Size {
        /// The manifest's size.
        expected: u64,
        /// The bytes received.
        actual: u64,
    },
    /// The SHA-256 digest differs from the manifest's.
    #[error("digest mismatch: the manifest says {expected}, the content hashes to {actual}")]
    Digest {
        /// The manifest's digest.
        expected: String,
        /// The digest of the bytes received.
        actual: String,
    },
}

/// What is wrong with a `SKILL.md` front matter.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrontmatterProblem {
    /// No `---` block opens the file.
    #[error("no front matter block")]
    Missing,
    /// The block is not YAML.
    #[error("the front matter is not YAML: {0}")]
    Yaml(String),
    /// The block is YAML but not a mapping.
    #[error("the front matter is not a mapping")]
    NotAMapping,
    /// A field differs from the entry's front matter (a different value, or present on
    /// one side only).
    #[error("front matter field {field:?} differs from the skill entry's")]
    Mismatch {
        /// The field.
        field: String,
    },
}
