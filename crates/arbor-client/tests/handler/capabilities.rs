//! The client advertises exactly what the handler declared.

use arbor_client::handler::{ClientLimits, NoHandler, SamplingLimits};
use arbor_protocol::model::elicitation::ElicitationMode;
use serde_json::{json, Value};
use std::sync::Arc;

use arbor_client::handler::HandlerRuntime;

use crate::support::{rig, Notes, TestHandler};

async fn advertised(make: fn(Notes) -> TestHandler, limits: ClientLimits) -> Value {
    let r = rig(make, limits).await;
    serde_json::to_value(r.runtime.capabilities()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn capabilities_match_the_declared_callbacks() {
    let none =
        HandlerRuntime::new(Arc::new(NoHandler), ClientLimits::default(), "s".into(), "c".into(), None).await.unwrap();
    assert_eq!(serde_json::to_value(none.capabilities()).unwrap(), json!({}));
    assert_eq!(
        advertised(TestHandler::new, ClientLimits::default()).await,
        json!({}),
        "callbacks present but undeclared"
    );
    assert_eq!(
        advertised(|tx| TestHandler { sampling: true, ..TestHandler::new(tx) }, ClientLimits::default()).await,
        json!({"sampling": {}})
    );
    let context = ClientLimits {
        sampling: SamplingLimits { allow_context: true, ..SamplingLimits::default() },
        ..ClientLimits::default()
    };
    assert_eq!(
        advertised(|tx| TestHandler { sampling: true, ..TestHandler::new(tx) }, context).await,
        json!({"sampling": {"context": {}}})
    );
    assert_eq!(
        advertised(
            |tx| TestHandler { elicitation: Some(vec![ElicitationMode::Form]), ..TestHandler::new(tx) },
            ClientLimits::default()
        )
        .await,
        json!({"elicitation": {"form": {}}})
    );
    assert_eq!(
        advertised(|tx| TestHandler { elicitation: Some(vec![]), ..TestHandler::new(tx) }, ClientLimits::default())
            .await,
        json!({}),
        "no modes, nothing to answer with"
    );
    assert_eq!(
        advertised(TestHandler::all, ClientLimits::default()).await,
        json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}})
    );
}
