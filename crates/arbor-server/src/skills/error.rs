//! Why a skill folder was refused: [`SkillError`] for the folder and its files,
//! [`FrontmatterError`] for a `SKILL.md` whose front matter is not what the extension
//! requires.
//!
//! These are registration errors (the router refuses the folder, or a rescan keeps the
//! last good version); a request never sees them. Invariant: every variant names the
//! file or folder at fault, so the message alone says what to fix.

use std::path::PathBuf;

/// Why a `SKILL.md`'s front matter was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrontmatterError {
    /// The file is not UTF-8 text.
    #[error("the file is not UTF-8 text")]
    NotUtf8,
    /// No `---` block opens the file.
    #[error("no front matter: the file must start with a `---` line, then YAML, then a `---` line")]
    Missing,
    /// The block is not valid YAML.
    #[error("the front matter is not valid YAML: {0}")]
    Yaml(String),
    /// The block is YAML but not a mapping.
    #[error("the front matter is not a YAML mapping")]
    NotAMapping,
    /// `name` or `description` is missing, not a string, or empty.
    #[error("`{0}` must be a non-empty string")]
    Required(&'static str),
    /// `name` breaks the naming rule.
    #[error(
        "`name` {0:?} must be 1 to 64 characters of a-z, 0-9 and `-`, neither starting nor ending with `-`, without `--`"
    )]
    BadName(String),
    /// `description` is longer than the Agent Skills limit.
    #[error("`description` is {0} characters long; at most 1024 are allowed")]
    LongDescription(usize),
}

/// Why a skill folder (or one of its files) was refused at registration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The folder or file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// `Router::skill` was given a folder without a `SKILL.md`, or `Router::skills_dir`
    /// a folder with no skill anywhere below it.
    #[error("no SKILL.md in {}", path.display())]
    NoSkill {
        /// The folder.
        path: PathBuf,
    },
    /// A `SKILL.md` whose front matter was refused.
    #[error("{}: {source}", path.display())]
    Frontmatter {
        /// The `SKILL.md`.
        path: PathBuf,
        /// What is wrong with it.
        source: FrontmatterError,
    },
    /// The front matter's `name` is not the skill's folder name.
    #[error("{}: `name` is {name:?} but the skill's folder is {folder:?}; they must be equal", path.display())]
    NameMismatch {
        /// The `SKILL.md`.
        path: PathBuf,
        /// The front matter's name.
        name: String,
        /// The folder's name.
        folder: String,
    },
    /// A file larger than the per-file bound.
    #[error("{} is {size} bytes; a skill file may have at most {max}", path.display())]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// Its size (or the bytes read before giving up).
        size: u64,
        /// The bound ([`SkillSource::max_file_bytes`](super::SkillSource::max_file_bytes)).
        max: u64,
    },
    /// A skill whose files add up to more than the per-skill bound.
    #[error("the skill in {} holds {size} bytes; a skill may hold at most {max}", path.display())]
    SkillTooLarge {
        /// The skill's folder.
        path: PathBuf,
        /// The sum of its files' sizes.
        size: u64,
        /// The bound ([`SkillSource::max_skill_bytes`](super::SkillSource::max_skill_bytes)).
        max: u64,
    },
    /// A skill with more files than the per-skill bound.
    #[error("the skill in {} has more than {max} files", path.display())]
    TooManyFiles {
        /// The skill's folder.
        path: PathBuf,
        /// The bound ([`SkillSource::max_files`](super::SkillSource::max_files)).
        max: usize,
    },
    /// Folders nested deeper than the bound.
    #[error("{} is nested more than {max} folders deep", path.display())]
    TooDeep {
        /// The folder.
        path: PathBuf,
        /// The bound.
        max: usize,
    },
    /// A symlink that resolves outside its skill's folder.
    #[error("{} is a symlink that leads outside its skill's folder", path.display())]
    Escapes {
        /// The symlink.
        path: PathBuf,
    },
    /// A symlink to a folder (never followed: it could loop or lead anywhere).
    #[error("{} is a symlink to a folder; skill folders must be real folders", path.display())]
    DirectorySymlink {
        /// The symlink.
        path: PathBuf,
    },
    /// Neither a file nor a folder (a socket, a FIFO, a device).
    #[error("{} is neither a regular file nor a folder", path.display())]
    NotAFile {
        /// The entry.
        path: PathBuf,
    },
    /// A file or folder name that cannot be a URI segment as it is.
    #[error(
        "{}: skill file and folder names may use only A-Z, a-z, 0-9 and -._~!$&'()*+,;=@ (no spaces, no `%`)",
        path.display()
    )]
    UnsupportedName {
        /// The file or folder.
        path: PathBuf,
    },
    /// A skill path served twice (by two sources of one router).
    #[error("the skill path {skill_path:?} is served twice")]
    Duplicate {
        /// The skill path (`skill://<skill_path>/SKILL.md`).
        skill_path: String,
    },
    /// The folder could not be watched.
    #[error("cannot watch {}: {source}", path.display())]
    Watch {
        /// The folder.
        path: PathBuf,
        /// What the watcher said.
        source: notify::Error,
    },
}

/// A [`SkillError`] as a [`RouterError`](crate::RouterError) carries it: shared, so the
/// router's error stays `Clone` and comparable (two are equal when they are the same
/// refusal).
#[derive(Clone, Debug, thiserror::Error)]
#[error(transparent)]
pub struct SkillsRefused(std::sync::Arc<SkillError>);

impl SkillsRefused {
    /// Why the source was refused.
    pub fn error(&self) -> &SkillError {
        &self.0
    }
}

impl PartialEq for SkillsRefused {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SkillsRefused {}

impl From<SkillError> for SkillsRefused {
    fn from(e: SkillError) -> Self {
        SkillsRefused(std::sync::Arc::new(e))
    }
}
