//! The protocol revisions Arbor knows, the era each belongs to, and the table of
//! what each revision supports.
//!
//! This is the only place (with `era/`) that knows how revisions differ. Code
//! elsewhere asks `version.supports(Feature::Elicitation)`; it never compares
//! version strings or dates, because a date ordering says nothing about which
//! features a revision removed (batching lived in 2025-03-26 only).
//! It does not negotiate: `era::handshake` and `era::per_request` do that.
//!
//! ```
//! use arbor_protocol::jsonrpc::Batching;
//! use arbor_protocol::version::{Era, Feature, ProtocolVersion};
//!
//! let v = ProtocolVersion::parse("2025-06-18").unwrap();
//! assert_eq!(v.era(), Era::Legacy);
//! assert!(v.supports(Feature::Elicitation));
//! assert!(!v.supports(Feature::Batching));
//! assert_eq!(ProtocolVersion::V2025_03_26.batching(), Batching::Allowed);
//! ```
//!
//! Invariant: [`ProtocolVersion`] is closed. An unknown string is not a version;
//! it stays a string (in an `UnsupportedProtocolVersion` error, say) and is never
//! coerced into the nearest known revision.

use crate::jsonrpc::Batching;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// One dated revision of the MCP specification.
///
/// There is deliberately no `Ord`: ask [`ProtocolVersion::supports`] instead of
/// "is this version at least X".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProtocolVersion {
    /// 2024-11-05: the first dated revision (`initialize`, stdio, HTTP+SSE).
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP, OAuth, batching, audio, tool annotations.
    V2025_03_26,
    /// 2025-06-18: structured output, elicitation, resource links; no batching.
    V2025_06_18,
    /// 2025-11-25: icons, URL elicitation, sampling tools, experimental tasks.
    /// The last revision of the handshake era.
    V2025_11_25,
    /// 2026-07-28: stateless, terms in every request's `_meta`.
    V2026_07_28,
}

/// How a peer learns the terms (version, capabilities, log level) of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2024-11-05 … 2025-11-25: once per session, through the `initialize`
    /// handshake (`era::handshake`).
    Legacy,
    /// 2026-07-28 on: in every request's `_meta`, no session (`era::per_request`).
    Modern,
}

impl ProtocolVersion {
    /// Every known revision, oldest first.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ];

    /// The newest revision Arbor speaks.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2026_07_28;

    /// The newest revision of the handshake era.
    pub const LATEST_LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// Reads a version string; `None` for anything that is not exactly a known
    /// revision (the `draft` schema is not a revision a peer may announce).
    pub fn parse(s: &str) -> Option<ProtocolVersion> {
        // As a fixed-size array every comparison is two integer compares, where a search
        // of `ALL` called `memcmp` once per revision; a request reads its version two or
        // three times.
        let text: &[u8; 10] = s.as_bytes().try_into().ok()?;
        Some(match text {
            b"2024-11-05" => ProtocolVersion::V2024_11_05,
            b"2025-03-26" => ProtocolVersion::V2025_03_26,
            b"2025-06-18" => ProtocolVersion::V2025_06_18,
            b"2025-11-25" => ProtocolVersion::V2025_11_25,
            b"2026-07-28" => ProtocolVersion::V2026_07_28,
            _ => return None,
        })
    }

