//! For each of the five revisions and the tasks extension, every request,
//! notification and result type of that revision's schema is built by our code,
//! encoded by our code, and validates against the schema's named definition. The
//! list of types comes from the schema file itself, so a type we forget fails.

use crate::revision_builders::{bytes, enc, meta, obj, Build, Rev, Rev::*};
use crate::spec_schemas::{assert_valid, message_definitions};
use arbor_protocol::jsonrpc::RequestId;
use arbor_protocol::meta;
use arbor_protocol::methods::{
    ClientNotification as CN, ClientRequest as CR, ServerNotification as SN, ServerRequest as SR,
};
use arbor_protocol::model::common::*;
use arbor_protocol::model::completion::*;
use arbor_protocol::model::content::*;
use arbor_protocol::model::elicitation::*;
use arbor_protocol::model::lifecycle::*;
use arbor_protocol::model::logging::*;
use arbor_protocol::model::mrtr::*;
use arbor_protocol::model::prompts::*;
use arbor_protocol::model::resources::*;
use arbor_protocol::model::subscriptions::*;
use arbor_protocol::model::tasks::*;
use arbor_protocol::model::tools::*;
use arbor_protocol::model::utilities::*;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// Every instance this revision gets, with the definition it must validate against.
fn cases(rev: Rev) -> Vec<(&'static str, Value)> {
    let b = Build(rev);
    let id = b.id();
    let mut out: Vec<(&'static str, Value)> = Vec::new();
    let cr = |r: CR| bytes(r.to_vec(&id));
    let sr = |r: SR| bytes(r.to_vec(&id));
    let cn = |n: CN| bytes(n.to_vec());
    let sn = |n: SN| bytes(n.to_vec());
    let legacy = rev < V2026_07_28;
    let core = rev != ExtTasks;
    let rmeta = b.request_meta();
    let note_meta = rev.per_request().then(|| meta(json!({ meta::SUBSCRIPTION_ID: "listen-1" })));
    let (ttl_ms, cache_scope) = b.cache();

    // Requests a client sends.
    if core {
        if legacy {
            let init = lifecycle_init(&b);
            out.push(("InitializeRequest", cr(CR::Initialize(init))));
            out.push(("PingRequest", cr(CR::Ping(RequestParams { meta: rmeta.clone(), ..Default::default() }))));
            let sub =
                ResourceSubscriptionParams { meta: rmeta.clone(), uri: "file:///a.txt".into(), extra: Map::new() };
            out.push(("SubscribeRequest", cr(CR::Subscribe(sub.clone()))));
            out.push(("UnsubscribeRequest", cr(CR::Unsubscribe(sub))));
            let level = SetLevelRequestParams { meta: rmeta.clone(), level: LoggingLevel::Warning, extra: Map::new() };
            out.push(("SetLevelRequest", cr(CR::SetLevel(level))));
        } else {
            out.push((
                "DiscoverRequest",
                cr(CR::Discover(RequestParams { meta: rmeta.clone(), ..Default::default() })),
            ));
            let listen = SubscriptionsListenRequestParams {
                meta: rmeta.clone(),
                notifications: SubscriptionFilter {
                    tools_list_changed: Some(true),
                    prompts_list_changed: Some(false),
                    resources_list_changed: Some(true),
                    resource_subscriptions: Some(vec!["file:///a.txt".into()]),
                    ..Default::default()
                },
                extra: Map::new(),
            };
            out.push(("SubscriptionsListenRequest", cr(CR::SubscriptionsListen(listen))));
        }
        out.push(("ListToolsRequest", cr(CR::ListTools(b.paginated()))));
        out.push(("ListResourcesRequest", cr(CR::ListResources(b.paginated()))));
        out.push(("ListResourceTemplatesRequest", cr(CR::ListResourceTemplates(b.paginated()))));
        out.push(("ListPromptsRequest", cr(CR::ListPrompts(b.paginated()))));
        let call = CallToolRequestParams {
            meta: rmeta.clone(),
            name: "get_weather".into(),
            arguments: Some(obj(json!({"city": "Paris"}))),
            task: (rev == V2025_11_25).then(|| TaskMetadata { ttl: Some(60_000), extra: Map::new() }),
            input_responses: rev.per_request().then(|| b.input_responses()),
            request_state: rev.per_request().then(|| "opaque".into()),
            extra: Map::new(),
        };
        out.push(("CallToolRequest", cr(CR::CallTool(call))));
        let read = ReadResourceRequestParams {
            meta: rmeta.clone(),
            uri: "file:///a.txt".into(),
            input_responses: rev.per_request().then(|| b.input_responses()),
            request_state: rev.per_request().then(|| "opaque".into()),
            extra: Map::new(),
        };
        out.push(("ReadResourceRequest", cr(CR::ReadResource(read))));
        let get = GetPromptRequestParams {
            meta: rmeta.clone(),
            name: "greet".into(),
            arguments: Some([("who".to_owned(), "world".to_owned())].into()),
            input_responses: rev.per_request().then(|| b.input_responses()),
            request_state: rev.per_request().then(|| "opaque".into()),
            extra: Map::new(),
        };
        out.push(("GetPromptRequest", cr(CR::GetPrompt(get))));
        for reference in [
            Reference::Prompt(PromptReference {
                name: "greet".into(),
                title: b.at_least(V2025_06_18).then(|| "Greet".into()),
                extra: Map::new(),
            }),
            Reference::ResourceTemplate(ResourceTemplateReference { uri: "file:///{path}".into(), extra: Map::new() }),
        ] {
            let complete = CompleteRequestParams {
                meta: rmeta.clone(),
                reference,
                argument: CompleteArgument { name: "who".into(), value: "wo".into(), extra: Map::new() },
                context: b.at_least(V2025_06_18).then(|| CompleteContext {
                    arguments: Some([("lang".to_owned(), "en".to_owned())].into()),
                    extra: Map::new(),
                }),
                extra: Map::new(),
            };
            out.push(("CompleteRequest", cr(CR::Complete(complete))));
        }
    }

    // Client features: server requests up to 2025-11-25, input requests after.
    if legacy {
        out.push(("CreateMessageRequest", sr(SR::CreateMessage(b.create_message_params()))));
        out.push(("ListRootsRequest", sr(SR::ListRoots(RequestParams { meta: rmeta.clone(), ..Default::default() }))));
        if b.at_least(V2025_06_18) {
            out.push(("ElicitRequest", sr(SR::Elicit(b.elicit_form()))));
        }
        if b.at_least(V2025_11_25) {
            out.push(("ElicitRequest", sr(SR::Elicit(b.elicit_url()))));
        }
    } else {
        for (key, request) in b.input_requests() {
            let def = match request {
                InputRequest::CreateMessage(_) => "CreateMessageRequest",
                InputRequest::ListRoots(_) => "ListRootsRequest",
                InputRequest::Elicit(_) => "ElicitRequest",
            };
            let encoded = enc(&request);
            assert!(encoded.get("jsonrpc").is_none() && encoded.get("id").is_none(), "{key} is not a JSON-RPC request");
            out.push((def, encoded));
        }
    }

    // Tasks.
    if rev == V2025_11_25 {
        let task = TaskIdParams { meta: rmeta.clone(), task_id: "t-1".into(), extra: Map::new() };
        out.push(("GetTaskRequest", cr(CR::GetTask(task.clone()))));
        out.push(("GetTaskPayloadRequest", cr(CR::GetTaskPayload(task.clone()))));
        out.push(("CancelTaskRequest", sr(SR::CancelTask(task))));
        out.push(("ListTasksRequest", sr(SR::ListTasks(b.paginated()))));
        let t = b.get_task_result(TaskStatus::Working);
        out.push(("GetTaskResult", enc(&t)));
        let c = CancelTaskResult {
            task_id: Some(t.task_id.clone()),
            status: Some(TaskStatus::Cancelled),
            status_message: t.status_message.clone(),
            created_at: Some(t.created_at.clone()),
            last_updated_at: Some(t.last_updated_at.clone()),
            ttl: t.ttl,
            poll_interval: t.poll_interval,
            ..Default::default()
        };
        out.push(("CancelTaskResult", enc(&c)));
        let created =
            ExperimentalCreateTaskResult { meta: None, task: b.task_fields(TaskStatus::Working), extra: Map::new() };
        out.push(("CreateTaskResult", enc(&created)));
        let payload = GetTaskPayloadResult { extra: obj(enc(&b.call_tool_result())), ..Default::default() };
        out.push(("GetTaskPayloadResult", enc(&payload)));
        let list = ListTasksResult {
            tasks: vec![b.task_fields(TaskStatus::Completed)],
            next_cursor: Some("n".into()),
            ..Default::default()
        };
        out.push(("ListTasksResult", enc(&list)));
        out.push(("TaskStatusNotification", sn(SN::ExperimentalTaskStatus(b.task_notification(TaskStatus::Working)))));
        let done =
            ElicitationCompleteNotificationParams { meta: None, elicitation_id: "e-1".into(), extra: Map::new() };
        out.push(("ElicitationCompleteNotification", sn(SN::ElicitationComplete(done))));
    }
    if rev == ExtTasks {
        let task = TaskIdParams { meta: rmeta.clone(), task_id: "t-1".into(), extra: Map::new() };
        out.push(("GetTaskRequest", cr(CR::GetTask(task.clone()))));
        out.push(("CancelTaskRequest", cr(CR::CancelTask(task))));
        let update = UpdateTaskRequestParams {
            meta: rmeta.clone(),
            task_id: "t-1".into(),
            input_responses: match serde_json::to_value(b.input_responses()) {
                Ok(Value::Object(answers)) => answers,
                _ => unreachable!("input responses serialise to an object"),
            },
            extra: Map::new(),
        };
        out.push(("UpdateTaskRequest", cr(CR::UpdateTask(update))));
        for status in [
            TaskStatus::Working,
            TaskStatus::InputRequired,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ] {
            out.push(("GetTaskResult", enc(&b.get_task_result(status))));
            out.push(("TaskStatusNotification", sn(SN::TaskStatus(b.task_notification(status)))));
            let t = b.task_fields(status);
            let created = CreateTaskResult {
                meta: None,
                result_type: ResultType::Task,
                task_id: t.task_id,
                status: t.status,
                status_message: t.status_message,
                created_at: t.created_at,
                last_updated_at: t.last_updated_at,
                ttl: None,
                ttl_ms: t.ttl_ms,
                poll_interval: None,
                poll_interval_ms: t.poll_interval_ms,
                input_requests: None,
                result: None,
                error: None,
                extra: Map::new(),
            };
            out.push(("CreateTaskResult", enc(&created)));
        }
        out.push((
            "CancelTaskResult",
            enc(&CancelTaskResult { result_type: Some(ResultType::Complete), ..Default::default() }),
        ));
        out.push(("UpdateTaskResult", enc(&EmptyResult::complete())));
    }

    // Notifications.
    if core {
        let cancel = CancelledNotificationParams {
            meta: None,
            request_id: Some(RequestId::from("r-1")),
            reason: Some("user".into()),
            extra: Map::new(),
        };
        out.push(("CancelledNotification", cn(CN::Cancelled(cancel.clone()))));
        out.push(("CancelledNotification", sn(SN::Cancelled(cancel.clone()))));
        if !legacy {
            out.push(("ClientNotification", cn(CN::Cancelled(cancel))));
        }
        let progress = ProgressNotificationParams {
            meta: None,
            progress_token: RequestId::from("p-1"),
            progress: 50.into(),
            total: Some(100.into()),
            message: b.at_least(V2025_03_26).then(|| "Halfway".into()),
            extra: Map::new(),
        };
        out.push(("ProgressNotification", sn(SN::Progress(progress.clone()))));
        if legacy {
            out.push(("ProgressNotification", cn(CN::Progress(progress))));
        }
        let log = LoggingMessageNotificationParams {
            meta: None,
            level: LoggingLevel::Error,
            logger: Some("db".into()),
            data: json!({"error": "down"}),
            extra: Map::new(),
        };
        out.push(("LoggingMessageNotification", sn(SN::LoggingMessage(log))));
        let changed = NotificationParams { meta: note_meta.clone(), ..Default::default() };
        out.push(("PromptListChangedNotification", sn(SN::PromptListChanged(changed.clone()))));
        out.push(("ResourceListChangedNotification", sn(SN::ResourceListChanged(changed.clone()))));
        out.push(("ToolListChangedNotification", sn(SN::ToolListChanged(changed.clone()))));
        let updated = ResourceUpdatedNotificationParams {
            meta: note_meta.clone(),
            uri: "file:///a.txt".into(),
            extra: Map::new(),
        };
        out.push(("ResourceUpdatedNotification", sn(SN::ResourceUpdated(updated))));
        if legacy {
            out.push(("InitializedNotification", cn(CN::Initialized(NotificationParams::default()))));
            out.push(("RootsListChangedNotification", cn(CN::RootsListChanged(changed))));
        } else {
            let ack = SubscriptionsAcknowledgedNotificationParams {
                meta: note_meta.clone(),
                notifications: SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() },
                extra: Map::new(),
            };
            out.push(("SubscriptionsAcknowledgedNotification", sn(SN::SubscriptionsAcknowledged(ack))));
        }
    }

    // Results.
    let rt = b.result_type();
    let rm = b.result_meta();
    if core {
        let call = b.call_tool_result();
        out.push(("CallToolResult", enc(&Outcome::Complete(call.clone()))));
        out.push(("ServerResult", enc(&call)));
        let complete = CompleteResult {
            meta: rm.clone(),
            result_type: rt.clone(),
            completion: Completion {
                values: vec!["world".into()],
                total: Some(1),
                has_more: Some(false),
                extra: Map::new(),
            },
            extra: Map::new(),
        };
        out.push(("CompleteResult", enc(&complete)));
        let empty = EmptyResult { meta: rm.clone(), result_type: rt.clone(), extra: Map::new() };
        out.push(("EmptyResult", enc(&empty)));
        out.push(("Result", enc(&empty)));
        let prompt = GetPromptResult {
            meta: rm.clone(),
            result_type: rt.clone(),
            description: Some("A greeting".into()),
            messages: b
                .content_blocks()
                .into_iter()
                .map(|content| PromptMessage { role: Role::User, content, extra: Map::new() })
                .collect(),
            extra: Map::new(),
        };
        out.push(("GetPromptResult", enc(&Outcome::Complete(prompt))));
        let prompts = ListPromptsResult {
            meta: rm.clone(),
            result_type: rt.clone(),
            prompts: vec![Prompt {
                name: "greet".into(),
                title: b.at_least(V2025_06_18).then(|| "Greet".into()),
                description: Some("Greets".into()),
                arguments: Some(vec![PromptArgument {
                    name: "who".into(),
                    title: b.at_least(V2025_06_18).then(|| "Who".into()),
                    description: Some("Whom to greet".into()),
                    required: Some(true),
                    extra: Map::new(),
                }]),
                icons: b.icons(),
                meta: b.item_meta(),
                extra: Map::new(),
            }],
            next_cursor: Some("".into()),
            ttl_ms,
            cache_scope,
            extra: Map::new(),
        };
        out.push(("ListPromptsResult", enc(&prompts)));
        let resources = ListResourcesResult {
            meta: rm.clone(),
            result_type: rt.clone(),
            resources: vec![Resource {
                uri: "file:///a.txt".into(),
                name: "a".into(),
                title: b.at_least(V2025_06_18).then(|| "A".into()),
                description: Some("The a file".into()),
                mime_type: Some("text/plain".into()),
                size: Some(1),
                icons: b.icons(),
                annotations: Some(b.annotations()),
                meta: b.item_meta(),
                extra: Map::new(),
            }],
            next_cursor: None,
            ttl_ms,
            cache_scope,
            extra: Map::new(),
        };
        out.push(("ListResourcesResult", enc(&resources)));
        let templates = ListResourceTemplatesResult {
            meta: rm.clone(),
            result_type: rt.clone(),
            resource_templates: vec![ResourceTemplate {
                uri_template: "file:///{path}".into(),
                name: "files".into(),
                title: b.at_least(V2025_06_18).then(|| "Files".into()),
                description: Some("Any file".into()),
                mime_type: Some("text/plain".into()),
                icons: b.icons(),
                annotations: Some(b.annotations()),
                meta: b.item_meta(),
                extra: Map::new(),
            }],
            next_cursor: None,
            ttl_ms,
            cache_scope,
            extra: Map::new(),
        };
        out.push(("ListResourceTemplatesResult", enc(&templates)));
        let tools = ListToolsResult {
            meta: rm.clone(),
            result_type: rt.clone(),
            tools: vec![b.tool()],
            next_cursor: Some("n".into()),
            ttl_ms,
            cache_scope,
            extra: Map::new(),
        };
        out.push(("ListToolsResult", enc(&tools)));
        out.push(("PaginatedResult", enc(&tools)));
        let read = ReadResourceResult {
            meta: rm.clone(),
            result_type: rt.clone(),
            contents: vec![ResourceContents::Text(TextResourceContents {
                uri: "file:///a.txt".into(),
                mime_type: Some("text/plain".into()),
                text: "a".into(),
                meta: b.item_meta(),
                extra: Map::new(),
            })],
            ttl_ms,
            cache_scope,
            extra: Map::new(),
        };
        out.push(("ReadResourceResult", enc(&Outcome::Complete(read))));
        if legacy {
            let init = InitializeResult {
                meta: None,
                result_type: None,
                protocol_version: rev.folder().into(),
                capabilities: b.server_capabilities(),
                server_info: b.implementation("server"),
                instructions: Some("Use the weather tool.".into()),
                extra: Map::new(),
            };
            out.push(("InitializeResult", enc(&init)));
            out.push(("ClientResult", enc(&b.roots_result())));
        } else {
            out.push(("CacheableResult", enc(&tools)));
            out.push(("ClientResult", enc(&EmptyResult::complete())));
            let discover = DiscoverResult {
                meta: rm.clone(),
                result_type: rt.clone(),
                supported_versions: vec!["2025-11-25".into(), "2026-07-28".into()],
                capabilities: b.server_capabilities(),
                instructions: Some("Use the weather tool.".into()),
                ttl_ms,
                cache_scope: Some(CacheScope::Private),
                extra: Map::new(),
            };
            out.push(("DiscoverResult", enc(&discover)));
            let needs = InputRequiredResult::new(Some(b.input_requests()), Some("opaque".into()));
            out.push(("InputRequiredResult", enc(&Outcome::<CallToolResult>::InputRequired(needs))));
            let state_only = InputRequiredResult::new(None, Some("retry-later".into()));
            out.push(("InputRequiredResult", enc(&state_only)));
            let closed = SubscriptionsListenResult {
                meta: Some(meta(json!({ meta::SUBSCRIPTION_ID: 9 }))),
                result_type: rt.clone(),
                extra: Map::new(),
            };
            out.push(("SubscriptionsListenResult", enc(&closed)));
        }
    }
    // Client results exist in every schema, the extension included.
    out.push(("CreateMessageResult", enc(&b.create_message_result())));
    out.push(("ListRootsResult", enc(&b.roots_result())));
    if b.at_least(V2025_06_18) {
        out.push(("ElicitResult", enc(&b.elicit_result())));
    }
    if rev == ExtTasks {
        out.push(("Result", enc(&EmptyResult::complete())));
    }
    out
}

