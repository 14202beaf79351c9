//! Reading a skill source from disk into a [`Catalog`]: find the skills, snapshot their
//! files, check everything the extension and the bounds require.
//!
//! Two passes. The first walks the source's folders (never through a symlink) and
//! notes every folder holding a `SKILL.md`. The second walks each skill's folder and
//! reads each file once (a nested skill's files belong to the enclosing skill too, and
//! share its snapshot): sizes are checked before reading and again on the bytes read, so
//! a file that grows meanwhile cannot get past the bound. Names starting with `.` are
//! not part of a skill (`.git`, editor droppings). This module does not serve anything
//! and does not watch.
//!
//! Invariant: a catalog holds only regular files that lie inside their skill's folder
//! (a symlink is followed only when it resolves to a file there), named by URI-safe
//! segments, within the bounds; any breach refuses the whole source with a
//! [`SkillError`] naming the file.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::catalog::{Catalog, FileSnap, SkillInfo};
use super::error::SkillError;
use super::frontmatter;
use super::{Limits, SKILL_FILE};

/// What a source is: a folder of skills, or one skill folder.
#[derive(Clone, Debug)]
pub(crate) enum Shape {
    /// Every folder under the path holding a `SKILL.md`; skill paths relative to it.
    Dir,
    /// The folder itself is a skill; its skill path is its own name.
    One,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SkillError + '_ {
    move |source| SkillError::Io { path: path.to_owned(), source }
}

/// Whether `name` may be a URI path segment as it is: RFC 3986 unreserved and
/// sub-delims, plus `@`; no `%`, so no URI needs percent-decoding to find its file.
pub(crate) fn safe_segment(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=@".contains(&b))
}

fn segment(path: &Path, name: &std::ffi::OsStr) -> Result<String, SkillError> {
    match name.to_str() {
        Some(s) if safe_segment(s) => Ok(s.to_owned()),
        _ => Err(SkillError::UnsupportedName { path: path.to_owned() }),
    }
}

/// Scans `path` as `shape` within `limits`.
pub(crate) fn scan(path: &Path, shape: &Shape, limits: &Limits) -> Result<Catalog, SkillError> {
    let meta = fs::metadata(path).map_err(io(path))?;
    if !meta.is_dir() {
        return Err(SkillError::NoSkill { path: path.to_owned() });
    }
    // Skill folders as (relative key, folder on disk).
    let mut roots: Vec<(String, PathBuf)> = Vec::new();
    match shape {
        Shape::One => {
            let name = path.canonicalize().map_err(io(path))?;
            let name = name.file_name().ok_or_else(|| SkillError::NoSkill { path: path.to_owned() })?;
            let prefix = segment(path, name)?;
            find_skills(path, &prefix, 0, limits, &mut roots)?;
            if roots.first().is_none_or(|(key, _)| key != &prefix) {
                return Err(SkillError::NoSkill { path: path.to_owned() });
            }
        }
        Shape::Dir => {
            find_skills(path, "", 0, limits, &mut roots)?;
            if roots.is_empty() {
                return Err(SkillError::NoSkill { path: path.to_owned() });
            }
        }
    }
    // Shallower skills first, then by path: a stable order that puts top-level skills
    // ahead of nested and prefixed ones.
    roots.sort_by(|a, b| (a.0.matches('/').count(), &a.0).cmp(&(b.0.matches('/').count(), &b.0)));
    let mut files: BTreeMap<String, Arc<FileSnap>> = BTreeMap::new();
    let mut skills = Vec::with_capacity(roots.len());
    for (key, dir) in roots {
        skills.push(read_skill(&key, &dir, limits, &mut files)?);
    }
    Ok(Catalog::new(files, skills))
}

/// Pass one: notes every folder under `dir` (key `key`) that holds a `SKILL.md`.
fn find_skills(
    dir: &Path,
    key: &str,
    depth: usize,
    limits: &Limits,
    found: &mut Vec<(String, PathBuf)>,
) -> Result<(), SkillError> {
    if depth > limits.max_depth {
        // Folders this deep are not searched for skills (a `node_modules` beside the
        // skills is no reason to refuse them); inside a skill, depth is an error (`walk`).
        return Ok(());
    }
    let mut subdirs = Vec::new();
    for entry in fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name();
        if name.as_encoded_bytes().starts_with(b".") {
            continue;
        }
        let kind = entry.file_type().map_err(io(&entry.path()))?;
        if name == SKILL_FILE && !key.is_empty() {
            found.push((key.to_owned(), dir.to_owned()));
        } else if kind.is_dir() {
            subdirs.push(entry);
        }
    }
    for entry in subdirs {
        let path = entry.path();
        // Folders outside any skill may have any name; only a skill's path must be URI-safe,
        // which `read_skill` checks for the folders it serves.
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
        let child = if key.is_empty() { name } else { format!("{key}/{name}") };
        find_skills(&path, &child, depth + 1, limits, found)?;
    }
    Ok(())
}

