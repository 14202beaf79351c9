//! Constructors for the skills extension's types (see the parent module).
//!
//! ```
//! use arbor_protocol::model::skills::{GetSkillResult, Skill, SkillFile, SkillResources};
//!
//! let mut frontmatter = serde_json::Map::new();
//! frontmatter.insert("name".into(), "pdf-processing".into());
//! frontmatter.insert("description".into(), "PDFs".into());
//! let file = SkillFile::new("skill://pdf-processing/SKILL.md", "sha256:00", 40);
//! let skill = Skill::new("skill://pdf-processing/SKILL.md", frontmatter, SkillResources::Files(vec![file]));
//! let json = serde_json::to_value(GetSkillResult::new(skill)).unwrap();
//! assert_eq!(json["skill"]["resources"][0]["size"], 40);
//! ```

use crate::meta::Meta;
use crate::model::common::{CacheScope, Cursor, JsonObject, ResultType};
use crate::model::resources::Resource;
use crate::model::skills::{
    GetSkillRequestParams, GetSkillResult, ListSkillsResult, ReadDirectoryRequestParams, ReadDirectoryResult, Skill,
    SkillFile, SkillResources,
};

impl SkillFile {
    /// The manifest line of the file at `uri`: its digest (`sha256:<hex>`) and size.
    pub fn new(uri: impl Into<String>, digest: impl Into<String>, size: u64) -> Self {
        SkillFile { uri: uri.into(), digest: digest.into(), size: Some(size), extra: Default::default() }
    }
}

impl Skill {
    /// The entry of the skill whose `SKILL.md` is at `uri`.
    pub fn new(uri: impl Into<String>, frontmatter: JsonObject, resources: SkillResources) -> Self {
        Skill { uri: uri.into(), frontmatter, resources: Some(resources), meta: None, extra: Default::default() }
    }
}

setters!(Skill {
    /// Entry metadata.
    with_meta => meta: Meta,
});

impl ListSkillsResult {
    /// One page of skills, the last one.
    pub fn new(skills: Vec<Skill>) -> Self {
        ListSkillsResult { skills, ..Default::default() }
    }
}

setters!(ListSkillsResult {
    /// Where the next page starts.
    with_next_cursor => next_cursor: Cursor,
    /// Cache sharing (2026-07-28).
    with_cache_scope => cache_scope: CacheScope,
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` in 2026-07-28.
    with_result_type => result_type: ResultType,
});

exact_setters!(ListSkillsResult {
    /// Freshness in milliseconds (2026-07-28).
    with_ttl_ms => ttl_ms: u64,
});

impl GetSkillRequestParams {
    /// Asks for the skill whose `SKILL.md` is at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        GetSkillRequestParams { uri: uri.into(), ..Default::default() }
    }
}

setters!(GetSkillRequestParams {
    /// Request metadata.
    with_meta => meta: Meta,
});

impl GetSkillResult {
    /// The answer carrying `skill`.
    pub fn new(skill: Skill) -> Self {
        GetSkillResult {
            meta: None,
            result_type: None,
            skill,
            ttl_ms: None,
            cache_scope: None,
            extra: Default::default(),
        }
    }
}

setters!(GetSkillResult {
    /// Cache sharing (2026-07-28).
    with_cache_scope => cache_scope: CacheScope,
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` in 2026-07-28.
    with_result_type => result_type: ResultType,
});

exact_setters!(GetSkillResult {
    /// Freshness in milliseconds (2026-07-28).
    with_ttl_ms => ttl_ms: u64,
});

impl ReadDirectoryRequestParams {
    /// Asks for the children of the directory at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ReadDirectoryRequestParams { uri: uri.into(), ..Default::default() }
    }
}

setters!(ReadDirectoryRequestParams {
    /// Where to continue.
    with_cursor => cursor: Cursor,
    /// Request metadata.
    with_meta => meta: Meta,
});

impl ReadDirectoryResult {
    /// One page of a directory's children, the last one.
    pub fn new(resources: Vec<Resource>) -> Self {
        ReadDirectoryResult { resources, ..Default::default() }
    }
}

setters!(ReadDirectoryResult {
    /// Where the next page starts.
    with_next_cursor => next_cursor: Cursor,
    /// Result metadata.
    with_meta => meta: Meta,
    /// `"complete"` in 2026-07-28.
    with_result_type => result_type: ResultType,
});