fn lifecycle_init(b: &Build) -> InitializeRequestParams {
    InitializeRequestParams {
        meta: None,
        protocol_version: b.0.folder().into(),
        capabilities: b.client_capabilities(),
        client_info: b.implementation("client"),
        extra: Map::new(),
    }
}

fn check(rev: Rev) {
    let cases = cases(rev);
    let covered: BTreeSet<String> = cases.iter().map(|(def, _)| def.to_string()).collect();
    let wanted = message_definitions(rev.folder());
    let missing: Vec<_> = wanted.difference(&covered).collect();
    assert!(missing.is_empty(), "{}: no instance built for {missing:?}", rev.folder());
    eprintln!("{}: {} instances cover {} message types: {wanted:?}", rev.folder(), cases.len(), wanted.len());
    for (def, instance) in &cases {
        assert_valid(rev.folder(), def, instance);
    }
}

#[test]
fn every_2024_11_05_message_type_validates() {
    check(V2024_11_05);
}

#[test]
fn every_2025_03_26_message_type_validates() {
    check(V2025_03_26);
}

#[test]
fn every_2025_06_18_message_type_validates() {
    check(V2025_06_18);
}

#[test]
fn every_2025_11_25_message_type_validates() {
    check(V2025_11_25);
}

#[test]
fn every_2026_07_28_message_type_validates() {
    check(V2026_07_28);
}

