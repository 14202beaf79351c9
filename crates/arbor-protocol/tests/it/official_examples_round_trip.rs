//! All 129 official 2026-07-28 examples decode into our types, encode back to the
//! same JSON, and the re-encoded JSON validates against the example's schema type.

use crate::spec_schemas::{assert_valid, read_json, spec_dir};
use arbor_protocol::jsonrpc::{decode_message, decode_raw, ErrorObject, RawMessage};
use arbor_protocol::method::{decode_result, encode_response, Request};
use arbor_protocol::methods::{self, ClientNotification, ClientRequest, MethodName, ServerNotification};
use arbor_protocol::model::{
    capabilities, completion, content, elicitation, lifecycle, logging, mrtr, prompts, resources, roots, sampling,
    subscriptions, tools, utilities,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// Decodes through `T` twice (from text, which streams, and from a `Value`, which
/// takes the buffered paths), checks both agree, and encodes back.
fn via<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(text: &str) -> Value {
    let streamed: T = serde_json::from_str(text).unwrap_or_else(|e| panic!("decode: {e}"));
    let buffered: T = serde_json::from_value(serde_json::from_str(text).unwrap()).unwrap();
    assert_eq!(streamed, buffered, "streaming and buffered decoding disagree");
    serde_json::to_value(&streamed).unwrap()
}

fn bytes_to_value(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

/// A full request envelope, through the client-request enum.
fn via_client_request(text: &str, expected: MethodName) -> Value {
    let raw = decode_raw(text.as_bytes()).unwrap();
    let (id, request) = ClientRequest::from_raw(&raw).unwrap();
    assert_eq!(request.method(), expected);
    bytes_to_value(&request.to_vec(&id))
}

/// A full notification envelope, through the client- or server-notification enum.
fn via_notification(text: &str, expected: MethodName) -> Value {
    let raw = decode_raw(text.as_bytes()).unwrap();
    if expected == MethodName::Cancelled {
        let n = ClientNotification::from_raw(&raw).unwrap();
        assert_eq!(n.method(), expected);
        return bytes_to_value(&n.to_vec());
    }
    let n = ServerNotification::from_raw(&raw).unwrap();
    assert_eq!(n.method(), expected);
    bytes_to_value(&n.to_vec())
}

/// A full response envelope, read with the pending request's result type.
fn via_response<R: Request>(text: &str) -> Value {
    let RawMessage::Response { id, result } = decode_raw(text.as_bytes()).unwrap() else { panic!("not a response") };
    let result = decode_result::<R>(result).unwrap();
    bytes_to_value(&encode_response(&id, &result))
}

/// A full error envelope, through the JSON-RPC decoder.
fn via_error(text: &str) -> Value {
    let message = decode_message(text.as_bytes()).unwrap();
    assert!(matches!(message, arbor_protocol::jsonrpc::Message::Error(_)));
    bytes_to_value(&message.to_vec())
}

/// Decodes an example with the Rust type its folder names and encodes it back.
fn round_trip(folder: &str, text: &str) -> Value {
    use MethodName as M;
    match folder {
        "AudioContent" => via::<content::AudioContent>(text),
        "BlobResourceContents" => via::<content::BlobResourceContents>(text),
        "BooleanSchema" => via::<elicitation::BooleanSchema>(text),
        "CallToolRequest" => via_client_request(text, M::CallTool),
        "CallToolRequestParams" => via::<tools::CallToolRequestParams>(text),
        "CallToolResult" => via::<tools::CallToolResult>(text),
        "CallToolResultResponse" => via_response::<methods::CallTool>(text),
        "CancelledNotification" => via_notification(text, M::Cancelled),
        "CancelledNotificationParams" => via::<utilities::CancelledNotificationParams>(text),
        "ClientCapabilities" => via::<capabilities::ClientCapabilities>(text),
        "CompleteRequest" => via_client_request(text, M::Complete),
        "CompleteRequestParams" => via::<completion::CompleteRequestParams>(text),
        "CompleteResult" => via::<completion::CompleteResult>(text),
        "CompleteResultResponse" => via_response::<methods::Complete>(text),
        "CreateMessageRequest" => via::<mrtr::CreateMessageRequest>(text),
        "CreateMessageRequestParams" => via::<sampling::CreateMessageRequestParams>(text),
        "CreateMessageResult" => via::<sampling::CreateMessageResult>(text),
        "DiscoverRequest" => via_client_request(text, M::Discover),
        "DiscoverResult" => via::<lifecycle::DiscoverResult>(text),
        "DiscoverResultResponse" => via_response::<methods::Discover>(text),
        "ElicitRequest" => via::<mrtr::ElicitRequest>(text),
        "ElicitRequestFormParams" => via::<elicitation::ElicitRequestFormParams>(text),
        "ElicitRequestURLParams" => via::<elicitation::ElicitRequestUrlParams>(text),
        "ElicitResult" => via::<elicitation::ElicitResult>(text),
        "EmbeddedResource" => via::<content::EmbeddedResource>(text),
        "GetPromptRequest" => via_client_request(text, M::GetPrompt),
        "GetPromptRequestParams" => via::<prompts::GetPromptRequestParams>(text),
        "GetPromptResult" => via::<prompts::GetPromptResult>(text),
        "GetPromptResultResponse" => via_response::<methods::GetPrompt>(text),
        "HeaderMismatchError" | "MissingRequiredClientCapabilityError" | "UnsupportedProtocolVersionError" => {
            via_error(text)
        }
        "ImageContent" => via::<content::ImageContent>(text),
        "InputRequests" => via::<mrtr::InputRequests>(text),
        "InputRequiredResult" => via::<mrtr::InputRequiredResult>(text),
        "InputResponses" => via::<mrtr::InputResponses>(text),
        "InternalError" | "InvalidParamsError" | "MethodNotFoundError" | "ParseError" => via::<ErrorObject>(text),
        "ListPromptsRequest" => via_client_request(text, M::ListPrompts),
        "ListPromptsResult" => via::<prompts::ListPromptsResult>(text),
        "ListPromptsResultResponse" => via_response::<methods::ListPrompts>(text),
        "ListResourceTemplatesRequest" => via_client_request(text, M::ListResourceTemplates),
        "ListResourceTemplatesResult" => via::<resources::ListResourceTemplatesResult>(text),
        "ListResourceTemplatesResultResponse" => via_response::<methods::ListResourceTemplates>(text),
        "ListResourcesRequest" => via_client_request(text, M::ListResources),
        "ListResourcesResult" => via::<resources::ListResourcesResult>(text),
        "ListResourcesResultResponse" => via_response::<methods::ListResources>(text),
        "ListRootsRequest" => via::<mrtr::ListRootsRequest>(text),
        "ListRootsResult" => via::<roots::ListRootsResult>(text),
        "ListToolsRequest" => via_client_request(text, M::ListTools),
        "ListToolsResult" => via::<tools::ListToolsResult>(text),
        "ListToolsResultResponse" => via_response::<methods::ListTools>(text),
        "LoggingMessageNotification" => via_notification(text, M::LoggingMessage),
        "LoggingMessageNotificationParams" => via::<logging::LoggingMessageNotificationParams>(text),
        "ModelPreferences" => via::<sampling::ModelPreferences>(text),
        "NumberSchema" => via::<elicitation::NumberSchema>(text),
        "PaginatedRequestParams" => via::<arbor_protocol::model::common::PaginatedRequestParams>(text),
        "ProgressNotification" => via_notification(text, M::Progress),
        "ProgressNotificationParams" => via::<utilities::ProgressNotificationParams>(text),
        "PromptListChangedNotification" => via_notification(text, M::PromptListChanged),
        "ReadResourceRequest" => via_client_request(text, M::ReadResource),
        "ReadResourceResult" => via::<resources::ReadResourceResult>(text),
        "ReadResourceResultResponse" => via_response::<methods::ReadResource>(text),
        "Resource" => via::<resources::Resource>(text),
        "ResourceLink" => via::<content::ResourceLink>(text),
        "ResourceListChangedNotification" => via_notification(text, M::ResourceListChanged),
        "ResourceUpdatedNotification" => via_notification(text, M::ResourceUpdated),
        "ResourceUpdatedNotificationParams" => via::<subscriptions::ResourceUpdatedNotificationParams>(text),
        "Root" => via::<roots::Root>(text),
        "SamplingMessage" => via::<sampling::SamplingMessage>(text),
        "ServerCapabilities" => via::<capabilities::ServerCapabilities>(text),
        "StringSchema" => via::<elicitation::StringSchema>(text),
        "SubscriptionsAcknowledgedNotification" => via_notification(text, M::SubscriptionsAcknowledged),
        "SubscriptionsListenRequest" => via_client_request(text, M::SubscriptionsListen),
        "SubscriptionsListenResult" => via::<subscriptions::SubscriptionsListenResult>(text),
        "SubscriptionsListenResultResponse" => via_response::<methods::SubscriptionsListen>(text),
        "TextContent" => via::<content::TextContent>(text),
        "TextResourceContents" => via::<content::TextResourceContents>(text),
        "TitledMultiSelectEnumSchema" => via::<elicitation::TitledMultiSelectEnumSchema>(text),
        "TitledSingleSelectEnumSchema" => via::<elicitation::TitledSingleSelectEnumSchema>(text),
        "Tool" => via::<tools::Tool>(text),
        "ToolListChangedNotification" => via_notification(text, M::ToolListChanged),
        "ToolResultContent" => via::<content::ToolResultContent>(text),
        "ToolUseContent" => via::<content::ToolUseContent>(text),
        "UntitledMultiSelectEnumSchema" => via::<elicitation::UntitledMultiSelectEnumSchema>(text),
        "UntitledSingleSelectEnumSchema" => via::<elicitation::UntitledSingleSelectEnumSchema>(text),
        other => panic!("no Rust type is mapped to the example folder {other}"),
    }
}

/// Which `PrimitiveSchema` variant each form-field folder must decode to.
fn expected_field_form(folder: &str) -> Option<&'static str> {
    Some(match folder {
        "StringSchema" => "String",
        "NumberSchema" => "Number",
        "BooleanSchema" => "Boolean",
        "UntitledSingleSelectEnumSchema" => "UntitledSingleSelect",
        "TitledSingleSelectEnumSchema" => "TitledSingleSelect",
        "UntitledMultiSelectEnumSchema" => "UntitledMultiSelect",
        "TitledMultiSelectEnumSchema" => "TitledMultiSelect",
        _ => return None,
    })
}

#[test]
fn every_official_example_round_trips_and_validates() {
    let root = spec_dir().join("2026-07-28/examples");
    let mut folders: Vec<_> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).collect();
    folders.sort();
    let mut count = 0;
    for folder in folders {
        let name = folder.file_name().unwrap().to_str().unwrap().to_owned();
        let mut files: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        for file in files {
            let original = read_json(&file);
            let text = std::fs::read_to_string(&file).unwrap();
            let encoded = round_trip(&name, &text);
            assert_eq!(encoded, original, "{} changed in a round trip", file.display());
            assert_valid("2026-07-28", &name, &encoded);
            if let Some(form) = expected_field_form(&name) {
                let field: elicitation::PrimitiveSchema = serde_json::from_str(&text).unwrap();
                assert!(format!("{field:?}").starts_with(form), "{} decoded as {field:?}", file.display());
            }
            count += 1;
        }
    }
    assert_eq!(count, 129, "every official example must be checked, none skipped");
}

