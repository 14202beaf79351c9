//! Which era a server speaks, and the opening exchange of each: the `server/discover`
//! probe (modern) and the `initialize` handshake (legacy), with the per-server
//! [`EraCache`].
//!
//! Detection follows the spec's backward-compatibility rules (stdio and Streamable HTTP
//! alike): probe with `server/discover` carrying the modern terms; a `DiscoverResult` or
//! a recognised modern error (-32020, -32021, -32022) means modern; any other error, an
//! HTTP status without a modern error body, or silence until the probe timeout means
//! legacy, and the client falls back to `initialize`. The fallback is never keyed on one
//! error code. This module does not own the link; it sends through it.
//! Invariant: the era is cached only after a successful opening, so a failed probe or
//! handshake never poisons the cache.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arbor_protocol::era::Handshake;
use arbor_protocol::error::{ErrorCode, McpError};
use arbor_protocol::method::decode_result;
use arbor_protocol::methods::{self, MethodName};
use arbor_protocol::model::common::Implementation;
use arbor_protocol::model::lifecycle::InitializeRequestParams;
use arbor_protocol::version::{Era, ProtocolVersion};
use parking_lot::Mutex;
use serde_json::Value;

use crate::call::{roundtrip, CallCtl};
use crate::error::{ClientError, ConnectError};
use crate::link::Link;
use crate::options::EraMode;
use crate::shared::{PendingKind, Session, Shared};

/// Remembers the era of each server (by target identity: command line or URL), so the
/// next connection skips the probe of a known legacy server. Cheap to clone; clones
/// share the entries.
#[derive(Clone, Debug, Default)]
pub struct EraCache {
    inner: Arc<Mutex<HashMap<String, Era>>>,
}

impl EraCache {
    /// An empty cache of its own.
    pub fn new() -> Self {
        EraCache::default()
    }

    /// The process-wide cache every client uses unless told otherwise.
    pub fn global() -> Self {
        static GLOBAL: OnceLock<EraCache> = OnceLock::new();
        GLOBAL.get_or_init(EraCache::new).clone()
    }

    /// The era remembered for `identity`.
    pub fn get(&self, identity: &str) -> Option<Era> {
        self.inner.lock().get(identity).copied()
    }

    /// Remembers `era` for `identity`.
    pub fn put(&self, identity: &str, era: Era) {
        self.inner.lock().insert(identity.to_owned(), era);
    }

    /// Forgets `identity` (the next connection probes again).
    pub fn forget(&self, identity: &str) {
        self.inner.lock().remove(identity);
    }
}

/// Opens the session over the current link: probe and/or handshake per the era mode.
pub(crate) async fn establish(shared: &Arc<Shared>, identity: Option<&str>) -> Result<Session, ConnectError> {
    let cache = &shared.options.era_cache;
    let session = match shared.options.era_mode {
        EraMode::ForceLegacy => initialize(shared).await?,
        EraMode::ForceModern => match discover(shared, false).await {
            Ok(s) => s,
            Err(Probe::Legacy(e)) | Err(Probe::Failed(e)) => return Err(ConnectError::Discover(e)),
            Err(Probe::Unsupported(offered)) => return Err(ConnectError::UnsupportedVersion { offered }),
        },
        EraMode::Detect => {
            let cached = identity.and_then(|id| cache.get(id));
            if cached == Some(Era::Legacy) {
                match initialize(shared).await {
                    Ok(s) => s,
                    // A cached answer may be stale (the server was upgraded): probe again.
                    Err(ConnectError::Initialize(e)) if matches!(*e, ClientError::Rpc(_)) => detect(shared).await?,
                    Err(e) => return Err(e),
                }
            } else {
                detect(shared).await?
            }
        }
    };
    if let Some(id) = identity {
        cache.put(id, session.era);
    }
    Ok(session)
}

async fn detect(shared: &Arc<Shared>) -> Result<Session, ConnectError> {
    match discover(shared, true).await {
        Ok(s) => Ok(s),
        Err(Probe::Legacy(e)) => {
            tracing::debug!(target: "arbor_client", "server/discover said legacy ({e}); falling back to initialize");
            initialize(shared).await
        }
        Err(Probe::Failed(e)) => Err(ConnectError::Discover(e)),
        Err(Probe::Unsupported(offered)) => Err(ConnectError::UnsupportedVersion { offered }),
    }
}

enum Probe {
    /// Not a modern answer: the server is legacy (or broken; `initialize` will tell).
    Legacy(Box<ClientError>),
    /// The link itself failed.
    Failed(Box<ClientError>),
    /// A modern server that speaks no version we speak.
    Unsupported(Vec<String>),
}

