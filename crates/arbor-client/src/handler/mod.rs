//! Placeholder for the client handler runtime; replaced by its real implementation.
//! Signatures follow the contract between the client core and the handler runtime.
#![allow(missing_docs, missing_debug_implementations, unused_variables)]

use std::sync::Arc;

use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::model::capabilities::ClientCapabilities;
use serde_json::{Map, Value};

pub trait ClientHandler: Send + Sync + 'static {}

#[derive(Clone, Debug, Default)]
pub struct ClientLimits {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    Legacy,
    Modern,
}

pub type Assigns = Arc<Map<String, Value>>;

pub trait CallLink: Send + Sync {
    fn pause_deadline(&self) -> Box<dyn std::any::Any + Send>;
    fn assigns(&self) -> Option<Assigns>;
    fn request_id(&self) -> Option<RequestId>;
}

#[derive(Clone)]
pub struct HandlerRuntime {}

#[derive(Debug, thiserror::Error)]
pub enum InputHandlerError {
    #[error("input handler failed: {message}")]
    Handler { message: String },
}

impl HandlerRuntime {
    pub fn new(
        handler: Arc<dyn ClientHandler>,
        limits: ClientLimits,
        server_id: String,
        client_name: String,
        client_assigns: Option<Assigns>,
    ) -> HandlerRuntime {
        todo!()
    }
    pub fn capabilities(&self) -> ClientCapabilities {
        todo!()
    }
    pub fn set_server_origin(&self, origin: Option<String>) {
        todo!()
    }
    pub fn serve_request(
        &self,
        id: RequestId,
        method: &str,
        params: Option<Value>,
        call: Option<Arc<dyn CallLink>>,
        respond: Box<dyn FnOnce(Vec<u8>) + Send>,
    ) {
        todo!()
    }
    pub fn cancel(&self, id: &RequestId) {
        todo!()
    }
    pub async fn answer_inputs(
        &self,
        input_requests: &Map<String, Value>,
        call: Option<Arc<dyn CallLink>>,
    ) -> Result<Map<String, Value>, InputHandlerError> {
        todo!()
    }
    pub fn notify(&self, method: &str, params: Option<Value>) {
        todo!()
    }
    pub fn dropped_notifications(&self) -> u64 {
        todo!()
    }
    pub fn dropped_logs(&self) -> u64 {
        todo!()
    }
    pub async fn shutdown(&self) {
        todo!()
    }
}
