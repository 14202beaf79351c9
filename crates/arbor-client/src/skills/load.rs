//! The skills calls on [`Client`]: listing, resolving, loading, reading files and browsing
//! folders, each gated on the server's declaration and each read checked by `verify` before
//! its bytes go anywhere.
//!
//! This module is the only place a skill file is read; it does no caching (a caller that
//! loads twice reads twice, so a changed server is seen). Invariant: `resources/read` is
//! sent only for the `SKILL.md` of the skill being loaded or for a URI the loaded skill's
//! manifest lists (within the root of an opted-in dynamic skill), never during a listing.

use std::collections::HashSet;

use arbor_protocol::error::ErrorCode;
use arbor_protocol::methods::{self, MethodName};
use arbor_protocol::model::common::PaginatedRequestParams;
use arbor_protocol::model::resources::Resource;
use arbor_protocol::model::skills::{
    GetSkillRequestParams, ReadDirectoryRequestParams, SkillResources, DIRECTORY_READ, SKILLS_EXTENSION,
};

use super::error::{Check, SkillError};
use super::{frontmatter, verify, LoadOptions, Skill, SkillEntry, SkillFileContent};
use crate::client::Client;
use crate::error::ClientError;

/// The bound on `skills/list` pages, as for the other lists.
const MAX_PAGES: usize = 10_000;

fn endless(method: MethodName, pages: usize) -> SkillError {
    SkillError::EndlessList { method: method.as_str(), pages }
}

fn call(method: MethodName) -> impl FnOnce(ClientError) -> SkillError {
    move |source| SkillError::Call { method: method.as_str(), source }
}

impl Client {
    /// Whether the server declared the skills extension (`capabilities.extensions`
    /// holds `io.modelcontextprotocol/skills`); without it no `skills/*` call is made.
    pub fn offers_skills(&self) -> bool {
        self.server_capabilities().and_then(|c| c.extensions).is_some_and(|e| e.contains_key(SKILLS_EXTENSION))
    }

    fn require_skills(&self) -> Result<(), SkillError> {
        if self.offers_skills() {
            Ok(())
        } else {
            Err(SkillError::NotOffered)
        }
    }

