//! Resources: static resources by URI, and resource templates whose handler receives the
//! variables matched from the requested URI.
//!
//! A [`ResourceRoute`] serves exactly one URI. A [`TemplateRoute`] serves every URI its
//! RFC 6570 template matches (see `uri_template`); the matched, percent-decoded variables
//! are deserialised into the handler's typed input (a struct with a `String` field per
//! variable, or a map). A variable that does not fit the type (`abc` for a `u32` field)
//! means the template does not serve that URI, and the router tries the next one.
//!
//! Matching is linear in the URI's length (`uri_template`), and the router refuses URIs
//! over its cap ([`Router::max_uri_bytes`](super::Router::max_uri_bytes)) before matching
//! ([`check_uri_len`]), so no read costs more than a pass over a bounded URI per template.
//!
//! This module does not sanitise URIs: a handler that maps them to files must check the
//! path itself. Invariant: a template's completions name variables the template has.

use super::completion::{self, Completer, CompletionRequest, IntoCompletion};
use super::error::{RouteKind, RouterError};
use super::handler_fn::{HandlerFn, ReadFn};
use super::result::{IntoReadResult, ReadTarget};
use super::uri_template::UriTemplate;
use crate::context::RequestContext;
use crate::reply::Reply;
use arbor_protocol::error::McpError;
use arbor_protocol::meta::Meta;
use arbor_protocol::model::common::{Annotations, CacheScope, Icon};
use arbor_protocol::model::resources::{ReadResourceResult, Resource, ResourceTemplate};
use futures::future::BoxFuture;
use futures::FutureExt as _;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

type ReadFuture = BoxFuture<'static, Result<Reply<ReadResourceResult>, McpError>>;

/// Owned facts about one read, handed to an erased reader.
pub(crate) struct ReadCall {
    pub(crate) uri: String,
    pub(crate) mime_type: Option<String>,
    pub(crate) cache: Option<CacheHint>,
}

/// A route's own `ttlMs`/`cacheScope` for its reads (2026-07-28).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CacheHint {
    ttl_ms: u64,
    scope: CacheScope,
}

impl CacheHint {
    fn new(ttl: Duration, scope: CacheScope) -> Self {
        CacheHint { ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX), scope }
    }
}

fn finish<R: IntoReadResult>(
    call: &ReadCall,
    version: arbor_protocol::version::ProtocolVersion,
    out: R,
) -> Result<Reply<ReadResourceResult>, McpError> {
    let mut reply =
        out.into_read_result(&ReadTarget { uri: &call.uri, mime_type: call.mime_type.as_deref(), version })?;
    // Fields the reader set itself win over the route's hint. The runtime removes both for
    // the legacy revisions, which have no cache fields.
    if let (Reply::Complete(result), Some(hint)) = (&mut reply, call.cache) {
        result.ttl_ms.get_or_insert(hint.ttl_ms);
        result.cache_scope.get_or_insert(hint.scope);
    }
    Ok(reply)
}

// ===== static resources =====

type ErasedRead = Arc<dyn Fn(ReadCall, RequestContext) -> ReadFuture + Send + Sync>;

/// A static resource ready to register: one URI, its metadata and its reader.
///
/// ```
/// # use arbor_server::router::ResourceRoute;
/// async fn readme() -> &'static str {
///     "# Hello"
/// }
///
/// let route = ResourceRoute::new("file:///README.md", "readme", readme)
///     .description("The project's README")
///     .mime_type("text/markdown");
/// ```
pub struct ResourceRoute {
    pub(crate) resource: Resource,
    cache: Option<CacheHint>,
    reader: ErasedRead,
}

impl fmt::Debug for ResourceRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceRoute").field("resource", &self.resource).finish_non_exhaustive()
    }
}

impl ResourceRoute {
    /// The resource at `uri`, called `name`, read by `reader`.
    pub fn new<H, M>(uri: impl Into<String>, name: impl Into<String>, reader: H) -> Self
    where
        H: ReadFn<M>,
        H::Output: IntoReadResult,
    {
        let reader: ErasedRead = Arc::new(move |call, cx| {
            let version = cx.connection().protocol_version;
            reader.call(cx).map(move |out| finish(&call, version, out)).boxed()
        });
        let resource = Resource::new(uri, name);
        ResourceRoute { resource, cache: None, reader }
    }

