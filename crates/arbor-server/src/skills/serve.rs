//! The requests a router answers from its skills: `skills/list`, `skills/get`,
//! `resources/read` of a skill file and `resources/directory/read`.
//!
//! Each request loads the current catalogs once and answers from them, so it sees one
//! scan of every source. Pages are cut by position: a cursor is the URL-safe base64 of
//! `<list>:<offset>` (`s` for skills, `d:<uri>` for a directory), refused with -32602
//! when it does not decode or points past the end. A rescan between two pages may
//! therefore shift what a later page holds (skills are few and change rarely; clients
//! re-list on `list_changed`). This module does not register or watch anything.
//!
//! Invariant: an entry is never split across pages, and an unknown or malformed skill
//! URI is -32602 (`resources/read` of an unknown file: the revision's "not found").

use arbor_protocol::error::McpError;
use arbor_protocol::model::common::Cursor;
use arbor_protocol::model::resources::ReadResourceResult;
use arbor_protocol::model::skills::{GetSkillResult, ListSkillsResult, ReadDirectoryResult};
use arbor_protocol::reflect::Clamped;
use arbor_protocol::version::ProtocolVersion;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use super::catalog::key_of;
use super::Skills;

fn encode(tag: &str, offset: usize) -> Cursor {
    URL_SAFE_NO_PAD.encode(format!("{tag}:{offset}"))
}

/// The offset a cursor of list `tag` resumes at, checked against the list's `len`.
fn decode(tag: &str, cursor: Option<&str>, len: usize) -> Result<usize, McpError> {
    let Some(cursor) = cursor else { return Ok(0) };
    let offset = URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|t| t.strip_prefix(tag).and_then(|r| r.strip_prefix(':')).map(str::to_owned))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n > 0 && n < len);
    offset.ok_or_else(|| McpError::invalid_params(format!("Invalid cursor: {:?}", Clamped(cursor).to_string())))
}

fn not_a_skill(uri: &str) -> McpError {
    McpError::invalid_params(format!("Not a served skill: {}", Clamped(uri)))
}

impl Skills {
    /// One page of `skills/list`.
    pub(crate) fn list(&self, cursor: Option<&str>, page_size: usize) -> Result<ListSkillsResult, McpError> {
        let catalogs = self.catalogs();
        let all: Vec<_> = catalogs.iter().flat_map(|c| c.skills.iter()).collect();
        let start = decode("s", cursor, all.len())?;
        let end = (start + page_size).min(all.len());
        let mut result = ListSkillsResult::new(all[start..end].iter().map(|s| s.entry.clone()).collect());
        result.next_cursor = (end < all.len()).then(|| encode("s", end));
        Ok(result)
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`.
    pub(crate) fn get(&self, uri: &str) -> Result<GetSkillResult, McpError> {
        let catalogs = self.catalogs();
        let skill = catalogs.iter().find_map(|c| c.skill(uri)).ok_or_else(|| not_a_skill(uri))?;
        Ok(GetSkillResult::new(skill.entry.clone()))
    }

    /// `resources/read` of the skill file at `uri`: its snapshot's bytes, exactly.
    pub(crate) fn read(&self, uri: &str, version: ProtocolVersion) -> Result<ReadResourceResult, McpError> {
        let key = key_of(uri)
            .ok_or_else(|| McpError::invalid_params(format!("Not a valid skill file URI: {}", Clamped(uri))))?;
        let catalogs = self.catalogs();
        let snap =
            catalogs.iter().find_map(|c| c.file(key)).ok_or_else(|| McpError::resource_not_found(uri, version))?;
        Ok(ReadResourceResult::new(vec![snap.contents(uri)]))
    }

    /// One page of `resources/directory/read` of the directory at `uri`.
    pub(crate) fn read_directory(
        &self,
        uri: &str,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<ReadDirectoryResult, McpError> {
        let not_a_directory =
            || McpError::invalid_params(format!("Not a directory of a served skill: {}", Clamped(uri)));
        let key = key_of(uri).ok_or_else(not_a_directory)?;
        let catalogs = self.catalogs();
        let children = catalogs.iter().find_map(|c| c.children(key)).ok_or_else(not_a_directory)?;
        let start = decode("d", cursor, children.len())?;
        let end = (start + page_size).min(children.len());
        let mut result = ReadDirectoryResult::new(children[start..end].to_vec());
        result.next_cursor = (end < children.len()).then(|| encode("d", end));
        Ok(result)
    }
}