    /// The version string as it travels.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// The era the revision belongs to.
    pub const fn era(self) -> Era {
        match self {
            ProtocolVersion::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// The newest of `versions`, by release order; `None` when it is empty.
    ///
    /// Negotiation needs "the latest supported", and this is the one way to ask
    /// for it without giving the type an ordering other code could misuse.
    pub fn newest(versions: impl IntoIterator<Item = ProtocolVersion>) -> Option<ProtocolVersion> {
        versions.into_iter().max_by_key(|v| v.release_index())
    }

    fn release_index(self) -> usize {
        // ALL is in release order and holds every variant, so this always finds one.
        ProtocolVersion::ALL.iter().position(|v| *v == self).unwrap_or(0)
    }

    /// Whether this revision has `feature`. See [`Feature`] for the rows.
    pub fn supports(self, feature: Feature) -> bool {
        feature.revisions().contains(&self)
    }

    /// Whether a frame of this revision may hold a JSON-RPC batch.
    pub fn batching(self) -> Batching {
        if self.supports(Feature::Batching) {
            Batching::Allowed
        } else {
            Batching::Refused
        }
    }
}

impl Batching {
    /// The batching rule of `version`, from the feature table.
    pub fn for_version(version: ProtocolVersion) -> Batching {
        version.batching()
    }
}

/// A string that names no known revision.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol version {0:?}")]
pub struct UnknownVersion(pub String);

impl FromStr for ProtocolVersion {
    type Err = UnknownVersion;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProtocolVersion::parse(s).ok_or_else(|| UnknownVersion(s.to_owned()))
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        ProtocolVersion::parse(&s).ok_or_else(|| serde::de::Error::custom(UnknownVersion(s.into_owned())))
    }
}

/// Something a revision may or may not have: a wire shape, a method, a field, a
/// header, a rule. Each variant's doc names the revisions that have it; the
/// table in [`Feature::revisions`] is the single source of that answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Feature {
    // Handshake-era machinery, gone in 2026-07-28.
    /// `initialize` / `notifications/initialized`: 2024-11-05 … 2025-11-25.
    InitializeHandshake,
    /// `ping`: 2024-11-05 … 2025-11-25.
    Ping,
    /// `logging/setLevel` (session-wide log level): 2024-11-05 … 2025-11-25.
    SetLogLevel,
    /// `resources/subscribe` and `resources/unsubscribe`: 2024-11-05 … 2025-11-25.
    ResourceSubscribe,
    /// Server-to-client JSON-RPC requests (sampling, roots, elicitation sent as
    /// requests): 2024-11-05 … 2025-11-25.
    ServerToClientRequests,
    /// `notifications/roots/list_changed`: 2024-11-05 … 2025-11-25.
    RootsListChanged,
    /// `-32002` for a missing resource: 2024-11-05 … 2025-11-25.
    ResourceNotFoundCode,

    // 2025-03-26 additions.
    /// JSON-RPC batches: 2025-03-26 only.
    Batching,
    /// `AudioContent`: 2025-03-26 on.
    AudioContent,
    /// `ToolAnnotations`: 2025-03-26 on.
    ToolAnnotations,
    /// The `completions` server capability: 2025-03-26 on.
    CompletionsCapability,
    /// `message` on `notifications/progress`: 2025-03-26 on.
    ProgressMessage,
    /// The Streamable HTTP transport: 2025-03-26 on.
    StreamableHttp,
    /// OAuth 2.1 authorization for HTTP: 2025-03-26 on.
    Authorization,
    /// `Mcp-Session-Id` sessions, the GET stream and DELETE on Streamable HTTP:
    /// 2025-03-26 … 2025-11-25.
    HttpSessions,
    /// SSE resumption with `Last-Event-ID`: 2025-03-26 … 2025-11-25.
    SseResumability,

    // 2025-06-18 additions.
    /// `structuredContent` and `outputSchema` on tools: 2025-06-18 on.
    StructuredToolOutput,
    /// Elicitation (`elicitation/create` as a request, or as an MRTR input
    /// request in 2026-07-28) and the `elicitation` capability: 2025-06-18 on.
    Elicitation,
    /// `resource_link` content: 2025-06-18 on.
    ResourceLinks,
    /// `title` fields (`BaseMetadata`): 2025-06-18 on.
    Titles,
    /// `context.arguments` on `completion/complete`: 2025-06-18 on.
    CompletionContext,
    /// The `MCP-Protocol-Version` HTTP header: 2025-06-18 on.
    ProtocolVersionHeader,

    // 2025-11-25 additions.
    /// `icons` on implementations, tools, prompts and resources: 2025-11-25 on.
    Icons,
    /// URL-mode elicitation: 2025-11-25 on.
    UrlElicitation,
    /// `elicitationId`, `notifications/elicitation/complete` and the `-32042`
    /// error: 2025-11-25 only (2026-07-28 correlates through `requestState`).
    UrlElicitationCompletion,
    /// `tools`/`toolChoice` in sampling: 2025-11-25 on.
    SamplingTools,
    /// Titled/untitled, single/multi-select enum schemas in elicitation:
    /// 2025-11-25 on.
    EnumSchemaForms,
    /// Core experimental tasks (`tasks/*`, `capabilities.tasks`, the
    /// `related-task` `_meta` key): 2025-11-25 only; 2026-07-28 moves tasks to
    /// an extension.
    CoreTasks,
    /// SSE polling (server closes the stream after `retry`): 2025-11-25 only.
    SsePolling,
    /// JSON Schema 2020-12 as the default dialect: 2025-11-25 on.
    JsonSchema2020,

