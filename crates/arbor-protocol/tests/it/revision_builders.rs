//! Builders of model values for one revision at a time, for the schema tests:
//! each revision gets only the members its schema knows.

use arbor_protocol::jsonrpc::{ErrorObject, RequestId};
use arbor_protocol::meta::{self, Meta};
use arbor_protocol::model::capabilities::*;
use arbor_protocol::model::common::*;
use arbor_protocol::model::content::*;
use arbor_protocol::model::elicitation::*;
use arbor_protocol::model::mrtr::*;
use arbor_protocol::model::roots::*;
use arbor_protocol::model::sampling::*;
use arbor_protocol::model::tasks::*;
use arbor_protocol::model::tools::*;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// A schema to check against, in release order; the extension builds on 2026-07-28.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rev {
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
    ExtTasks,
}

use Rev::*;

impl Rev {
    pub fn folder(self) -> &'static str {
        match self {
            V2024_11_05 => "2024-11-05",
            V2025_03_26 => "2025-03-26",
            V2025_06_18 => "2025-06-18",
            V2025_11_25 => "2025-11-25",
            V2026_07_28 => "2026-07-28",
            ExtTasks => "ext-tasks/draft",
        }
    }
    pub fn per_request(self) -> bool {
        self >= V2026_07_28
    }
}

pub fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

pub fn meta(v: Value) -> Meta {
    Meta(obj(v))
}

pub fn enc<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap()
}

pub fn bytes(b: Vec<u8>) -> Value {
    serde_json::from_slice(&b).unwrap()
}

/// Builds one revision's instances with only that revision's members.
pub struct Build(pub Rev);

impl Build {
    pub fn at_least(&self, r: Rev) -> bool {
        self.0 >= r
    }

    pub fn id(&self) -> RequestId {
        RequestId::from(7)
    }

    pub fn request_meta(&self) -> Option<Meta> {
        Some(if self.0.per_request() {
            meta(json!({
                meta::PROTOCOL_VERSION: "2026-07-28",
                meta::CLIENT_CAPABILITIES: enc(&self.client_capabilities()),
                "io.modelcontextprotocol/clientInfo": enc(&self.implementation("client")),
                meta::LOG_LEVEL: "info",
                meta::PROGRESS_TOKEN: "p-1",
            }))
        } else {
            meta(json!({ meta::PROGRESS_TOKEN: 1 }))
        })
    }

    pub fn result_meta(&self) -> Option<Meta> {
        self.0.per_request().then(|| meta(json!({ meta::SERVER_INFO: enc(&self.implementation("server")) })))
    }

    pub fn result_type(&self) -> Option<ResultType> {
        self.0.per_request().then_some(ResultType::Complete)
    }

    pub fn cache(&self) -> (Option<u64>, Option<CacheScope>) {
        if self.0.per_request() {
            (Some(60_000), Some(CacheScope::Public))
        } else {
            (None, None)
        }
    }

    pub fn icons(&self) -> Option<Vec<Icon>> {
        self.at_least(V2025_11_25).then(|| {
            vec![Icon {
                src: "https://example.com/icon.png".into(),
                mime_type: Some("image/png".into()),
                sizes: Some(vec!["48x48".into()]),
                theme: Some(IconTheme::Dark),
                extra: Map::new(),
            }]
        })
    }

    pub fn implementation(&self, name: &str) -> Implementation {
        let mut i = Implementation::new(name, "1.0.0");
        if self.at_least(V2025_06_18) {
            i.title = Some(format!("The {name}"));
        }
        if self.at_least(V2025_11_25) {
            i.description = Some("An example.".into());
            i.icons = self.icons();
            i.website_url = Some("https://example.com".into());
        }
        i
    }

