//! Lowering: a neutral value made fit for one revision's wire before it is sent.
//!
//! The model types are a superset of every revision, so a handler may build a result or an
//! input request with members an older revision never defined. Sending them as they are
//! would be read wrongly, or refused by that revision's schema (an `audio` block in a
//! 2024-11-05 tool result; a multi-select form field in 2025-06-18). This module removes or
//! rewrites, per value, what the negotiated revision lacks, asking the feature table for
//! each member. The rules, decided for an operator who wants every old client served
//! whenever that loses nothing the client could have used:
//!
//! - Display members a revision lacks are dropped (`title`, `icons`, `description` and
//!   `websiteUrl` of an implementation, tool `annotations` and `outputSchema`). A tool's
//!   `title` moves into `annotations.title` where annotations exist (2025-03-26).
//! - `structuredContent` a revision cannot carry (none before 2025-06-18; a non-object one
//!   before 2026-07-28) is dropped, and its JSON text appended as a text block unless a
//!   text block already holds that very value, so the data still arrives. An `outputSchema`
//!   whose root is not an object goes the same way.
//! - Content blocks a revision cannot carry in a *result* (audio before 2025-03-26,
//!   `resource_link` before 2025-06-18) become a text block saying what was there (the
//!   link's name and URI, the audio's MIME type): the rest of the result is still worth
//!   having, and a refusal would cost the client the whole call.
//! - An *input request* is the server asking something of the user or the model; a
//!   rewritten question is another question, so what cannot be asked exactly is refused
//!   (-32603, before anything is sent): multi-select enum fields before 2025-11-25, audio
//!   or tool blocks in sampling messages before their revisions. A titled single-select
//!   field becomes the legacy `enum` + `enumNames` form, which asks the same thing, and
//!   field `default`s before 2025-11-25 (booleans excepted) are dropped, as is `mode`.
//!
//! `_meta` is never touched: it is the extension channel of every revision. Lowering for
//! the newest revision changes nothing. Invariant: a lowered value uses only members and
//! block types its revision defines, or lowering failed with a -32603 naming why.

use crate::error::McpError;
use crate::model::common::EmptyResult;
use crate::model::common::{Icon, Implementation};
use crate::model::completion::CompleteResult;
use crate::model::content::{ContentBlock, SamplingContent, TextContent};
use crate::model::elicitation::{
    ElicitRequestParams, LegacyTitledEnumSchema, PrimitiveSchema, TitledSingleSelectEnumSchema,
};
use crate::model::lifecycle::{DiscoverResult, InitializeResult};
use crate::model::mrtr::InputRequest;
use crate::model::prompts::{GetPromptResult, ListPromptsResult};
use crate::model::resources::{ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult};
use crate::model::sampling::SamplingMessageContent;
use crate::model::skills::{GetSkillResult, ListSkillsResult, ReadDirectoryResult};
use crate::model::tools::{CallToolResult, ListToolsResult, Tool, ToolAnnotations};
use crate::version::{Feature, ProtocolVersion};
use serde_json::Value;

/// A value the server sends, made fit for one revision. Results never fail to lower:
/// what a revision cannot carry is dropped or replaced as the module documentation says.
pub trait Lower {
    /// Removes or rewrites what `version` does not define.
    fn lower(&mut self, version: ProtocolVersion);
}