async fn discover(shared: &Arc<Shared>, probing: bool) -> Result<Session, Probe> {
    let timeout = if probing { shared.options.probe_timeout } else { shared.options.timeout };
    let ctl = CallCtl::internal(timeout);
    let mut retried = false;
    let answer = loop {
        // The probe is never cancelled: a legacy server expects nothing but `initialize` yet.
        let answer = roundtrip(
            shared,
            MethodName::Discover,
            &mut Value::Object(Default::default()),
            &ctl,
            PendingKind::Other,
            false,
        )
        .await;
        match answer {
            // -32022 naming the very version we sent among the supported ones: the refusal
            // was not about our version (a server that rejects first choices, or a version
            // change behind a load balancer); ask once more with it.
            Err(ClientError::Rpc(McpError::UnsupportedProtocolVersion { ref supported, .. }))
                if !retried && supported.iter().any(|v| v == ProtocolVersion::LATEST.as_str()) =>
            {
                retried = true;
            }
            other => break other,
        }
    };
    let raw = match answer {
        Ok(raw) => raw,
        Err(ClientError::Rpc(e)) if e.code().is_modern_signal() => return modern_refusal(e),
        Err(e @ (ClientError::Disconnected | ClientError::Cancelled)) => return Err(Probe::Failed(Box::new(e))),
        Err(ClientError::Transport(t)) if !shared.link().is_some_and(|l| l.is_http()) => {
            return Err(Probe::Failed(Box::new(ClientError::Transport(t))))
        }
        Err(e) => return Err(Probe::Legacy(Box::new(e))),
    };
    let result = match decode_result::<methods::Discover>(&raw) {
        Ok(r) => r,
        // Something answered, but not a DiscoverResult: not a modern server.
        Err(e) => return Err(Probe::Legacy(Box::new(ClientError::Decode(e)))),
    };
    if !result.supported_versions.iter().any(|v| v == ProtocolVersion::LATEST.as_str()) {
        if speaks_legacy(&result.supported_versions) {
            return Err(Probe::Legacy(Box::new(ClientError::Protocol(
                crate::error::ProtocolError::OnlyLegacyVersions,
            ))));
        }
        return Err(Probe::Unsupported(result.supported_versions));
    }
    let server_info = result
        .meta
        .as_ref()
        .and_then(|m| m.server_info())
        .and_then(|i| serde_json::from_value::<Implementation>(Value::Object(i.clone())).ok());
    Ok(Session {
        era: Era::Modern,
        version: ProtocolVersion::LATEST,
        capabilities: result.capabilities,
        server_info,
        instructions: result.instructions,
        supported_versions: result.supported_versions,
    })
}

fn speaks_legacy(versions: &[String]) -> bool {
    versions.iter().filter_map(|v| ProtocolVersion::parse(v)).any(|v| v.era() == Era::Legacy)
}

/// A modern error to the probe: the server is modern. -32022 listing only legacy
/// versions sends us to `initialize`; listing nothing we speak is the end.
fn modern_refusal(e: McpError) -> Result<Session, Probe> {
    match e {
        McpError::UnsupportedProtocolVersion { supported, .. } => {
            if speaks_legacy(&supported) {
                Err(Probe::Legacy(Box::new(ClientError::Protocol(crate::error::ProtocolError::OnlyLegacyVersions))))
            } else {
                Err(Probe::Unsupported(supported))
            }
        }
        other => {
            debug_assert!(other.code() != ErrorCode::UnsupportedProtocolVersion);
            Err(Probe::Failed(Box::new(ClientError::Rpc(other))))
        }
    }
}

async fn initialize(shared: &Arc<Shared>) -> Result<Session, ConnectError> {
    shared.set_session(None);
    let link = shared.link().ok_or(ConnectError::Closed)?;
    let params = InitializeRequestParams::new(
        ProtocolVersion::LATEST_LEGACY.as_str(),
        shared.runtime.as_ref().map(|r| r.capabilities()).unwrap_or_default(),
        shared.options.info.clone(),
    );
    let mut params =
        serde_json::to_value(params).map_err(|e| ConnectError::Initialize(Box::new(ClientError::Encode(e))))?;
    let ctl = CallCtl::internal(shared.options.timeout);
    // `initialize` cannot be cancelled.
    let raw = roundtrip(shared, MethodName::Initialize, &mut params, &ctl, PendingKind::Other, false)
        .await
        .map_err(|e| ConnectError::Initialize(Box::new(e)))?;
    let result =
        decode_result::<methods::Initialize>(&raw).map_err(|e| ConnectError::Initialize(Box::new(e.into())))?;
    let version = Handshake::default()
        .accept(&result.protocol_version)
        .map_err(|_| ConnectError::UnsupportedVersion { offered: vec![result.protocol_version.clone()] })?;
    if let Link::Http(h) = &link {
        h.set_legacy_version(Some(version));
    }
    let session = Session {
        era: Era::Legacy,
        version,
        capabilities: result.capabilities,
        server_info: Some(result.server_info),
        instructions: result.instructions,
        supported_versions: vec![version.as_str().to_owned()],
    };
    shared.set_session(Some(session.clone()));
    let initialized = notification_frame(MethodName::Initialized);
    link.notify(shared, initialized).await.map_err(|e| ConnectError::Initialize(Box::new(e)))?;
    if let Link::Http(h) = &link {
        h.open_standalone(shared).await;
    }
    Ok(session)
}

/// The frame of a notification without params (`notifications/initialized`,
/// `notifications/roots/list_changed`), its method named through `MethodName`.
pub(crate) fn notification_frame(method: MethodName) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","method":"{}"}}"#, method.as_str()).into_bytes()
}
