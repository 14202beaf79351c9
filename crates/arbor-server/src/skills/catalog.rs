//! One source's skills as scanned: every file's snapshot by key, every skill's entry,
//! and the lookups the requests need (a file, a skill, a directory's children).
//!
//! A key is a file's path below the source with `/` between segments, the skill path
//! included (`pdf-processing/references/FORMS.md`); its URI is `skill://` + key. A
//! catalog is immutable: a rescan builds a new one, and requests keep reading the one
//! they loaded. Nothing here touches the filesystem, so a read can reach only the bytes
//! that were scanned (and digested). This module does not scan or watch.
//!
//! Invariant: every entry's manifest lists exactly the snapshots this catalog serves for
//! its skill, with the digest and size of the very bytes a read returns.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use arbor_protocol::model::content::ResourceContents;
use arbor_protocol::model::resources::Resource;
use arbor_protocol::model::skills::{
    Skill, SkillFile, SkillResources, DIRECTORY_MIME_TYPE, SKILL_FILE, SKILL_MIME_TYPE,
};
use sha2::{Digest as _, Sha256};

use super::frontmatter::Frontmatter;

/// The URI scheme prefix of every skill file.
pub(crate) const PREFIX: &str = "skill://";

/// One file's bytes as scanned, with what a manifest and a read say about them.
#[derive(Debug)]
pub(crate) struct FileSnap {
    content: Content,
    pub(crate) digest: String,
    pub(crate) size: u64,
    pub(crate) mime_type: &'static str,
}

#[derive(Debug)]
enum Content {
    /// Valid UTF-8: served as `text`, whose UTF-8 is the digested bytes.
    Text(Arc<str>),
    /// Anything else: served as a base64 `blob` of the digested bytes.
    Blob(Arc<[u8]>),
}

impl FileSnap {
    pub(crate) fn new(path: &Path, bytes: Vec<u8>) -> FileSnap {
        let digest = format!("sha256:{}", hex(&Sha256::digest(&bytes)));
        let size = bytes.len() as u64;
        let (content, utf8) = match String::from_utf8(bytes) {
            Ok(text) => (Content::Text(Arc::from(text)), true),
            Err(e) => (Content::Blob(Arc::from(e.into_bytes())), false),
        };
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        FileSnap { content, digest, size, mime_type: mime_type(name, utf8) }
    }

    /// The bytes as scanned, for comparisons and tests.
    pub(crate) fn bytes(&self) -> &[u8] {
        match &self.content {
            Content::Text(t) => t.as_bytes(),
            Content::Blob(b) => b,
        }
    }

    /// The read contents of this file at `uri`.
    pub(crate) fn contents(&self, uri: &str) -> ResourceContents {
        let contents = match &self.content {
            Content::Text(t) => ResourceContents::text(uri, t.to_string()),
            Content::Blob(b) => ResourceContents::blob(uri, b),
        };
        contents.with_mime_type(self.mime_type)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The MIME type by extension; unknown extensions are `text/plain` when the bytes are
/// UTF-8 and `application/octet-stream` otherwise.
fn mime_type(name: &str, utf8: bool) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => SKILL_MIME_TYPE,
        "txt" => "text/plain",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "py" => "text/x-python",
        "sh" => "application/x-sh",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/typescript",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ if utf8 => "text/plain",
        _ => "application/octet-stream",
    }
}

/// One skill: its key (the skill path), its entry, and its `SKILL.md` as listed.
#[derive(Debug)]
pub(crate) struct SkillInfo {
    pub(crate) key: String,
    pub(crate) entry: Skill,
    pub(crate) listed: Resource,
}

impl SkillInfo {
    /// The skill at `key` with front matter `fm` and the files `own` (keys into `files`).
    pub(crate) fn new(
        key: &str,
        fm: Frontmatter,
        mut own: Vec<String>,
        files: &BTreeMap<String, Arc<FileSnap>>,
    ) -> SkillInfo {
        let skill_md = format!("{key}/{SKILL_FILE}");
        // SKILL.md first, then the rest by key: the order never changes between scans.
        own.sort_by(|a, b| (a != &skill_md, a).cmp(&(b != &skill_md, b)));
        let manifest = own
            .iter()
            .map(|k| SkillFile::new(format!("{PREFIX}{k}"), files[k].digest.clone(), files[k].size))
            .collect();
        let uri = format!("{PREFIX}{skill_md}");
        let listed = Resource::new(uri.clone(), fm.name)
            .with_description(fm.description)
            .with_mime_type(SKILL_MIME_TYPE)
            .with_size(files[&skill_md].size);
        let entry = Skill::new(uri, fm.fields, SkillResources::Files(manifest));
        SkillInfo { key: key.to_owned(), entry, listed }
    }
}

