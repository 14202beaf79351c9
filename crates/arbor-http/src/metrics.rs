//! `GET /metrics`: the Prometheus text of the application's recorder, served beside the
//! MCP endpoint when [`HttpConfig::metrics`](crate::HttpConfig::metrics()) is set (off by
//! default), and the Prometheus recorder Arbor's metrics are meant for.
//!
//! What it is not: a recorder installed behind the application's back. The runtime only
//! records through the `metrics` facade; [`install_prometheus`] (or a
//! [`prometheus_builder`] the application finishes itself) is the application's choice,
//! made once per process. The page is not authenticated (scrapers carry no tokens); it
//! passes the same `Host` and `Origin` checks as the endpoint, and holds no token or
//! principal: its labels are method, tool, prompt and tenant names, versions and codes.
//!
//! Invariant: the histograms of the MCP conventions (`mcp.*`, seconds) get the
//! conventions' buckets ([`arbor_server::metrics::DURATION_BUCKETS`]), and the recorder's
//! upkeep runs at every scrape and every few seconds, so unscraped samples never pile up.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, Method, Response, StatusCode};
pub use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};

use crate::guard;
use crate::server::Inner;

/// Where the page is served.
pub const METRICS_PATH: &str = "/metrics";

/// How often [`install_prometheus`]'s thread runs the recorder's upkeep.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// A Prometheus builder with Arbor's buckets and Prometheus naming (counters end in
/// `_total`, histograms in their unit: `mcp_server_operation_duration_seconds`); no
/// listener of its own. Finish it with `install_recorder` (and run its upkeep), or use
/// [`install_prometheus`].
pub fn prometheus_builder() -> PrometheusBuilder {
    PrometheusBuilder::new()
        .with_recommended_naming(true)
        .set_buckets_for_metric(Matcher::Prefix("mcp.".to_owned()), &arbor_server::metrics::DURATION_BUCKETS)
        .and_then(|b| {
            b.set_buckets_for_metric(
                Matcher::Full(arbor_server::metrics::bus::QUEUE_DEPTH.to_owned()),
                &arbor_server::metrics::bus::QUEUE_DEPTH_BUCKETS,
            )
        })
        .expect("the bucket lists are not empty")
}

/// Installs [`prometheus_builder`]'s recorder as the process's global `metrics` recorder,
/// describes Arbor's metrics (help text and units), and starts a thread running its upkeep
/// every 5 s. Fails if a recorder is already installed.
pub fn install_prometheus() -> Result<PrometheusHandle, BuildError> {
    let handle = prometheus_builder().install_recorder()?;
    arbor_server::metrics::describe();
    let upkeep = handle.clone();
    std::thread::Builder::new()
        .name("arbor-metrics-upkeep".to_owned())
        .spawn(move || loop {
            std::thread::sleep(UPKEEP_EVERY);
            upkeep.run_upkeep();
        })
        .map_err(|e| BuildError::FailedToCreateRuntime(format!("cannot start the metrics upkeep thread: {e}")))?;
    Ok(handle)
}

/// `GET /metrics` (and `HEAD`).
pub(crate) async fn page(State(inner): State<Arc<Inner>>, request: Request) -> Response<Body> {
    let (parts, _body) = request.into_parts();
    if let Err(refused) = inner.guard.check_origin_and_host(&parts) {
        return *refused;
    }
    if parts.method != Method::GET && parts.method != Method::HEAD {
        return guard::method_not_allowed("GET");
    }
    let Some(handle) = &inner.config.metrics else {
        return guard::method_not_allowed("GET");
    };
    handle.run_upkeep();
    let text = handle.render();
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::from(if parts.method == Method::HEAD { String::new() } else { text }))
        .expect("a valid response")
}