    /// What the resource is.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.resource.description = Some(description.into());
        self
    }

    /// A display name (2025-06-18 on).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.resource.title = Some(title.into());
        self
    }

    /// The MIME type; text or bytes returned by the reader are labelled with it.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.resource.mime_type = Some(mime_type.into());
        self
    }

    /// The size in bytes, if known ahead of reading.
    pub fn size(mut self, size: u64) -> Self {
        self.resource.size = Some(size);
        self
    }

    /// Adds an icon (2025-11-25 on).
    pub fn icon(mut self, icon: Icon) -> Self {
        self.resource.icons.get_or_insert_with(Vec::new).push(icon);
        self
    }

    /// Client hints (audience, priority, last modified).
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.resource.annotations = Some(annotations);
        self
    }

    /// Sets the resource's `_meta`.
    pub fn meta(mut self, meta: Meta) -> Self {
        self.resource.meta = Some(meta);
        self
    }

    /// How long a 2026-07-28 client may cache a read of this resource, and who may share the
    /// copy (`ttlMs`, `cacheScope`). Without it the runtime's defaults apply
    /// (`ServerConfig::cache_ttl`, `ServerConfig::cache_scope`); a reader that sets the fields
    /// itself wins over both.
    pub fn cache_hint(mut self, ttl: Duration, scope: CacheScope) -> Self {
        self.cache = Some(CacheHint::new(ttl, scope));
        self
    }

    /// The definition clients list.
    pub fn definition(&self) -> &Resource {
        &self.resource
    }

    pub(crate) fn read(&self, cx: RequestContext) -> ReadFuture {
        let call =
            ReadCall { uri: self.resource.uri.clone(), mime_type: self.resource.mime_type.clone(), cache: self.cache };
        (self.reader)(call, cx)
    }
}

// ===== templates =====

/// A template's reader: `None` when the matched variables do not fit its input type.
type ErasedTemplateRead = Arc<dyn Fn(ReadCall, Map<String, Value>, RequestContext) -> Option<ReadFuture> + Send + Sync>;

/// A resource template ready to register: an RFC 6570 URI template, its metadata, its
/// reader and its variable completions.
///
/// ```
/// # use arbor_server::router::TemplateRoute;
/// # use arbor_server::McpError;
/// #[derive(serde::Deserialize)]
/// struct Item { id: u32 }
///
/// async fn item(vars: Item) -> Result<String, McpError> {
///     Ok(format!("{{\"id\": {}}}", vars.id))
/// }
///
/// let route = TemplateRoute::new("test://items/{id}", "item", item).mime_type("application/json");
/// ```
pub struct TemplateRoute {
    pub(crate) template: ResourceTemplate,
    pub(crate) parsed: UriTemplate,
    cache: Option<CacheHint>,
    reader: ErasedTemplateRead,
    pub(crate) completers: HashMap<String, Completer>,
}

impl fmt::Debug for TemplateRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut completions: Vec<&String> = self.completers.keys().collect();
        completions.sort();
        f.debug_struct("TemplateRoute")
            .field("template", &self.template)
            .field("completions", &completions)
            .finish_non_exhaustive()
    }
}

impl TemplateRoute {
    /// The resources matching `uri_template`, called `name`, read by `reader` with the
    /// matched variables as `A`. The convenient form of [`TemplateRoute::try_new`].
    ///
    /// # Panics
    ///
    /// With the [`RouterError::Template`] [`TemplateRoute::try_new`] returns: if
    /// `uri_template` uses more than `{var}` and `{+var}` expressions (see the module
    /// documentation).
    pub fn new<A, H, M>(uri_template: impl Into<String>, name: impl Into<String>, reader: H) -> Self
    where
        A: DeserializeOwned + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoReadResult,
    {
        TemplateRoute::try_new(uri_template, name, reader).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`TemplateRoute::new`], returning [`RouterError::Template`] instead of panicking
    /// when `uri_template` is not one the router can match.
    pub fn try_new<A, H, M>(
        uri_template: impl Into<String>,
        name: impl Into<String>,
        reader: H,
    ) -> Result<Self, RouterError>
    where
        A: DeserializeOwned + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoReadResult,
    {
        let uri_template = uri_template.into();
        let parsed = UriTemplate::parse(&uri_template)
            .map_err(|reason| RouterError::Template { template: uri_template.clone(), reason })?;
        let reader: ErasedTemplateRead = Arc::new(move |call, vars, cx| {
            let vars = parse_vars::<A>(vars)?;
            let version = cx.connection().protocol_version;
            Some(reader.call(vars, cx).map(move |out| finish(&call, version, out)).boxed())
        });
        let template = ResourceTemplate::new(uri_template, name);
        Ok(TemplateRoute { template, parsed, cache: None, reader, completers: HashMap::new() })
    }

