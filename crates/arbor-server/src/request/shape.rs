//! Era-specific finishing of results: lowering to the request's revision, `resultType` and
//! the cache fields.
//!
//! First the result is lowered (`arbor_protocol::era::lower`): members and content blocks
//! the negotiated revision does not define are dropped or replaced there, the one place
//! that knows how revisions differ on the wire. Then 2026-07-28 requires `resultType` on
//! every result and `ttlMs`/`cacheScope` on the cacheable ones (discover, the lists,
//! `resources/read`); the legacy revisions have none of these members, so they are
//! cleared there even if a handler set them. Handlers therefore never need to know the
//! era. This module does not decide what a result contains.
//!
//! Invariant: after [`Shape::shape`], a result carries only what its revision defines,
//! exactly the era's bookkeeping members, and a handler's own cache hints in the modern era.

use std::time::Duration;

use arbor_protocol::era::lower::Lower;
use arbor_protocol::model::common::{CacheScope, EmptyResult, ResultType};
use arbor_protocol::model::completion::CompleteResult;
use arbor_protocol::model::lifecycle::DiscoverResult;
use arbor_protocol::model::prompts::{GetPromptResult, ListPromptsResult};
use arbor_protocol::model::resources::{ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult};
use arbor_protocol::model::skills::{GetSkillResult, ListSkillsResult, ReadDirectoryResult};
use arbor_protocol::model::tools::{CallToolResult, ListToolsResult};
use arbor_protocol::version::{Era, ProtocolVersion};

/// The cache hints put on cacheable results that carry none.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CacheDefaults {
    pub(crate) ttl_ms: u64,
    pub(crate) scope: CacheScope,
    /// The result answers an MRTR retry, which must never be cached.
    pub(crate) uncacheable: bool,
}

impl CacheDefaults {
    pub(crate) fn new(ttl: Duration, scope: CacheScope) -> CacheDefaults {
        CacheDefaults { ttl_ms: ttl.as_millis() as u64, scope, uncacheable: false }
    }
}

/// A complete result finished for its revision.
pub(crate) trait Shape {
    /// `version`: the revision the request was served under.
    fn shape(&mut self, version: ProtocolVersion, cache: &CacheDefaults);
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        impl Shape for $t {
            fn shape(&mut self, version: ProtocolVersion, _cache: &CacheDefaults) {
                self.lower(version);
                self.result_type = (version.era() == Era::Modern).then_some(ResultType::Complete);
            }
        }
    )*};
}

macro_rules! cacheable {
    ($($t:ty),*) => {$(
        impl Shape for $t {
            fn shape(&mut self, version: ProtocolVersion, cache: &CacheDefaults) {
                self.lower(version);
                if version.era() == Era::Modern {
                    self.result_type = Some(ResultType::Complete);
                    if cache.uncacheable {
                        self.ttl_ms = Some(0);
                    } else {
                        self.ttl_ms.get_or_insert(cache.ttl_ms);
                    }
                    self.cache_scope.get_or_insert(cache.scope);
                } else {
                    self.result_type = None;
                    self.ttl_ms = None;
                    self.cache_scope = None;
                }
            }
        }
    )*};
}

// `resources/directory/read` is not in the 2026-07-28 schema, so nothing asks for cache
// hints on it: it gets `resultType` only, like any result of an unknown method.
plain!(CallToolResult, GetPromptResult, CompleteResult, EmptyResult, ReadDirectoryResult);
cacheable!(
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    ListPromptsResult,
    DiscoverResult,
    ListSkillsResult,
    GetSkillResult
);