    // 2026-07-28 additions.
    /// Terms in each request's `_meta`, no session: 2026-07-28.
    PerRequestMeta,
    /// `server/discover`: 2026-07-28.
    ServerDiscover,
    /// `subscriptions/listen` and its acknowledgement: 2026-07-28.
    SubscriptionsListen,
    /// `input_required` results and retries with `inputResponses` (MRTR):
    /// 2026-07-28.
    InputRequired,
    /// `resultType` required on every result: 2026-07-28.
    ResultType,
    /// `ttlMs` / `cacheScope` on discover, list and read results: 2026-07-28.
    Caching,
    /// `capabilities.extensions`: 2026-07-28.
    Extensions,
    /// The `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` HTTP headers: 2026-07-28.
    MethodHeaders,
    /// The error codes -32020, -32021, -32022: 2026-07-28.
    ModernErrorCodes,
    /// `structuredContent` may be any JSON value, not only an object: 2026-07-28.
    AnyStructuredContent,
    /// On HTTP, closing a request's stream cancels it: 2026-07-28.
    DisconnectCancels,
}

use ProtocolVersion::{V2024_11_05 as V1, V2025_03_26 as V2, V2025_06_18 as V3, V2025_11_25 as V4, V2026_07_28 as V5};

impl Feature {
    /// The revisions that have this feature. This match is the feature table.
    pub fn revisions(self) -> &'static [ProtocolVersion] {
        const LEGACY: &[ProtocolVersion] = &[V1, V2, V3, V4];
        const FROM_25_03: &[ProtocolVersion] = &[V2, V3, V4, V5];
        const FROM_25_06: &[ProtocolVersion] = &[V3, V4, V5];
        const FROM_25_11: &[ProtocolVersion] = &[V4, V5];
        const ONLY_25_11: &[ProtocolVersion] = &[V4];
        const MODERN: &[ProtocolVersion] = &[V5];
        match self {
            Feature::InitializeHandshake
            | Feature::Ping
            | Feature::SetLogLevel
            | Feature::ResourceSubscribe
            | Feature::ServerToClientRequests
            | Feature::RootsListChanged
            | Feature::ResourceNotFoundCode => LEGACY,
            Feature::Batching => &[V2],
            Feature::AudioContent
            | Feature::ToolAnnotations
            | Feature::CompletionsCapability
            | Feature::ProgressMessage
            | Feature::StreamableHttp
            | Feature::Authorization => FROM_25_03,
            Feature::HttpSessions | Feature::SseResumability => &[V2, V3, V4],
            Feature::StructuredToolOutput
            | Feature::Elicitation
            | Feature::ResourceLinks
            | Feature::Titles
            | Feature::CompletionContext
            | Feature::ProtocolVersionHeader => FROM_25_06,
            Feature::Icons
            | Feature::UrlElicitation
            | Feature::SamplingTools
            | Feature::EnumSchemaForms
            | Feature::JsonSchema2020 => FROM_25_11,
            Feature::UrlElicitationCompletion | Feature::CoreTasks | Feature::SsePolling => ONLY_25_11,
            Feature::PerRequestMeta
            | Feature::ServerDiscover
            | Feature::SubscriptionsListen
            | Feature::InputRequired
            | Feature::ResultType
            | Feature::Caching
            | Feature::Extensions
            | Feature::MethodHeaders
            | Feature::ModernErrorCodes
            | Feature::AnyStructuredContent
            | Feature::DisconnectCancels => MODERN,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_and_unknown_ones_do_not_parse() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
        assert_eq!(ProtocolVersion::parse("draft"), None);
        assert_eq!(ProtocolVersion::parse("2025-11-25 "), None);
        assert_eq!(ProtocolVersion::parse("2025-11-2"), None);
        assert_eq!(ProtocolVersion::parse("2025-11-26"), None);
        assert_eq!(ProtocolVersion::parse(""), None);
        assert!(serde_json::from_str::<ProtocolVersion>("\"1900-01-01\"").is_err());
    }

    #[test]
    fn newest_follows_release_order() {
        assert_eq!(ProtocolVersion::newest(ProtocolVersion::ALL), Some(ProtocolVersion::LATEST));
        assert_eq!(ProtocolVersion::newest([V3, V1, V2]), Some(V3));
        assert_eq!(ProtocolVersion::newest([]), None);
    }
}