    /// What the resources are.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.template.description = Some(description.into());
        self
    }

    /// A display name (2025-06-18 on).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.template.title = Some(title.into());
        self
    }

    /// The MIME type shared by every matching resource.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.template.mime_type = Some(mime_type.into());
        self
    }

    /// Adds an icon (2025-11-25 on).
    pub fn icon(mut self, icon: Icon) -> Self {
        self.template.icons.get_or_insert_with(Vec::new).push(icon);
        self
    }

    /// Client hints.
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.template.annotations = Some(annotations);
        self
    }

    /// Sets the template's `_meta`.
    pub fn meta(mut self, meta: Meta) -> Self {
        self.template.meta = Some(meta);
        self
    }

    /// How long a 2026-07-28 client may cache a read of this template's resources, and who
    /// may share the copy (`ttlMs`, `cacheScope`). Without it the runtime's defaults apply
    /// (`ServerConfig::cache_ttl`, `ServerConfig::cache_scope`); a reader that sets the fields
    /// itself wins over both.
    pub fn cache_hint(mut self, ttl: Duration, scope: CacheScope) -> Self {
        self.cache = Some(CacheHint::new(ttl, scope));
        self
    }

    /// Completes values of the template variable `variable` with `completer`
    /// (`completion/complete` with a `ref/resource` reference to this template).
    ///
    /// # Panics
    ///
    /// If the template has no variable called `variable`; [`TemplateRoute::try_complete`]
    /// returns the error instead.
    pub fn complete<H, M>(self, variable: impl Into<String>, completer: H) -> Self
    where
        H: HandlerFn<CompletionRequest, M>,
        H::Output: IntoCompletion,
    {
        self.try_complete(variable, completer).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`TemplateRoute::complete`], returning [`RouterError::UnknownVariable`] instead of
    /// panicking when the template has no variable called `variable`.
    pub fn try_complete<H, M>(mut self, variable: impl Into<String>, completer: H) -> Result<Self, RouterError>
    where
        H: HandlerFn<CompletionRequest, M>,
        H::Output: IntoCompletion,
    {
        let variable = variable.into();
        if !self.parsed.variables().any(|v| v == variable) {
            return Err(RouterError::UnknownVariable {
                kind: RouteKind::Template,
                name: self.template.uri_template.clone(),
                variable,
            });
        }
        self.completers.insert(variable, completion::erase(completer));
        Ok(self)
    }

    /// The definition clients list.
    pub fn definition(&self) -> &ResourceTemplate {
        &self.template
    }

    /// The read of `uri`, if this template serves it.
    pub(crate) fn read(&self, uri: &str, cx: RequestContext) -> Option<ReadFuture> {
        let vars: Map<String, Value> =
            self.parsed.matches(uri)?.into_iter().map(|(name, value)| (name, Value::String(value))).collect();
        let call = ReadCall { uri: uri.to_owned(), mime_type: self.template.mime_type.clone(), cache: self.cache };
        (self.reader)(call, vars, cx)
    }

    /// Whether this template serves `uri` (for subscriptions, which do not read).
    pub(crate) fn matches(&self, uri: &str) -> bool {
        self.parsed.is_match(uri)
    }
}

/// Refuses a URI longer than `max` bytes: -32602 naming its length and the cap (the URI
/// itself is not echoed: it is what was too long).
pub(crate) fn check_uri_len(uri: &str, max: usize) -> Result<(), McpError> {
    if uri.len() <= max {
        return Ok(());
    }
    Err(McpError::InvalidParams {
        message: format!("URI too long: {} bytes, over this server's cap of {max} bytes", uri.len()),
        data: Some(serde_json::json!({"reason": "uriTooLong", "length": uri.len(), "limit": max})),
    })
}

/// Variables as `A`: as strings first, then with each value that reads as JSON (a number,
/// a boolean) taken as that, for typed fields.
fn parse_vars<A: DeserializeOwned>(vars: Map<String, Value>) -> Option<A> {
    if let Ok(parsed) = serde_json::from_value(Value::Object(vars.clone())) {
        return Some(parsed);
    }
    let typed: Map<String, Value> = vars
        .into_iter()
        .map(|(name, value)| {
            let typed = value.as_str().and_then(|s| serde_json::from_str::<Value>(s).ok()).unwrap_or(value);
            (name, typed)
        })
        .collect();
    serde_json::from_value(Value::Object(typed)).ok()
}

#[cfg(test)]
mod tests {
    use super::check_uri_len;

    #[test]
    fn a_uri_over_the_cap_is_refused_by_its_length_without_being_echoed() {
        assert!(check_uri_len("demo://notes/1", 16).is_ok());
        assert!(check_uri_len(&"a".repeat(16), 16).is_ok());
        let err = check_uri_len(&format!("demo://{}", "x".repeat(100)), 16).unwrap_err();
        let object = err.to_error_object();
        assert_eq!(object.code, -32602);
        assert_eq!(object.message, "URI too long: 107 bytes, over this server's cap of 16 bytes");
        let data = object.data.expect("data");
        assert_eq!(data, serde_json::json!({"reason": "uriTooLong", "length": 107, "limit": 16}));
    }
}