/// Makes an input request fit for `version`, or refuses it with -32603 when the revision
/// cannot ask the same question. `key` names the request in the error.
pub fn input_request(key: &str, request: &mut InputRequest, version: ProtocolVersion) -> Result<(), McpError> {
    let refuse = |what: &str| {
        McpError::internal(format!(
            "Cannot ask the client for input: input request `{key}` uses {what}, which protocol revision {version} cannot express"
        ))
    };
    match request {
        InputRequest::Elicit(e) => {
            let ElicitRequestParams::Form(form) = &mut e.params else { return Ok(()) };
            if !version.supports(Feature::UrlElicitation) {
                form.mode = None;
            }
            if !version.supports(Feature::CoreTasks) {
                form.task = None;
            }
            if !version.supports(Feature::JsonSchema2020) {
                form.requested_schema.schema = None;
            }
            if version.supports(Feature::EnumSchemaForms) {
                return Ok(());
            }
            for (name, field) in form.requested_schema.properties.iter_mut() {
                lower_field(field).map_err(|form| refuse(&format!("a {form} field (`{name}`)")))?;
            }
            Ok(())
        }
        InputRequest::CreateMessage(m) => {
            for message in &mut m.params.messages {
                let blocks = match &message.content {
                    SamplingMessageContent::One(block) => std::slice::from_ref(block),
                    SamplingMessageContent::Many(blocks) => blocks.as_slice(),
                };
                for block in blocks {
                    match block {
                        SamplingContent::Audio(_) if !version.supports(Feature::AudioContent) => {
                            return Err(refuse("audio content in a sampling message"))
                        }
                        SamplingContent::ToolUse(_) | SamplingContent::ToolResult(_)
                            if !version.supports(Feature::SamplingTools) =>
                        {
                            return Err(refuse("tool use or tool result content in a sampling message"))
                        }
                        _ => {}
                    }
                }
            }
            Ok(())
        }
        InputRequest::ListRoots(_) => Ok(()),
    }
}

/// One form field before the 2025-11-25 enum forms: the legacy form, or the name of the
/// form that has no older equivalent.
fn lower_field(field: &mut PrimitiveSchema) -> Result<(), &'static str> {
    match field {
        PrimitiveSchema::String(s) => s.default = None,
        PrimitiveSchema::Number(n) => n.default = None,
        PrimitiveSchema::Boolean(_) => {}
        PrimitiveSchema::UntitledSingleSelect(u) => u.default = None,
        PrimitiveSchema::LegacyTitled(l) => l.default = None,
        PrimitiveSchema::TitledSingleSelect(t) => *field = PrimitiveSchema::LegacyTitled(legacy_titled(t)),
        PrimitiveSchema::UntitledMultiSelect(_) | PrimitiveSchema::TitledMultiSelect(_) => {
            return Err("multi-select enum")
        }
    }
    Ok(())
}

fn legacy_titled(t: &TitledSingleSelectEnumSchema) -> LegacyTitledEnumSchema {
    LegacyTitledEnumSchema {
        title: t.title.clone(),
        description: t.description.clone(),
        values: t.one_of.iter().map(|o| o.value.clone()).collect(),
        enum_names: Some(t.one_of.iter().map(|o| o.title.clone()).collect()),
        default: None,
        extra: t.extra.clone(),
    }
}

/// A content block of a result: kept, trimmed, or replaced by text saying what it was.
fn content(block: &mut ContentBlock, version: ProtocolVersion) {
    let replacement = match block {
        ContentBlock::Audio(a) if !version.supports(Feature::AudioContent) => {
            let text =
                format!("[audio content ({}) omitted: protocol revision {version} cannot carry audio]", a.mime_type);
            TextContent { annotations: a.annotations.take(), ..TextContent::new(text) }
        }
        ContentBlock::ResourceLink(l) if !version.supports(Feature::ResourceLinks) => {
            let mut text = format!("Resource link: {} <{}>", l.title.as_deref().unwrap_or(&l.name), l.uri);
            if let Some(mime) = &l.mime_type {
                text.push_str(&format!(" ({mime})"));
            }
            if let Some(description) = &l.description {
                text.push_str(&format!(": {description}"));
            }
            TextContent { annotations: l.annotations.take(), ..TextContent::new(text) }
        }
        ContentBlock::ResourceLink(l) => {
            display(&mut l.title, &mut l.icons, version);
            return;
        }
        _ => return,
    };
    *block = ContentBlock::Text(replacement);
}

