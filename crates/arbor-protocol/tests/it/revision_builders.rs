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
    Meta::from(obj(v))
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

    pub fn request_params(&self) -> RequestParams {
        let mut params = RequestParams::default();
        params.meta = self.request_meta();
        params
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
            vec![Icon::new("https://example.com/icon.png")
                .with_mime_type("image/png")
                .with_sizes(vec!["48x48".to_owned()])
                .with_theme(IconTheme::Dark)]
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
        let mut roots = RootsCapability::default();
        roots.list_changed = (r < V2026_07_28).then_some(true);
        let mut caps = ClientCapabilities::default()
            .with_experimental(obj(json!({"x.example/feature": {}})))
            .with_roots(roots)
            .with_sampling(if r >= V2025_11_25 {
                SamplingCapability::default().with_context(Map::new()).with_tools(Map::new())
            } else {
                SamplingCapability::default()
            });
        caps.elicitation = (r >= V2025_06_18).then(|| {
            if r >= V2025_11_25 {
                ElicitationCapability::default().with_form(Map::new()).with_url(Map::new())
            } else {
                ElicitationCapability::default()
            }
        });
        caps.tasks = (r == V2025_11_25).then(|| {
            TasksCapability::default()
                .with_list(Map::new())
                .with_cancel(Map::new())
                .with_requests(obj(json!({"sampling": {"createMessage": {}}, "elicitation": {"create": {}}})))
        });
        caps.extensions = r.per_request().then(|| obj(json!({"io.modelcontextprotocol/tasks": {}})));
        caps
    }

    pub fn server_capabilities(&self) -> ServerCapabilities {
        let r = self.0;
        let mut caps = ServerCapabilities::default()
            .with_experimental(Map::new())
            .with_logging(Map::new())
            .with_prompts(PromptsCapability::default().with_list_changed(true))
            .with_resources(ResourcesCapability::default().with_subscribe(true).with_list_changed(true))
            .with_tools(ToolsCapability::default().with_list_changed(true));
        caps.completions = (r >= V2025_03_26).then(Map::new);
        caps.tasks = (r == V2025_11_25).then(|| {
            TasksCapability::default()
                .with_list(Map::new())
                .with_cancel(Map::new())
                .with_requests(obj(json!({"tools": {"call": {}}})))
        });
        caps.extensions = r.per_request().then(|| obj(json!({"io.modelcontextprotocol/tasks": {}})));
        caps
    }

    pub fn annotations(&self) -> Annotations {
        let mut a = Annotations::default()
            .with_audience(vec![Role::User, Role::Assistant])
            .with_priority(serde_json::Number::from_f64(0.5).unwrap());
        a.last_modified = self.at_least(V2025_06_18).then(|| "2025-01-12T15:00:58Z".into());
        a
    }

    pub fn item_meta(&self) -> Option<Meta> {
        self.at_least(V2025_06_18).then(|| meta(json!({"com.example/tag": "x"})))
    }

    pub fn text(&self) -> TextContent {
        let mut t = TextContent::new("hello").with_annotations(self.annotations());
        t.meta = self.item_meta();
        t
    }

    pub fn content_blocks(&self) -> Vec<ContentBlock> {
        let mut image = ImageContent::new("aGk=", "image/png").with_annotations(self.annotations());
        image.meta = self.item_meta();
        let mut text = TextResourceContents::new("file:///a.txt", "a").with_mime_type("text/plain");
        text.meta = self.item_meta();
        let mut embedded = EmbeddedResource::new(ResourceContents::Text(text)).with_annotations(self.annotations());
        embedded.meta = self.item_meta();
        let mut blocks = vec![
            ContentBlock::Text(self.text()),
            ContentBlock::Image(image),
            ContentBlock::Resource(embedded),
            ContentBlock::Resource(EmbeddedResource::new(ResourceContents::Blob(BlobResourceContents::new(
                "file:///a.bin",
                "AAE=",
            )))),
        ];
        if self.at_least(V2025_03_26) {
            let mut audio = AudioContent::new("aGk=", "audio/wav");
            audio.meta = self.item_meta();
            blocks.push(ContentBlock::Audio(audio));
        }
        if self.at_least(V2025_06_18) {
            let mut link = ResourceLink::new("file:///b.txt", "b")
                .with_title("B")
                .with_description("The b file")
                .with_mime_type("text/plain")
                .with_size(12)
                .with_annotations(self.annotations());
            link.icons = self.icons();
            link.meta = self.item_meta();
            blocks.push(ContentBlock::ResourceLink(link));
        }
        blocks
    }

    pub fn tool(&self) -> Tool {
        let r = self.0;
        let mut tool = Tool::new(
            "get_weather",
            obj(json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})),
        )
        .with_description("Gets the weather.");
        tool.title = (r >= V2025_06_18).then(|| "Weather".into());
        tool.output_schema =
            (r >= V2025_06_18).then(|| obj(json!({"type": "object", "properties": {"t": {"type": "number"}}})));
        tool.annotations = (r >= V2025_03_26).then(|| {
            ToolAnnotations::new()
                .with_title("Weather")
                .with_read_only_hint(true)
                .with_destructive_hint(false)
                .with_idempotent_hint(true)
                .with_open_world_hint(true)
        });
        tool.execution = (r == V2025_11_25).then(|| ToolExecution::default().with_task_support(TaskSupport::Optional));
        tool.icons = self.icons();
        tool.meta = self.item_meta();
        tool
    }

    pub fn call_tool_result(&self) -> CallToolResult {
        let mut result = CallToolResult::new(self.content_blocks()).with_is_error(false);
        result.meta = self.result_meta();
        result.result_type = self.result_type();
        result.structured_content = self.at_least(V2025_06_18).then(|| json!({"t": 21.5}));
        result
    }

    pub fn sampling_message(&self) -> SamplingMessage {
        if self.at_least(V2025_11_25) {
            SamplingMessage::from_blocks(
                Role::User,
                vec![
                    SamplingContent::Text(TextContent::new("Weather?")),
                    SamplingContent::ToolUse(ToolUseContent::new("u1", "get_weather", obj(json!({"city": "Paris"})))),
                    SamplingContent::ToolResult(
                        ToolResultContent::new("u1", vec![ContentBlock::text("21.5")])
                            .with_structured_content(json!({"t": 21.5}))
                            .with_is_error(false),
                    ),
                ],
            )
        } else {
            SamplingMessage::user("Weather?")
        }
    }

    pub fn create_message_params(&self) -> CreateMessageRequestParams {
        let r = self.0;
        let mut params = CreateMessageRequestParams::new(vec![self.sampling_message()], 100)
            .with_model_preferences(
                ModelPreferences::default()
                    .with_hints(vec![ModelHint::new("claude")])
                    .with_cost_priority(serde_json::Number::from_f64(0.3).unwrap())
                    .with_speed_priority(1)
                    .with_intelligence_priority(serde_json::Number::from_f64(0.8).unwrap()),
            )
            .with_system_prompt("Be brief.")
            .with_include_context(IncludeContext::None)
            .with_temperature(serde_json::Number::from_f64(0.7).unwrap())
            .with_stop_sequences(vec!["\n\n".to_owned()])
            .with_metadata(obj(json!({"k": "v"})));
        params.meta = (!r.per_request()).then(|| meta(json!({"progressToken": "s"})));
        params.tools = (r >= V2025_11_25).then(|| vec![self.tool()]);
        params.tool_choice = (r >= V2025_11_25).then(|| ToolChoice::new(ToolChoiceMode::Auto));
        params.task = (r == V2025_11_25).then(|| TaskMetadata::default().with_ttl(60_000));
        params
    }

    pub fn create_message_result(&self) -> CreateMessageResult {
        if self.at_least(V2025_11_25) {
            CreateMessageResult::new("claude", ToolUseContent::new("u2", "get_weather", obj(json!({"city": "Rome"}))))
                .with_stop_reason("toolUse")
        } else {
            CreateMessageResult::new("claude", TextContent::new("Sunny.")).with_stop_reason("endTurn")
        }
    }

    /// The form fields this revision's elicitation schema allows.
    pub fn form_fields(&self) -> BTreeMap<String, PrimitiveSchema> {
        let new_forms = self.at_least(V2025_11_25);
        let mut email = StringSchema::default()
            .with_title("Email")
            .with_description("Where to write")
            .with_min_length(3)
            .with_max_length(100)
            .with_format(StringFormat::Email);
        email.default = new_forms.then(|| "a@example.com".into());
        let mut age = NumberSchema::new(NumberKind::Integer).with_title("Age").with_minimum(18).with_maximum(130);
        age.default = new_forms.then(|| 30.into());
        let mut plain = UntitledSingleSelectEnumSchema::new(vec!["a".into(), "b".into()]);
        plain.default = new_forms.then(|| "a".into());
        let mut f = BTreeMap::new();
        f.insert("email".into(), email.into());
        f.insert("age".into(), age.into());
        f.insert("ok".into(), BooleanSchema::default().with_default(true).into());
        f.insert(
            "legacy".into(),
            LegacyTitledEnumSchema::new(vec!["r".into(), "g".into()])
                .with_enum_names(vec!["Red".to_owned(), "Green".to_owned()])
                .into(),
        );
        f.insert("plain".into(), plain.into());
        if new_forms {
            let options = vec![EnumOption::new("r", "Red"), EnumOption::new("g", "Green")];
            f.insert("titled".into(), TitledSingleSelectEnumSchema::new(options.clone()).with_default("g").into());
            f.insert(
                "many".into(),
                UntitledMultiSelectEnumSchema::new(vec!["x".into(), "y".into()])
                    .with_min_items(1)
                    .with_max_items(2)
                    .with_default(vec!["x".to_owned()])
                    .into(),
            );
            f.insert(
                "many_titled".into(),
                TitledMultiSelectEnumSchema::new(options).with_default(vec!["r".to_owned()]).into(),
            );
        }
        f
    }

    pub fn elicit_form(&self) -> ElicitRequestParams {
        let mut schema = RequestedSchema::new();
        schema.properties = self.form_fields();
        schema.required = Some(vec!["email".into()]);
        let mut params = ElicitRequestFormParams::new("Tell us about you", schema);
        params.mode = self.at_least(V2025_11_25).then_some(ElicitationMode::Form);
        params.into()
    }

    pub fn elicit_url(&self) -> ElicitRequestParams {
        let mut params = ElicitRequestUrlParams::new("Sign in", "https://example.com/login");
        params.elicitation_id = (self.0 == V2025_11_25).then(|| "e-1".into());
        params.into()
    }

    pub fn elicit_result(&self) -> ElicitResult {
        ElicitResult::accept(obj(json!({"email": "a@example.com", "age": 30, "ok": true})))
    }

    pub fn roots_result(&self) -> ListRootsResult {
        ListRootsResult::new(vec![Root::new("file:///home/a").with_name("home")])
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
        r.insert("form".into(), ElicitRequest::new(self.elicit_form()).into());
        r.insert("url".into(), ElicitRequest::new(self.elicit_url()).into());
        r.insert("sample".into(), CreateMessageRequest::new(self.create_message_params()).into());
        r.insert("roots".into(), InputRequest::ListRoots(ListRootsRequest::default()));
        r
    }

    pub fn paginated(&self) -> PaginatedRequestParams {
        let mut params = PaginatedRequestParams::default().with_cursor("c-2");
        params.meta = self.request_meta();
        params
    }

    pub fn task_fields(&self, status: TaskStatus) -> Task {
        let ext = self.0 == ExtTasks;
        let mut task =
            Task::new("t-1", status, "2025-01-12T15:00:58Z", "2025-01-12T15:01:58Z").with_status_message("ok");
        if ext {
            task = task.with_ttl_ms(None).with_poll_interval_ms(1000);
        } else {
            task = task.with_ttl(60_000).with_poll_interval(1000);
        }
        task.input_requests = (ext && status == TaskStatus::InputRequired).then(|| self.input_requests());
        task.result = (ext && status == TaskStatus::Completed).then(|| obj(enc(&self.call_tool_result())));
        task.error = (ext && status == TaskStatus::Failed).then(|| ErrorObject {
            code: -32603,
            message: "boom".into(),
            data: None,
        });
        task
    }

    pub fn get_task_result(&self, status: TaskStatus) -> GetTaskResult {
        let mut result = GetTaskResult::from_task(self.task_fields(status));
        result.result_type = self.result_type();
        result
    }

    pub fn task_notification(&self, status: TaskStatus) -> TaskStatusNotificationParams {
        let mut params = TaskStatusNotificationParams::from_task(self.task_fields(status));
        params.meta = self.0.per_request().then(|| meta(json!({ meta::SUBSCRIPTION_ID: 3 })));
        params
    }
}
