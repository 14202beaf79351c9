//! Skills: the `io.modelcontextprotocol/skills` extension (SEP-2640): `skills/list`,
//! `skills/get`, `resources/directory/read`, the skill entry and its manifest.
//!
//! A skill is a folder with a `SKILL.md` (YAML front matter, then markdown) and
//! supporting files, every one of them a plain resource under `skill://<skill-path>/…`.
//! An entry names the skill's `SKILL.md`, carries its front matter as JSON, and lists
//! every file with its SHA-256 digest and size (the manifest), or says `"dynamic"` for a
//! skill generated per request. This module holds the wire shapes only: it neither reads
//! folders nor verifies digests (the server's `skills` module and the client do).
//!
//! Invariant: results carry `resultType` and the 2026-07-28 cache fields as options,
//! like every list result, so one type serves both eras; and an entry's `resources` is
//! either a manifest or the exact string `"dynamic"`, nothing else.

use crate::meta::Meta;
use crate::model::common::{CacheScope, Cursor, JsonObject, ResultType};
use crate::model::resources::Resource;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The extension's identifier, the key of `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The extension setting that promises `resources/directory/read`.
pub const DIRECTORY_READ: &str = "directoryRead";

/// The URI scheme skill files are served under.
pub const SKILL_SCHEME: &str = "skill";

/// The file that makes a folder a skill, and the last segment of every skill URI.
pub const SKILL_FILE: &str = "SKILL.md";

/// The MIME type of a directory resource (`resources/directory/read`).
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// The MIME type of a `SKILL.md`.
pub const SKILL_MIME_TYPE: &str = "text/markdown";

/// The `resources` string of a skill generated per request, which has no manifest.
pub const DYNAMIC: &str = "dynamic";

wire_struct! {
    /// One file of a skill's manifest.
    pub struct SkillFile {
        /// The file's resource URI (`skill://<skill-path>/<file-path>`).
        req uri: String = "uri",
        /// `"sha256:"` and 64 lowercase hex digits of the file's raw bytes.
        req digest: String = "digest",
        /// The byte length of the same bytes. Required by the extension as the
        /// conformance suite tests it; absent from the SEP's first draft, so a host
        /// reading such an entry can check the digest only.
        opt size: u64 = "size",
    }
}

/// A skill's `resources`: its manifest, or `"dynamic"`.
#[derive(Clone, Debug, PartialEq)]
pub enum SkillResources {
    /// Every file of the skill exactly once, `SKILL.md` included.
    Files(Vec<SkillFile>),
    /// The skill is generated per request: no manifest, nothing to verify against.
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(s),
            SkillResources::Dynamic => s.serialize_str(DYNAMIC),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Files(Vec<SkillFile>),
            Word(String),
        }
        match Raw::deserialize(d)? {
            Raw::Files(files) => Ok(SkillResources::Files(files)),
            Raw::Word(w) if w == DYNAMIC => Ok(SkillResources::Dynamic),
            Raw::Word(w) => Err(serde::de::Error::invalid_value(serde::de::Unexpected::Str(&w), &"\"dynamic\"")),
        }
    }
}

wire_struct! {
    /// A skill entry, as `skills/list` and `skills/get` carry it.
    pub struct Skill {
        /// The `SKILL.md` resource URI.
        req uri: String = "uri",
        /// The `SKILL.md` front matter verbatim, as JSON; `name` and `description` are
        /// always there.
        req frontmatter: JsonObject = "frontmatter",
        /// The manifest, or `"dynamic"`. Absent only from servers of the SEP's first
        /// draft, which left it out for dynamic skills: read that as `"dynamic"`.
        opt resources: SkillResources = "resources",
        /// Entry metadata.
        opt meta: Meta = "_meta",
    }
}

wire_struct! {
    /// The result of `skills/list`.
    #[derive(Default)]
    pub struct ListSkillsResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"complete"` in 2026-07-28.
        opt result_type: ResultType = "resultType",
        /// The skills on this page; an entry is never split across pages.
        req skills: Vec<Skill> = "skills",
        /// Where the next page starts.
        opt next_cursor: Cursor = "nextCursor",
        /// Freshness in milliseconds (2026-07-28).
        opt ttl_ms: u64 = "ttlMs",
        /// Cache sharing (2026-07-28).
        opt cache_scope: CacheScope = "cacheScope",
    }
}

wire_struct! {
    /// The params of `skills/get`.
    #[derive(Default)]
    pub struct GetSkillRequestParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// The skill's `SKILL.md` URI.
        req uri: String = "uri",
    }
}

wire_struct! {
    /// The result of `skills/get`: one entry, never a cursor.
    pub struct GetSkillResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"complete"` in 2026-07-28.
        opt result_type: ResultType = "resultType",
        /// The skill.
        req skill: Skill = "skill",
        /// Freshness in milliseconds (2026-07-28).
        opt ttl_ms: u64 = "ttlMs",
        /// Cache sharing (2026-07-28).
        opt cache_scope: CacheScope = "cacheScope",
    }
}

wire_struct! {
    /// The params of `resources/directory/read`.
    #[derive(Default)]
    pub struct ReadDirectoryRequestParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// The directory's URI (no trailing slash).
        req uri: String = "uri",
        /// Where to continue; absent for the first page.
        opt cursor: Cursor = "cursor",
    }
}

wire_struct! {
    /// The result of `resources/directory/read`: the directory's direct children,
    /// subdirectories with the MIME type [`DIRECTORY_MIME_TYPE`].
    #[derive(Default)]
    pub struct ReadDirectoryResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"complete"` in 2026-07-28.
        opt result_type: ResultType = "resultType",
        /// The children on this page.
        req resources: Vec<Resource> = "resources",
        /// Where the next page starts.
        opt next_cursor: Cursor = "nextCursor",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_entry_round_trips_with_a_manifest_or_dynamic() {
        let wire = json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing", "description": "PDFs", "license": "MIT"},
            "resources": [{"uri": "skill://pdf-processing/SKILL.md", "digest": "sha256:00", "size": 3}],
        });
        let skill: Skill = serde_json::from_value(wire.clone()).unwrap();
        assert!(matches!(&skill.resources, Some(SkillResources::Files(f)) if f[0].size == Some(3)));
        assert_eq!(serde_json::to_value(&skill).unwrap(), wire);
        let dynamic: Skill =
            serde_json::from_value(json!({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": "dynamic"}))
                .unwrap();
        assert_eq!(dynamic.resources, Some(SkillResources::Dynamic));
        assert_eq!(serde_json::to_value(&dynamic).unwrap()["resources"], "dynamic");
    }

    #[test]
    fn resources_other_than_a_manifest_or_dynamic_are_refused() {
        for bad in [json!("static"), json!(3), json!({"uri": "x"})] {
            let wire = json!({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": bad});
            assert!(serde_json::from_value::<Skill>(wire).is_err(), "{bad} was accepted");
        }
    }
}