#[test]
fn every_tasks_extension_message_type_validates() {
    check(ExtTasks);
}

#[test]
fn the_validator_rejects_what_the_schema_forbids() {
    // Guards the harness: a missing required member must fail validation.
    let result = std::panic::catch_unwind(|| assert_valid("2026-07-28", "TextContent", &json!({"type": "text"})));
    assert!(result.is_err());
    let result = std::panic::catch_unwind(|| {
        assert_valid(
            "2024-11-05",
            "CallToolResult",
            &json!({"content": [{"type": "audio", "data": "", "mimeType": "a"}]}),
        )
    });
    assert!(result.is_err());
}

#[test]
fn every_built_instance_decodes_back_to_the_same_json() {
    // The encoded instances also survive our own decoders.
    for rev in [V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25, V2026_07_28, ExtTasks] {
        for (def, instance) in cases(rev) {
            if instance.get("jsonrpc").is_none() {
                continue;
            }
            let text = instance.to_string();
            let raw = arbor_protocol::jsonrpc::decode_raw(text.as_bytes()).unwrap();
            let back = match &raw {
                arbor_protocol::jsonrpc::RawMessage::Request { .. } => {
                    let encoded = match CR::from_raw(&raw) {
                        Ok((id, r)) => r.to_vec(&id),
                        Err(_) => {
                            let (id, r) = SR::from_raw(&raw).unwrap();
                            r.to_vec(&id)
                        }
                    };
                    bytes(encoded)
                }
                _ => match SN::from_raw(&raw) {
                    Ok(n) => bytes(n.to_vec()),
                    Err(_) => bytes(CN::from_raw(&raw).unwrap().to_vec()),
                },
            };
            assert_eq!(back, instance, "{}: {def} changed", rev.folder());
        }
    }
}