#[test]
fn unknown_members_survive_a_round_trip_at_every_level() {
    let text = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"x.example/k":1},
        "name":"t","arguments":{"a":1},"future":{"deep":[1,2]}},"alsoFuture":true}"#;
    let raw = decode_raw(text.as_bytes()).unwrap();
    let (id, request) = ClientRequest::from_raw(&raw).unwrap();
    let ClientRequest::CallTool(params) = &request else { panic!("not a tools/call") };
    assert_eq!(params.extra["future"], serde_json::json!({"deep": [1, 2]}));
    let back: Value = serde_json::from_slice(&request.to_vec(&id)).unwrap();
    assert_eq!(back["params"]["future"], serde_json::json!({"deep": [1, 2]}));
    assert_eq!(back["params"]["_meta"]["x.example/k"], 1);

    // A content block whose tag is not its first member takes the buffered path.
    let block: content::ContentBlock =
        serde_json::from_str(r#"{"text":"hi","newField":3,"type":"text","annotations":{"priority":0.5}}"#).unwrap();
    let content::ContentBlock::Text(t) = &block else { panic!("not text") };
    assert_eq!((t.text.as_str(), &t.extra["newField"]), ("hi", &serde_json::json!(3)));
    assert_eq!(serde_json::to_value(&block).unwrap()["newField"], 3);
}