    pub fn client_capabilities(&self) -> ClientCapabilities {
        let r = self.0;
        ClientCapabilities {
            experimental: Some(obj(json!({"x.example/feature": {}}))),
            roots: Some(RootsCapability { list_changed: (r < V2026_07_28).then_some(true), ..Default::default() }),
            sampling: Some(if r >= V2025_11_25 {
                SamplingCapability { context: Some(Map::new()), tools: Some(Map::new()), ..Default::default() }
            } else {
                SamplingCapability::default()
            }),
            elicitation: (r >= V2025_06_18).then(|| {
                if r >= V2025_11_25 {
                    ElicitationCapability { form: Some(Map::new()), url: Some(Map::new()), ..Default::default() }
                } else {
                    ElicitationCapability::default()
                }
            }),
            tasks: (r == V2025_11_25).then(|| TasksCapability {
                list: Some(Map::new()),
                cancel: Some(Map::new()),
                requests: Some(obj(json!({"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}))),
                ..Default::default()
            }),
            extensions: r.per_request().then(|| obj(json!({"io.modelcontextprotocol/tasks": {}}))),
            extra: Map::new(),
        }
    }

    pub fn server_capabilities(&self) -> ServerCapabilities {
        let r = self.0;
        ServerCapabilities {
            experimental: Some(Map::new()),
            logging: Some(Map::new()),
            completions: (r >= V2025_03_26).then(Map::new),
            prompts: Some(PromptsCapability { list_changed: Some(true), ..Default::default() }),
            resources: Some(ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
                ..Default::default()
            }),
            tools: Some(ToolsCapability { list_changed: Some(true), ..Default::default() }),
            tasks: (r == V2025_11_25).then(|| TasksCapability {
                list: Some(Map::new()),
                cancel: Some(Map::new()),
                requests: Some(obj(json!({"tools": {"call": {}}}))),
                ..Default::default()
            }),
            extensions: r.per_request().then(|| obj(json!({"io.modelcontextprotocol/tasks": {}}))),
            extra: Map::new(),
        }
    }

    pub fn annotations(&self) -> Annotations {
        Annotations {
            audience: Some(vec![Role::User, Role::Assistant]),
            priority: Some(serde_json::Number::from_f64(0.5).unwrap()),
            last_modified: self.at_least(V2025_06_18).then(|| "2025-01-12T15:00:58Z".into()),
            extra: Map::new(),
        }
    }

    pub fn item_meta(&self) -> Option<Meta> {
        self.at_least(V2025_06_18).then(|| meta(json!({"com.example/tag": "x"})))
    }

    pub fn text(&self) -> TextContent {
        TextContent { annotations: Some(self.annotations()), meta: self.item_meta(), ..TextContent::new("hello") }
    }

    pub fn content_blocks(&self) -> Vec<ContentBlock> {
        let mut blocks = vec![
            ContentBlock::Text(self.text()),
            ContentBlock::Image(ImageContent {
                data: "aGk=".into(),
                mime_type: "image/png".into(),
                annotations: Some(self.annotations()),
                meta: self.item_meta(),
                extra: Map::new(),
            }),
            ContentBlock::Resource(EmbeddedResource {
                resource: ResourceContents::Text(TextResourceContents {
                    uri: "file:///a.txt".into(),
                    mime_type: Some("text/plain".into()),
                    text: "a".into(),
                    meta: self.item_meta(),
                    extra: Map::new(),
                }),
                annotations: Some(self.annotations()),
                meta: self.item_meta(),
                extra: Map::new(),
            }),
            ContentBlock::Resource(EmbeddedResource {
                resource: ResourceContents::Blob(BlobResourceContents {
                    uri: "file:///a.bin".into(),
                    mime_type: None,
                    blob: "AAE=".into(),
                    meta: None,
                    extra: Map::new(),
                }),
                annotations: None,
                meta: None,
                extra: Map::new(),
            }),
        ];
        if self.at_least(V2025_03_26) {
            blocks.push(ContentBlock::Audio(AudioContent {
                data: "aGk=".into(),
                mime_type: "audio/wav".into(),
                annotations: None,
                meta: self.item_meta(),
                extra: Map::new(),
            }));
        }
        if self.at_least(V2025_06_18) {
            blocks.push(ContentBlock::ResourceLink(ResourceLink {
                uri: "file:///b.txt".into(),
                name: "b".into(),
                title: Some("B".into()),
                description: Some("The b file".into()),
                mime_type: Some("text/plain".into()),
                size: Some(12),
                icons: self.icons(),
                annotations: Some(self.annotations()),
                meta: self.item_meta(),
                extra: Map::new(),
            }));
        }
        blocks
    }

    pub fn tool(&self) -> Tool {
        let r = self.0;
        Tool {
            name: "get_weather".into(),
            title: (r >= V2025_06_18).then(|| "Weather".into()),
            description: Some("Gets the weather.".into()),
            input_schema: obj(
                json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            ),
            output_schema: (r >= V2025_06_18)
                .then(|| obj(json!({"type": "object", "properties": {"t": {"type": "number"}}}))),
            annotations: (r >= V2025_03_26).then(|| ToolAnnotations {
                title: Some("Weather".into()),
                read_only_hint: Some(true),
                destructive_hint: Some(false),
                idempotent_hint: Some(true),
                open_world_hint: Some(true),
                extra: Map::new(),
            }),
            execution: (r == V2025_11_25)
                .then(|| ToolExecution { task_support: Some(TaskSupport::Optional), extra: Map::new() }),
            icons: self.icons(),
            meta: self.item_meta(),
            extra: Map::new(),
        }
    }

    pub fn call_tool_result(&self) -> CallToolResult {
        CallToolResult {
            meta: self.result_meta(),
            result_type: self.result_type(),
            content: self.content_blocks(),
            structured_content: self.at_least(V2025_06_18).then(|| json!({"t": 21.5})),
            is_error: Some(false),
            extra: Map::new(),
        }
    }

    pub fn sampling_message(&self) -> SamplingMessage {
        let content = if self.at_least(V2025_11_25) {
            SamplingMessageContent::Many(vec![
                SamplingContent::Text(TextContent::new("Weather?")),
                SamplingContent::ToolUse(ToolUseContent {
                    id: "u1".into(),
                    name: "get_weather".into(),
                    input: obj(json!({"city": "Paris"})),
                    meta: None,
                    extra: Map::new(),
                }),
                SamplingContent::ToolResult(ToolResultContent {
                    tool_use_id: "u1".into(),
                    content: vec![ContentBlock::text("21.5")],
                    structured_content: Some(json!({"t": 21.5})),
                    is_error: Some(false),
                    meta: None,
                    extra: Map::new(),
                }),
            ])
        } else {
            SamplingMessageContent::One(SamplingContent::Text(TextContent::new("Weather?")))
        };
        SamplingMessage { role: Role::User, content, meta: None, extra: Map::new() }
    }

    pub fn create_message_params(&self) -> CreateMessageRequestParams {
        let r = self.0;
        CreateMessageRequestParams {
            meta: (!r.per_request()).then(|| meta(json!({"progressToken": "s"}))),
            messages: vec![self.sampling_message()],
            model_preferences: Some(ModelPreferences {
                hints: Some(vec![ModelHint { name: Some("claude".into()), extra: Map::new() }]),
                cost_priority: Some(serde_json::Number::from_f64(0.3).unwrap()),
                speed_priority: Some(1.into()),
                intelligence_priority: Some(serde_json::Number::from_f64(0.8).unwrap()),
                extra: Map::new(),
            }),
            system_prompt: Some("Be brief.".into()),
            include_context: Some(IncludeContext::None),
            temperature: Some(serde_json::Number::from_f64(0.7).unwrap()),
            max_tokens: 100,
            stop_sequences: Some(vec!["\n\n".into()]),
            metadata: Some(obj(json!({"k": "v"}))),
            tools: (r >= V2025_11_25).then(|| vec![self.tool()]),
            tool_choice: (r >= V2025_11_25).then(|| ToolChoice { mode: Some(ToolChoiceMode::Auto), extra: Map::new() }),
            task: (r == V2025_11_25).then(|| TaskMetadata { ttl: Some(60_000), extra: Map::new() }),
            extra: Map::new(),
        }
    }

    pub fn create_message_result(&self) -> CreateMessageResult {
        let content = if self.at_least(V2025_11_25) {
            SamplingMessageContent::One(SamplingContent::ToolUse(ToolUseContent {
                id: "u2".into(),
                name: "get_weather".into(),
                input: obj(json!({"city": "Rome"})),
                meta: None,
                extra: Map::new(),
            }))
        } else {
            SamplingMessageContent::One(SamplingContent::Text(TextContent::new("Sunny.")))
        };
        CreateMessageResult {
            meta: None,
            result_type: None,
            role: Role::Assistant,
            content,
            model: "claude".into(),
            stop_reason: Some(if self.at_least(V2025_11_25) { "toolUse" } else { "endTurn" }.into()),
            extra: Map::new(),
        }
    }

    /// The form fields this revision's elicitation schema allows.
    pub fn form_fields(&self) -> BTreeMap<String, PrimitiveSchema> {
        let new_forms = self.at_least(V2025_11_25);
        let mut f = BTreeMap::new();
        f.insert(
            "email".into(),
            PrimitiveSchema::String(StringSchema {
                title: Some("Email".into()),
                description: Some("Where to write".into()),
                min_length: Some(3),
                max_length: Some(100),
                format: Some(StringFormat::Email),
                default: new_forms.then(|| "a@example.com".into()),
                extra: Map::new(),
            }),
        );
        f.insert(
            "age".into(),
            PrimitiveSchema::Number(NumberSchema {
                kind: NumberKind::Integer,
                title: Some("Age".into()),
                description: None,
                minimum: Some(18.into()),
                maximum: Some(130.into()),
                default: new_forms.then(|| 30.into()),
                extra: Map::new(),
            }),
        );
        f.insert("ok".into(), PrimitiveSchema::Boolean(BooleanSchema { default: Some(true), ..Default::default() }));
        f.insert(
            "legacy".into(),
            PrimitiveSchema::LegacyTitled(LegacyTitledEnumSchema {
                values: vec!["r".into(), "g".into()],
                enum_names: Some(vec!["Red".into(), "Green".into()]),
                ..Default::default()
            }),
        );
        f.insert(
            "plain".into(),
            PrimitiveSchema::UntitledSingleSelect(UntitledSingleSelectEnumSchema {
                values: vec!["a".into(), "b".into()],
                default: new_forms.then(|| "a".into()),
                ..Default::default()
            }),
        );
        if new_forms {
            let options = vec![
                EnumOption { value: "r".into(), title: "Red".into(), extra: Map::new() },
                EnumOption { value: "g".into(), title: "Green".into(), extra: Map::new() },
            ];
            f.insert(
                "titled".into(),
                PrimitiveSchema::TitledSingleSelect(TitledSingleSelectEnumSchema {
                    one_of: options.clone(),
                    default: Some("g".into()),
                    ..Default::default()
                }),
            );
            f.insert(
                "many".into(),
                PrimitiveSchema::UntitledMultiSelect(UntitledMultiSelectEnumSchema {
                    min_items: Some(1),
                    max_items: Some(2),
                    items: UntitledEnumItems { values: vec!["x".into(), "y".into()], extra: Map::new() },
                    default: Some(vec!["x".into()]),
                    ..Default::default()
                }),
            );
            f.insert(
                "many_titled".into(),
                PrimitiveSchema::TitledMultiSelect(TitledMultiSelectEnumSchema {
                    items: TitledEnumItems { any_of: options, extra: Map::new() },
                    default: Some(vec!["r".into()]),
                    ..Default::default()
                }),
            );
        }
        f
    }

    pub fn elicit_form(&self) -> ElicitRequestParams {
        ElicitRequestParams::Form(ElicitRequestFormParams {
            mode: self.at_least(V2025_11_25).then_some(ElicitationMode::Form),
            message: "Tell us about you".into(),
            requested_schema: RequestedSchema {
                properties: self.form_fields(),
                required: Some(vec!["email".into()]),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    pub fn elicit_url(&self) -> ElicitRequestParams {
        ElicitRequestParams::Url(ElicitRequestUrlParams {
            message: "Sign in".into(),
            url: "https://example.com/login".into(),
            elicitation_id: (self.0 == V2025_11_25).then(|| "e-1".into()),
            ..Default::default()
        })
    }

    pub fn elicit_result(&self) -> ElicitResult {
        ElicitResult {
            meta: None,
            result_type: None,
            action: ElicitAction::Accept,
            content: Some(obj(json!({"email": "a@example.com", "age": 30, "ok": true}))),
            extra: Map::new(),
        }
    }

    pub fn roots_result(&self) -> ListRootsResult {
        ListRootsResult {
            roots: vec![Root {
                uri: "file:///home/a".into(),
                name: Some("home".into()),
                meta: None,
                extra: Map::new(),
            }],
            ..Default::default()
        }
    }

    pub fn input_responses(&self) -> InputResponses {
        let mut r = InputResponses::new();
        r.insert("form".into(), InputResponse::Elicit(self.elicit_result()));
        r.insert("sample".into(), InputResponse::CreateMessage(self.create_message_result()));
        r.insert("roots".into(), InputResponse::ListRoots(self.roots_result()));
        r
    }

    pub fn input_requests(&self) -> InputRequests {
        let mut r = InputRequests::new();
        r.insert("form".into(), InputRequest::Elicit(ElicitRequest { params: self.elicit_form(), extra: Map::new() }));
        r.insert("url".into(), InputRequest::Elicit(ElicitRequest { params: self.elicit_url(), extra: Map::new() }));
        r.insert(
            "sample".into(),
            InputRequest::CreateMessage(CreateMessageRequest {
                params: self.create_message_params(),
                extra: Map::new(),
            }),
        );
        r.insert("roots".into(), InputRequest::ListRoots(ListRootsRequest::default()));
        r
    }

    pub fn paginated(&self) -> PaginatedRequestParams {
        PaginatedRequestParams { meta: self.request_meta(), cursor: Some("c-2".into()), extra: Map::new() }
    }

    pub fn task_fields(&self, status: TaskStatus) -> Task {
        let ext = self.0 == ExtTasks;
        Task {
            task_id: "t-1".into(),
            status,
            status_message: Some("ok".into()),
            created_at: "2025-01-12T15:00:58Z".into(),
            last_updated_at: "2025-01-12T15:01:58Z".into(),
            ttl: (!ext).then_some(Some(60_000)),
            ttl_ms: ext.then_some(None),
            poll_interval: (!ext).then_some(1000),
            poll_interval_ms: ext.then_some(1000),
            input_requests: (ext && status == TaskStatus::InputRequired).then(|| self.input_requests()),
            result: (ext && status == TaskStatus::Completed).then(|| obj(enc(&self.call_tool_result()))),
            error: (ext && status == TaskStatus::Failed).then(|| ErrorObject {
                code: -32603,
                message: "boom".into(),
                data: None,
            }),
            extra: Map::new(),
        }
    }

    pub fn get_task_result(&self, status: TaskStatus) -> GetTaskResult {
        let t = self.task_fields(status);
        GetTaskResult {
            meta: None,
            result_type: self.result_type(),
            task_id: t.task_id,
            status: t.status,
            status_message: t.status_message,
            created_at: t.created_at,
            last_updated_at: t.last_updated_at,
            ttl: t.ttl,
            ttl_ms: t.ttl_ms,
            poll_interval: t.poll_interval,
            poll_interval_ms: t.poll_interval_ms,
            input_requests: t.input_requests,
            result: t.result,
            error: t.error,
            extra: Map::new(),
        }
    }

    pub fn task_notification(&self, status: TaskStatus) -> TaskStatusNotificationParams {
        let t = self.get_task_result(status);
        TaskStatusNotificationParams {
            meta: self.0.per_request().then(|| meta(json!({ meta::SUBSCRIPTION_ID: 3 }))),
            task_id: t.task_id,
            status: t.status,
            status_message: t.status_message,
            created_at: t.created_at,
            last_updated_at: t.last_updated_at,
            ttl: t.ttl,
            ttl_ms: t.ttl_ms,
            poll_interval: t.poll_interval,
            poll_interval_ms: t.poll_interval_ms,
            input_requests: t.input_requests,
            result: t.result,
            error: t.error,
            extra: Map::new(),
        }
    }
}