/// A source's skills and files, as of one scan.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    files: BTreeMap<String, Arc<FileSnap>>,
    pub(crate) skills: Vec<SkillInfo>,
}

impl Catalog {
    pub(crate) fn new(files: BTreeMap<String, Arc<FileSnap>>, skills: Vec<SkillInfo>) -> Catalog {
        Catalog { files, skills }
    }

    /// The file at `key`.
    pub(crate) fn file(&self, key: &str) -> Option<&Arc<FileSnap>> {
        self.files.get(key)
    }

    /// The skill whose `SKILL.md` URI is `uri`.
    pub(crate) fn skill(&self, uri: &str) -> Option<&SkillInfo> {
        self.skills.iter().find(|s| s.entry.uri == uri)
    }

    /// The direct children of the directory at `key`, or `None` when `key` is not a
    /// directory of a skill (a file, a folder above every skill, nothing).
    pub(crate) fn children(&self, key: &str) -> Option<Vec<Resource>> {
        let inside = self.skills.iter().any(|s| key == s.key || key.starts_with(&format!("{}/", s.key)));
        if !inside {
            return None;
        }
        let prefix = format!("{key}/");
        let mut dirs = BTreeSet::new();
        let mut children = Vec::new();
        for (k, snap) in self.files.range(prefix.clone()..).take_while(|(k, _)| k.starts_with(&prefix)) {
            let rest = &k[prefix.len()..];
            match rest.split_once('/') {
                Some((dir, _)) => {
                    if dirs.insert(dir) {
                        let uri = format!("{PREFIX}{prefix}{dir}");
                        children.push(Resource::new(uri, dir).with_mime_type(DIRECTORY_MIME_TYPE));
                    }
                }
                None => {
                    let resource =
                        Resource::new(format!("{PREFIX}{k}"), rest).with_mime_type(snap.mime_type).with_size(snap.size);
                    children.push(resource);
                }
            }
        }
        (!children.is_empty()).then_some(children)
    }

    /// The URIs whose bytes differ between `old` and this catalog (changed, added or
    /// removed), in key order.
    pub(crate) fn changed_uris(&self, old: &Catalog) -> Vec<String> {
        let keys: BTreeSet<&String> = self.files.keys().chain(old.files.keys()).collect();
        keys.into_iter()
            .filter(|k| self.files.get(*k).map(|f| &f.digest) != old.files.get(*k).map(|f| &f.digest))
            .map(|k| format!("{PREFIX}{k}"))
            .collect()
    }
}

/// The key of a skill URI, checked: `skill://` then `/`-separated segments, none empty,
/// `.` or `..`, all of the characters a served name may have. `None` for anything else,
/// which therefore names nothing served.
pub(crate) fn key_of(uri: &str) -> Option<&str> {
    let key = uri.strip_prefix(PREFIX)?;
    key.split('/').all(super::scan::safe_segment).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever follows `skill://`, a key that comes back names no parent, no
        /// current folder, no empty segment, and needs no decoding: it can only be one
        /// that a scan produced.
        #[test]
        fn a_checked_key_cannot_climb_or_hide(rest in "[a-z./%\\\\A-Z0-9~-]{0,40}") {
            let uri = format!("{PREFIX}{rest}");
            if let Some(key) = key_of(&uri) {
                for segment in key.split('/') {
                    prop_assert!(!segment.is_empty() && segment != "." && segment != "..", "{key}");
                    prop_assert!(!segment.contains('%') && !segment.contains('\\'), "{key}");
                }
            }
        }
    }

    #[test]
    fn traversal_and_absolute_keys_are_refused() {
        for uri in ["skill://x/../y", "skill:///etc/passwd", "skill://x//y", "skill://x/./y", "skill://", "file:///x"] {
            assert_eq!(key_of(uri), None, "{uri}");
        }
        assert_eq!(key_of("skill://acme/billing/refunds/SKILL.md"), Some("acme/billing/refunds/SKILL.md"));
    }
}
