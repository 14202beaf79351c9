//! Era-specific finishing of results: `resultType` and the cache fields.
//!
//! 2026-07-28 requires `resultType` on every result and `ttlMs`/`cacheScope` on the
//! cacheable ones (discover, the lists, `resources/read`); the legacy revisions have none
//! of these members, so they are cleared there even if a handler set them. Handlers
//! therefore never need to know the era. This module only touches those members; it does
//! not decide what a result contains.
//!
//! Invariant: after [`Shape::shape`], a result carries exactly the era's bookkeeping
//! members, and a handler's own cache hints are kept in the modern era.

use std::time::Duration;

use arbor_protocol::model::common::{CacheScope, EmptyResult, ResultType};
use arbor_protocol::model::completion::CompleteResult;
use arbor_protocol::model::lifecycle::DiscoverResult;
use arbor_protocol::model::prompts::{GetPromptResult, ListPromptsResult};
use arbor_protocol::model::resources::{ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult};
use arbor_protocol::model::tools::{CallToolResult, ListToolsResult};

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

/// A complete result finished for its era.
pub(crate) trait Shape {
    /// `modern`: the request was served under 2026-07-28.
    fn shape(&mut self, modern: bool, cache: &CacheDefaults);
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        impl Shape for $t {
            fn shape(&mut self, modern: bool, _cache: &CacheDefaults) {
                self.result_type = modern.then_some(ResultType::Complete);
            }
        }
    )*};
}

macro_rules! cacheable {
    ($($t:ty),*) => {$(
        impl Shape for $t {
            fn shape(&mut self, modern: bool, cache: &CacheDefaults) {
                if modern {
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

plain!(CallToolResult, GetPromptResult, CompleteResult, EmptyResult);
cacheable!(
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    ListPromptsResult,
    DiscoverResult
);