/// Drops `title` and `icons` where the revision lacks them.
fn display(title: &mut Option<String>, icons: &mut Option<Vec<Icon>>, version: ProtocolVersion) {
    if !version.supports(Feature::Titles) {
        *title = None;
    }
    if !version.supports(Feature::Icons) {
        *icons = None;
    }
}

fn object_schema(schema: &serde_json::Map<String, Value>) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

impl Lower for Implementation {
    fn lower(&mut self, version: ProtocolVersion) {
        display(&mut self.title, &mut self.icons, version);
        if !version.supports(Feature::Icons) {
            self.description = None;
            self.website_url = None;
        }
    }
}

impl Lower for Tool {
    fn lower(&mut self, version: ProtocolVersion) {
        if !version.supports(Feature::Titles) && version.supports(Feature::ToolAnnotations) {
            if let Some(title) = self.title.take() {
                self.annotations.get_or_insert_with(ToolAnnotations::default).title.get_or_insert(title);
            }
        }
        display(&mut self.title, &mut self.icons, version);
        if !version.supports(Feature::ToolAnnotations) {
            self.annotations = None;
        }
        let structured = version.supports(Feature::StructuredToolOutput);
        let any = version.supports(Feature::AnyStructuredContent);
        if !structured || (!any && !self.output_schema.as_ref().is_none_or(object_schema)) {
            self.output_schema = None;
        }
    }
}

impl Lower for CallToolResult {
    fn lower(&mut self, version: ProtocolVersion) {
        for block in &mut self.content {
            content(block, version);
        }
        let carried = match &self.structured_content {
            None => return,
            Some(_) if !version.supports(Feature::StructuredToolOutput) => false,
            Some(value) => value.is_object() || version.supports(Feature::AnyStructuredContent),
        };
        if carried {
            return;
        }
        let Some(value) = self.structured_content.take() else { return };
        // The spec asks tools to send the JSON text too; add it only if it is missing.
        let present = self.content.iter().any(|block| match block {
            ContentBlock::Text(t) => serde_json::from_str::<Value>(&t.text).is_ok_and(|v| v == value),
            _ => false,
        });
        if !present {
            self.content.push(ContentBlock::text(value.to_string()));
        }
    }
}

impl Lower for GetPromptResult {
    fn lower(&mut self, version: ProtocolVersion) {
        for message in &mut self.messages {
            content(&mut message.content, version);
        }
    }
}

impl Lower for ListToolsResult {
    fn lower(&mut self, version: ProtocolVersion) {
        self.tools.iter_mut().for_each(|t| t.lower(version));
    }
}

impl Lower for ListPromptsResult {
    fn lower(&mut self, version: ProtocolVersion) {
        for prompt in &mut self.prompts {
            display(&mut prompt.title, &mut prompt.icons, version);
            for argument in prompt.arguments.iter_mut().flatten() {
                display(&mut argument.title, &mut None, version);
            }
        }
    }
}

impl Lower for ListResourcesResult {
    fn lower(&mut self, version: ProtocolVersion) {
        for r in &mut self.resources {
            display(&mut r.title, &mut r.icons, version);
        }
    }
}

impl Lower for ListResourceTemplatesResult {
    fn lower(&mut self, version: ProtocolVersion) {
        for t in &mut self.resource_templates {
            display(&mut t.title, &mut t.icons, version);
        }
    }
}

impl Lower for InitializeResult {
    fn lower(&mut self, version: ProtocolVersion) {
        self.server_info.lower(version);
    }
}

/// Results whose members every revision that sends them defines.
macro_rules! already_low {
    ($($t:ty),*) => {$(
        impl Lower for $t {
            fn lower(&mut self, _version: ProtocolVersion) {}
        }
    )*};
}

already_low!(ReadResourceResult, CompleteResult, EmptyResult, DiscoverResult, ListSkillsResult, GetSkillResult);

impl Lower for ReadDirectoryResult {
    fn lower(&mut self, version: ProtocolVersion) {
        for r in &mut self.resources {
            display(&mut r.title, &mut r.icons, version);
        }
    }
}
