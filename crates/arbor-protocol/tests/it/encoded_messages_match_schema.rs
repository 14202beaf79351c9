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
use serde_json::{json, Value};
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
            out.push(("InitializeRequest", cr(CR::Initialize(Box::new(init)))));
            out.push(("PingRequest", cr(CR::Ping(b.request_params()))));
            let mut sub = ResourceSubscriptionParams::new("file:///a.txt");
            sub.meta = rmeta.clone();
            out.push(("SubscribeRequest", cr(CR::Subscribe(sub.clone()))));
            out.push(("UnsubscribeRequest", cr(CR::Unsubscribe(sub))));
            let mut level = SetLevelRequestParams::new(LoggingLevel::Warning);
            level.meta = rmeta.clone();
            out.push(("SetLevelRequest", cr(CR::SetLevel(level))));
        } else {
            out.push(("DiscoverRequest", cr(CR::Discover(b.request_params()))));
            let mut listen = SubscriptionsListenRequestParams::new(
                SubscriptionFilter::default()
                    .with_tools_list_changed(true)
                    .with_prompts_list_changed(false)
                    .with_resources_list_changed(true)
                    .with_resource_subscriptions(vec!["file:///a.txt".to_owned()]),
            );
            listen.meta = rmeta.clone();
            out.push(("SubscriptionsListenRequest", cr(CR::SubscriptionsListen(Box::new(listen)))));
        }
        out.push(("ListToolsRequest", cr(CR::ListTools(b.paginated()))));
        out.push(("ListResourcesRequest", cr(CR::ListResources(b.paginated()))));
        out.push(("ListResourceTemplatesRequest", cr(CR::ListResourceTemplates(b.paginated()))));
        out.push(("ListPromptsRequest", cr(CR::ListPrompts(b.paginated()))));
        let mut call = CallToolRequestParams::new("get_weather").with_arguments(obj(json!({"city": "Paris"})));
        call.meta = rmeta.clone();
        call.task = (rev == V2025_11_25).then(|| TaskMetadata::default().with_ttl(60_000));
        call.input_responses = rev.per_request().then(|| b.input_responses());
        call.request_state = rev.per_request().then(|| "opaque".into());
        out.push(("CallToolRequest", cr(CR::CallTool(Box::new(call)))));
        let mut read = ReadResourceRequestParams::new("file:///a.txt");
        read.meta = rmeta.clone();
        read.input_responses = rev.per_request().then(|| b.input_responses());
        read.request_state = rev.per_request().then(|| "opaque".into());
        out.push(("ReadResourceRequest", cr(CR::ReadResource(Box::new(read)))));
        let mut get = GetPromptRequestParams::new("greet").with_argument("who", "world");
        get.meta = rmeta.clone();
        get.input_responses = rev.per_request().then(|| b.input_responses());
        get.request_state = rev.per_request().then(|| "opaque".into());
        out.push(("GetPromptRequest", cr(CR::GetPrompt(Box::new(get)))));
        let mut prompt = PromptReference::new("greet");
        prompt.title = b.at_least(V2025_06_18).then(|| "Greet".into());
        for reference in [Reference::Prompt(prompt), Reference::resource_template("file:///{path}")] {
            let mut complete = CompleteRequestParams::new(reference, CompleteArgument::new("who", "wo"));
            complete.meta = rmeta.clone();
            complete.context = b.at_least(V2025_06_18).then(|| CompleteContext::default().with_argument("lang", "en"));
            out.push(("CompleteRequest", cr(CR::Complete(Box::new(complete)))));
        }
    }

    // Client features: server requests up to 2025-11-25, input requests after.
    if legacy {
        out.push(("CreateMessageRequest", sr(SR::CreateMessage(b.create_message_params()))));
        out.push(("ListRootsRequest", sr(SR::ListRoots(b.request_params()))));
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
        let mut task = TaskIdParams::new("t-1");
        task.meta = rmeta.clone();
        out.push(("GetTaskRequest", cr(CR::GetTask(task.clone()))));
        out.push(("GetTaskPayloadRequest", cr(CR::GetTaskPayload(task.clone()))));
        out.push(("CancelTaskRequest", sr(SR::CancelTask(task))));
        out.push(("ListTasksRequest", sr(SR::ListTasks(b.paginated()))));
        let t = b.get_task_result(TaskStatus::Working);
        out.push(("GetTaskResult", enc(&t)));
        let c = CancelTaskResult::from_task(b.task_fields(TaskStatus::Cancelled));
        out.push(("CancelTaskResult", enc(&c)));
        let created = ExperimentalCreateTaskResult::new(b.task_fields(TaskStatus::Working));
        out.push(("CreateTaskResult", enc(&created)));
        let payload = GetTaskPayloadResult::new(obj(enc(&b.call_tool_result())));
        out.push(("GetTaskPayloadResult", enc(&payload)));
        let list = ListTasksResult::new(vec![b.task_fields(TaskStatus::Completed)]).with_next_cursor("n");
        out.push(("ListTasksResult", enc(&list)));
        out.push(("TaskStatusNotification", sn(SN::ExperimentalTaskStatus(b.task_notification(TaskStatus::Working)))));
        let done = ElicitationCompleteNotificationParams::new("e-1");
        out.push(("ElicitationCompleteNotification", sn(SN::ElicitationComplete(done))));
    }
    if rev == ExtTasks {
        let mut task = TaskIdParams::new("t-1");
        task.meta = rmeta.clone();
        out.push(("GetTaskRequest", cr(CR::GetTask(task.clone()))));
        out.push(("CancelTaskRequest", cr(CR::CancelTask(task))));
        let answers = match serde_json::to_value(b.input_responses()) {
            Ok(Value::Object(answers)) => answers,
            _ => unreachable!("input responses serialise to an object"),
        };
        let mut update = UpdateTaskRequestParams::new("t-1", answers);
        update.meta = rmeta.clone();
        out.push(("UpdateTaskRequest", cr(CR::UpdateTask(Box::new(update)))));
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
            let mut created = CreateTaskResult::from_task(t);
            created.input_requests = None;
            created.result = None;
            created.error = None;
            out.push(("CreateTaskResult", enc(&created)));
        }
        out.push(("CancelTaskResult", enc(&CancelTaskResult::complete())));
        out.push(("UpdateTaskResult", enc(&EmptyResult::complete())));
    }

    // Notifications.
    if core {
        let cancel = CancelledNotificationParams::new(RequestId::from("r-1")).with_reason("user");
        out.push(("CancelledNotification", cn(CN::Cancelled(cancel.clone()))));
        out.push(("CancelledNotification", sn(SN::Cancelled(cancel.clone()))));
        if !legacy {
            out.push(("ClientNotification", cn(CN::Cancelled(cancel))));
        }
        let mut progress = ProgressNotificationParams::new(RequestId::from("p-1"), 50).with_total(100);
        progress.message = b.at_least(V2025_03_26).then(|| "Halfway".into());
        out.push(("ProgressNotification", sn(SN::Progress(progress.clone()))));
        if legacy {
            out.push(("ProgressNotification", cn(CN::Progress(progress))));
        }
        let log =
            LoggingMessageNotificationParams::new(LoggingLevel::Error, json!({"error": "down"})).with_logger("db");
        out.push(("LoggingMessageNotification", sn(SN::LoggingMessage(log))));
        let mut changed = NotificationParams::default();
        changed.meta = note_meta.clone();
        out.push(("PromptListChangedNotification", sn(SN::PromptListChanged(changed.clone()))));
        out.push(("ResourceListChangedNotification", sn(SN::ResourceListChanged(changed.clone()))));
        out.push(("ToolListChangedNotification", sn(SN::ToolListChanged(changed.clone()))));
        let mut updated = ResourceUpdatedNotificationParams::new("file:///a.txt");
        updated.meta = note_meta.clone();
        out.push(("ResourceUpdatedNotification", sn(SN::ResourceUpdated(updated))));
        if legacy {
            out.push(("InitializedNotification", cn(CN::Initialized(NotificationParams::default()))));
            out.push(("RootsListChangedNotification", cn(CN::RootsListChanged(changed))));
        } else {
            let mut ack = SubscriptionsAcknowledgedNotificationParams::new(
                SubscriptionFilter::default().with_tools_list_changed(true),
            );
            ack.meta = note_meta.clone();
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
        let mut complete =
            CompleteResult::new(Completion::new(vec!["world".into()]).with_total(1).with_has_more(false));
        (complete.meta, complete.result_type) = (rm.clone(), rt.clone());
        out.push(("CompleteResult", enc(&complete)));
        let mut empty = EmptyResult::default();
        (empty.meta, empty.result_type) = (rm.clone(), rt.clone());
        out.push(("EmptyResult", enc(&empty)));
        out.push(("Result", enc(&empty)));
        let mut prompt = GetPromptResult::new(b.content_blocks().into_iter().map(PromptMessage::user).collect())
            .with_description("A greeting");
        (prompt.meta, prompt.result_type) = (rm.clone(), rt.clone());
        out.push(("GetPromptResult", enc(&Outcome::Complete(prompt))));
        let mut argument = PromptArgument::new("who").with_description("Whom to greet").required();
        argument.title = b.at_least(V2025_06_18).then(|| "Who".into());
        let mut greet = Prompt::new("greet").with_description("Greets").with_argument(argument);
        greet.title = b.at_least(V2025_06_18).then(|| "Greet".into());
        (greet.icons, greet.meta) = (b.icons(), b.item_meta());
        let mut prompts = ListPromptsResult::new(vec![greet]).with_next_cursor("");
        (prompts.meta, prompts.result_type) = (rm.clone(), rt.clone());
        (prompts.ttl_ms, prompts.cache_scope) = (ttl_ms, cache_scope);
        out.push(("ListPromptsResult", enc(&prompts)));
        let mut resource = Resource::new("file:///a.txt", "a")
            .with_description("The a file")
            .with_mime_type("text/plain")
            .with_size(1)
            .with_annotations(b.annotations());
        resource.title = b.at_least(V2025_06_18).then(|| "A".into());
        (resource.icons, resource.meta) = (b.icons(), b.item_meta());
        let mut resources = ListResourcesResult::new(vec![resource]);
        (resources.meta, resources.result_type) = (rm.clone(), rt.clone());
        (resources.ttl_ms, resources.cache_scope) = (ttl_ms, cache_scope);
        out.push(("ListResourcesResult", enc(&resources)));
        let mut template = ResourceTemplate::new("file:///{path}", "files")
            .with_description("Any file")
            .with_mime_type("text/plain")
            .with_annotations(b.annotations());
        template.title = b.at_least(V2025_06_18).then(|| "Files".into());
        (template.icons, template.meta) = (b.icons(), b.item_meta());
        let mut templates = ListResourceTemplatesResult::new(vec![template]);
        (templates.meta, templates.result_type) = (rm.clone(), rt.clone());
        (templates.ttl_ms, templates.cache_scope) = (ttl_ms, cache_scope);
        out.push(("ListResourceTemplatesResult", enc(&templates)));
        let mut tools = ListToolsResult::new(vec![b.tool()]).with_next_cursor("n");
        (tools.meta, tools.result_type) = (rm.clone(), rt.clone());
        (tools.ttl_ms, tools.cache_scope) = (ttl_ms, cache_scope);
        out.push(("ListToolsResult", enc(&tools)));
        out.push(("PaginatedResult", enc(&tools)));
        let mut text = TextResourceContents::new("file:///a.txt", "a").with_mime_type("text/plain");
        text.meta = b.item_meta();
        let mut read = ReadResourceResult::new(vec![ResourceContents::Text(text)]);
        (read.meta, read.result_type) = (rm.clone(), rt.clone());
        (read.ttl_ms, read.cache_scope) = (ttl_ms, cache_scope);
        out.push(("ReadResourceResult", enc(&Outcome::Complete(read))));
        if legacy {
            let init = InitializeResult::new(rev.folder(), b.server_capabilities(), b.implementation("server"))
                .with_instructions("Use the weather tool.");
            out.push(("InitializeResult", enc(&init)));
            out.push(("ClientResult", enc(&b.roots_result())));
        } else {
            out.push(("CacheableResult", enc(&tools)));
            out.push(("ClientResult", enc(&EmptyResult::complete())));
            let mut discover =
                DiscoverResult::new(vec!["2025-11-25".into(), "2026-07-28".into()], b.server_capabilities())
                    .with_instructions("Use the weather tool.")
                    .with_cache_scope(CacheScope::Private);
            (discover.meta, discover.result_type, discover.ttl_ms) = (rm.clone(), rt.clone(), ttl_ms);
            out.push(("DiscoverResult", enc(&discover)));
            let needs = InputRequiredResult::new(Some(b.input_requests()), Some("opaque".into()));
            out.push(("InputRequiredResult", enc(&Outcome::<CallToolResult>::InputRequired(needs))));
            let state_only = InputRequiredResult::new(None, Some("retry-later".into()));
            out.push(("InputRequiredResult", enc(&state_only)));
            let mut closed = SubscriptionsListenResult::default().with_meta(meta(json!({ meta::SUBSCRIPTION_ID: 9 })));
            closed.result_type = rt.clone();
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
    InitializeRequestParams::new(b.0.folder(), b.client_capabilities(), b.implementation("client"))
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