    /// Every skill entry the server lists: `skills/list` page after page until a page has
    /// no cursor (or an empty one). Reads no file. A repeated cursor is an endless list.
    ///
    /// ```no_run
    /// # async fn f(client: arbor_client::Client) -> Result<(), arbor_client::skills::SkillError> {
    /// for entry in client.list_skills().await? {
    ///     println!("{} {}", entry.uri, entry.frontmatter["description"]);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_skills(&self) -> Result<Vec<SkillEntry>, SkillError> {
        self.require_skills()?;
        let mut all = Vec::new();
        let mut cursors = HashSet::new();
        let mut cursor: Option<String> = None;
        for pages in 1..=MAX_PAGES {
            let mut params = PaginatedRequestParams::default();
            params.cursor = cursor.take();
            let page = self.request::<methods::ListSkills>(params).await.map_err(call(MethodName::ListSkills))?;
            all.extend(page.skills);
            match page.next_cursor.filter(|c| !c.is_empty()) {
                None => return Ok(all),
                Some(c) if !cursors.insert(c.clone()) => return Err(endless(MethodName::ListSkills, pages)),
                Some(c) => cursor = Some(c),
            }
        }
        Err(endless(MethodName::ListSkills, MAX_PAGES))
    }

    /// Whether the server declared `directoryRead: true` in the skills extension's settings.
    pub fn offers_directory_read(&self) -> bool {
        let caps = self.server_capabilities().and_then(|c| c.extensions);
        caps.and_then(|e| e.get(SKILLS_EXTENSION)?.get(DIRECTORY_READ)?.as_bool()) == Some(true)
    }

    /// Every direct child of the directory `uri` (`skill://pdf-processing`, no trailing
    /// slash): `resources/directory/read` page after page, subdirectories with the MIME type
    /// `inode/directory`. Sent only if the server declared `directoryRead: true`. Reads no
    /// file: a host that has an entry needs no directory read (its manifest names every
    /// file); this is for browsing.
    pub async fn read_directory(&self, uri: &str) -> Result<Vec<Resource>, SkillError> {
        self.require_skills()?;
        if !self.offers_directory_read() {
            return Err(SkillError::DirectoryReadNotOffered);
        }
        let mut all = Vec::new();
        let mut cursors = HashSet::new();
        let mut params = ReadDirectoryRequestParams::new(uri);
        for pages in 1..=MAX_PAGES {
            let page = self
                .request::<methods::ReadDirectory>(params.clone())
                .await
                .map_err(call(MethodName::ReadDirectory))?;
            all.extend(page.resources);
            match page.next_cursor.filter(|c| !c.is_empty()) {
                None => return Ok(all),
                Some(c) if !cursors.insert(c.clone()) => return Err(endless(MethodName::ReadDirectory, pages)),
                Some(c) => params.cursor = Some(c),
            }
        }
        Err(endless(MethodName::ReadDirectory, MAX_PAGES))
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`. A server that
    /// answers Invalid params (or another entry) says `uri` is not a skill: [`SkillError::NotFound`].
    pub async fn get_skill(&self, uri: &str) -> Result<SkillEntry, SkillError> {
        self.require_skills()?;
        match self.request::<methods::GetSkill>(GetSkillRequestParams::new(uri)).await {
            Ok(got) if got.skill.uri == uri => Ok(got.skill),
            Ok(_) => Err(SkillError::NotFound(uri.to_owned())),
            Err(e) if e.rpc_code() == Some(ErrorCode::InvalidParams) => Err(SkillError::NotFound(uri.to_owned())),
            Err(e) => Err(call(MethodName::GetSkill)(e)),
        }
    }

    /// Loads a skill by name (its front matter `name`, or its skill path such as
    /// `acme/billing/refunds`, among the listed skills) or by its `SKILL.md` URI
    /// (confirmed with `skills/get`, listed or not); `"dynamic"` skills refused.
    ///
    /// ```no_run
    /// # async fn f(client: arbor_client::Client) -> Result<(), arbor_client::skills::SkillError> {
    /// let skill = client.load_skill("pdf-processing").await?;
    /// println!("{}: {}", skill.name(), skill.body());
    /// let forms = client.skill_file(&skill, "references/FORMS.md").await?;
    /// # Ok(()) }
    /// ```
    pub async fn load_skill(&self, name_or_uri: &str) -> Result<Skill, SkillError> {
        self.load_skill_with(name_or_uri, LoadOptions::default()).await
    }

    /// [`Client::load_skill`] with options.
    pub async fn load_skill_with(&self, name_or_uri: &str, options: LoadOptions) -> Result<Skill, SkillError> {
        let entry = if name_or_uri.contains("://") {
            self.get_skill(name_or_uri).await?
        } else {
            let mut found: Vec<SkillEntry> =
                self.list_skills().await?.into_iter().filter(|e| answers_to(e, name_or_uri)).collect();
            match found.len() {
                0 => return Err(SkillError::NotFound(name_or_uri.to_owned())),
                1 => found.remove(0),
                _ => {
                    let uris = found.into_iter().map(|e| e.uri).collect();
                    return Err(SkillError::Ambiguous { name: name_or_uri.to_owned(), uris });
                }
            }
        };
        self.load_skill_entry(entry, options).await
    }

    /// Loads the skill of `entry` (from [`Client::list_skills`] or [`Client::get_skill`]):
    /// checks the entry, reads its `SKILL.md`, verifies size then digest, parses the front
    /// matter and compares it with the entry's field by field. Nothing else is read.
    pub async fn load_skill_entry(&self, entry: SkillEntry, options: LoadOptions) -> Result<Skill, SkillError> {
        self.require_skills()?;
        let checked = verify::check_entry(&entry)?;
        if checked.manifest.is_none() && !options.allow_dynamic {
            return Err(SkillError::Dynamic { uri: entry.uri.clone() });
        }
        let (bytes, _) = self.read_checked(&entry, &entry.uri).await?;
        let text = String::from_utf8(bytes).map_err(|e| SkillError::Verification {
            uri: entry.uri.clone(),
            check: Check::Encoding(format!("SKILL.md is not UTF-8: {e}")),
        })?;
        let fm_error = |problem| SkillError::Frontmatter { uri: entry.uri.clone(), problem };
        let (fields, body_at) = frontmatter::parse(&text).map_err(fm_error)?;
        frontmatter::compare(&entry.frontmatter, &fields).map_err(fm_error)?;
        Ok(Skill {
            root: checked.root.to_owned(),
            name: checked.name.to_owned(),
            description: checked.description.to_owned(),
            verified: checked.manifest.is_some(),
            frontmatter: fields,
            text,
            body_at,
            entry,
        })
    }

    /// Reads one file of a loaded skill, by its path relative to the skill root
    /// (`references/FORMS.md`) or its URI, and verifies it against the skill's manifest.
    /// A URI the manifest does not list is refused before anything is sent.
    pub async fn skill_file(&self, skill: &Skill, path_or_uri: &str) -> Result<SkillFileContent, SkillError> {
        let uri = if path_or_uri.contains("://") {
            path_or_uri.to_owned()
        } else {
            format!("{}/{}", skill.root, path_or_uri.trim_start_matches('/'))
        };
        let (bytes, mime_type) = self.read_checked(&skill.entry, &uri).await?;
        let path = uri.strip_prefix(&skill.root).and_then(|p| p.strip_prefix('/')).unwrap_or(&uri).to_owned();
        Ok(SkillFileContent { uri, path, bytes, mime_type, verified: skill.verified })
    }

    /// Every file of a loaded skill's manifest but its `SKILL.md`, each read and verified,
    /// in manifest order; the first failure ends it.
    pub async fn skill_files(&self, skill: &Skill) -> Result<Vec<SkillFileContent>, SkillError> {
        let uris: Vec<String> = skill.files().map(|f| f.uri.to_owned()).filter(|u| u != skill.uri()).collect();
        let mut files = Vec::with_capacity(uris.len());
        for uri in uris {
            files.push(self.skill_file(skill, &uri).await?);
        }
        Ok(files)
    }

    /// `resources/read` of `uri` for the skill of `entry`, only when its manifest lists
    /// `uri` (or, for a dynamic skill, when `uri` is inside its root), and the bytes only
    /// when they match the manifest line.
    async fn read_checked(&self, entry: &SkillEntry, uri: &str) -> Result<(Vec<u8>, Option<String>), SkillError> {
        self.require_skills()?;
        let line = match &entry.resources {
            Some(SkillResources::Files(manifest)) => Some(verify::manifest_line(&entry.uri, manifest, uri)?),
            Some(SkillResources::Dynamic) | None => {
                let root = entry.uri.rsplit_once('/').map_or("", |(root, _)| root);
                let inside = uri.strip_prefix(root).is_some_and(|rest| rest.len() > 1 && rest.starts_with('/'));
                if !inside || uri.split('/').any(|s| s == ".." || s == ".") {
                    return Err(SkillError::Unlisted { skill: entry.uri.clone(), uri: uri.to_owned() });
                }
                None
            }
        };
        let read = self.read_resource(uri).await.map_err(call(MethodName::ReadResource))?;
        let (bytes, mime_type) = verify::content_bytes(uri, read.contents)?;
        let bytes = match line {
            Some(line) => verify::verify(line, bytes)?,
            None => bytes,
        };
        Ok((bytes, mime_type))
    }
}

/// Whether `entry` is the skill called `name`: its front matter name, or its skill path
/// (the URI between `://` and `/SKILL.md`).
fn answers_to(entry: &SkillEntry, name: &str) -> bool {
    let path = entry.uri.split_once("://").map(|(_, rest)| rest).and_then(|r| r.strip_suffix("/SKILL.md"));
    entry.frontmatter.get("name").and_then(|n| n.as_str()) == Some(name) || path == Some(name)
}