/// Pass two for one skill: its files (read once into `files`), front matter and manifest.
fn read_skill(
    key: &str,
    dir: &Path,
    limits: &Limits,
    files: &mut BTreeMap<String, Arc<FileSnap>>,
) -> Result<SkillInfo, SkillError> {
    for part in key.split('/') {
        if !safe_segment(part) {
            return Err(SkillError::UnsupportedName { path: dir.to_owned() });
        }
    }
    let real = dir.canonicalize().map_err(io(dir))?;
    let mut own: Vec<String> = Vec::new();
    walk(dir, &real, key, 0, limits, files, &mut own)?;
    if own.len() > limits.max_files {
        return Err(SkillError::TooManyFiles { path: dir.to_owned(), max: limits.max_files });
    }
    let total: u64 = own.iter().map(|k| files[k].size).sum();
    if total > limits.max_skill_bytes {
        return Err(SkillError::SkillTooLarge { path: dir.to_owned(), size: total, max: limits.max_skill_bytes });
    }
    let skill_md = dir.join(SKILL_FILE);
    let snap = &files[&format!("{key}/{SKILL_FILE}")];
    let text = std::str::from_utf8(snap.bytes()).map_err(|_| SkillError::Frontmatter {
        path: skill_md.clone(),
        source: super::error::FrontmatterError::NotUtf8,
    })?;
    let fm = frontmatter::parse(text).map_err(|source| SkillError::Frontmatter { path: skill_md.clone(), source })?;
    let folder = key.rsplit('/').next().unwrap_or(key);
    if fm.name != folder {
        return Err(SkillError::NameMismatch { path: skill_md, name: fm.name, folder: folder.to_owned() });
    }
    Ok(SkillInfo::new(key, fm, own, files))
}

/// Reads every file under `dir` (key `key`) into `files`, noting its key in `own`.
fn walk(
    dir: &Path,
    skill_root: &Path,
    key: &str,
    depth: usize,
    limits: &Limits,
    files: &mut BTreeMap<String, Arc<FileSnap>>,
    own: &mut Vec<String>,
) -> Result<(), SkillError> {
    if depth > limits.max_depth {
        return Err(SkillError::TooDeep { path: dir.to_owned(), max: limits.max_depth });
    }
    for entry in fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let path = entry.path();
        let name = entry.file_name();
        if name.as_encoded_bytes().starts_with(b".") {
            continue;
        }
        let child = format!("{key}/{}", segment(&path, &name)?);
        let kind = entry.file_type().map_err(io(&path))?;
        let target = if kind.is_symlink() {
            // Followed only to a regular file inside the skill's own folder.
            let target = path.canonicalize().map_err(io(&path))?;
            if !target.starts_with(skill_root) {
                return Err(SkillError::Escapes { path });
            }
            if target.is_dir() {
                return Err(SkillError::DirectorySymlink { path });
            }
            target
        } else if kind.is_dir() {
            walk(&path, skill_root, &child, depth + 1, limits, files, own)?;
            continue;
        } else {
            path.clone()
        };
        if own.len() >= limits.max_files {
            return Err(SkillError::TooManyFiles { path: skill_root.to_owned(), max: limits.max_files });
        }
        if !files.contains_key(&child) {
            files.insert(child.clone(), Arc::new(read_file(&path, &target, limits.max_file_bytes)?));
        }
        own.push(child);
    }
    Ok(())
}

/// Reads one regular file, at most `max` bytes; `shown` is the path the error names.
fn read_file(shown: &Path, target: &Path, max: u64) -> Result<FileSnap, SkillError> {
    let meta = fs::metadata(target).map_err(io(shown))?;
    if !meta.is_file() {
        // A FIFO would block the read forever; a device could be anything.
        return Err(SkillError::NotAFile { path: shown.to_owned() });
    }
    if meta.len() > max {
        return Err(SkillError::FileTooLarge { path: shown.to_owned(), size: meta.len(), max });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    let file = fs::File::open(target).map_err(io(shown))?;
    file.take(max + 1).read_to_end(&mut bytes).map_err(io(shown))?;
    if bytes.len() as u64 > max {
        return Err(SkillError::FileTooLarge { path: shown.to_owned(), size: bytes.len() as u64, max });
    }
    Ok(FileSnap::new(shown, bytes))
}
