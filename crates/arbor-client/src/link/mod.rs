//! The links a connection speaks over: a byte stream of newline-delimited frames (a
//! spawned process's pipes, or any `arbor_transport::Transport`) or Streamable HTTP.
//!
//! A [`Link`] is the sending side, cheap to clone; what arrives goes to
//! `Shared::inbound` with the [`Origin`] it came from (the shared stream, the response
//! stream of one POST, the legacy standalone GET stream). The link does not own its
//! lifetime: the connection actor opens and closes it.
//! Invariant: nothing but whole JSON-RPC frames is written, and a send never waits on
//! the peer (stream sends queue; HTTP sends run in their own tasks).

pub(crate) mod http;
pub(crate) mod sse;
pub(crate) mod stream;

use std::sync::Arc;

use arbor_protocol::methods::MethodName;
use arbor_transport::FrameWriter;
use serde_json::Value;

use crate::error::{ClientError, TransportError};
use crate::shared::Shared;

/// Where an inbound message came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The shared stream of a stdio (or other byte-stream) link.
    Stream,
    /// The response stream of the POST carrying request `id`.
    Post(i64),
    /// The legacy standalone GET stream.
    Standalone,
}

#[derive(Clone, Debug)]
pub(crate) enum Link {
    Stream(FrameWriter),
    Http(Arc<http::HttpLink>),
}

impl Link {
    pub(crate) fn is_http(&self) -> bool {
        matches!(self, Link::Http(_))
    }

    /// Sends a request frame; its answer arrives through `Shared::inbound`. `alone` says
    /// no other call is in flight: a stream link then writes the frame at once if its
    /// writer is idle (no hop to the writer task); otherwise it queues, so that callers
    /// woken by one burst of answers share one write.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send_request(
        &self,
        shared: &Arc<Shared>,
        id: i64,
        method: MethodName,
        params: &Value,
        modern: bool,
        frame: Vec<u8>,
        alone: bool,
    ) -> Result<(), ClientError> {
        match self {
            Link::Stream(w) if alone => w.send_now(frame).map_err(|e| ClientError::Transport(TransportError::Send(e))),
            Link::Stream(w) => w.send(&frame).map_err(|e| ClientError::Transport(TransportError::Send(e))),
            Link::Http(h) => {
                h.start_request(shared, id, method, params, modern, frame);
                Ok(())
            }
        }
    }

    /// Sends a notification and waits until it was handed over (HTTP: accepted).
    pub(crate) async fn notify(&self, shared: &Arc<Shared>, frame: Vec<u8>) -> Result<(), ClientError> {
        match self {
            Link::Stream(w) => w.send(&frame).map_err(|e| ClientError::Transport(TransportError::Send(e))),
            Link::Http(h) => h.post_message(shared, frame).await,
        }
    }

    /// Sends a notification or a response without waiting (from drops and callbacks).
    pub(crate) fn notify_detached(&self, shared: &Arc<Shared>, frame: Vec<u8>) {
        match self {
            Link::Stream(w) => {
                let _ = w.send(&frame);
            }
            Link::Http(h) => {
                let (h, shared) = (h.clone(), shared.clone());
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    rt.spawn(async move {
                        if let Err(e) = h.post_message(&shared, frame).await {
                            tracing::debug!(target: "arbor_client", "could not deliver a message: {e}");
                        }
                    });
                }
            }
        }
    }
}
