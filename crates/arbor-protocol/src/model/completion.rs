//! Completion: `completion/complete`, argument autocompletion for prompts and
//! resource templates.
//!
//! This module does not cap the number of values (the spec's limit is 100; the
//! server layer enforces it). Invariant: a reference is tagged by `"type"`.

use crate::meta::Meta;
use crate::model::common::ResultType;
use std::collections::BTreeMap;

wire_struct! {
    /// A reference to a prompt.
    pub struct PromptReference tag "type" = "ref/prompt" {
        /// The prompt's name.
        req name: String = "name",
        /// A display name (2025-06-18 on).
        opt title: String = "title",
    }
}

wire_struct! {
    /// A reference to a resource template (`ResourceReference` before 2025-06-18).
    pub struct ResourceTemplateReference tag "type" = "ref/resource" {
        /// The URI template.
        req uri: String = "uri",
    }
}

wire_tagged_enum! {
    /// What is being completed.
    pub enum Reference tag "type" {
        /// A prompt's argument.
        Prompt(PromptReference) = "ref/prompt",
        /// A resource template's variable.
        ResourceTemplate(ResourceTemplateReference) = "ref/resource",
    }
}

wire_struct! {
    /// The argument being completed.
    pub struct CompleteArgument {
        /// Its name.
        req name: String = "name",
        /// What the user typed so far.
        req value: String = "value",
    }
}

wire_struct! {
    /// Values of arguments already filled in (2025-06-18 on).
    #[derive(Default)]
    pub struct CompleteContext {
        /// Argument values by name.
        opt arguments: BTreeMap<String, String> = "arguments",
    }
}

wire_struct! {
    /// The params of `completion/complete`.
    pub struct CompleteRequestParams {
        /// Request metadata.
        opt meta: Meta = "_meta",
        /// What is being completed.
        req reference: Reference = "ref",
        /// The argument being completed.
        req argument: CompleteArgument = "argument",
        /// Arguments already filled in (2025-06-18 on).
        opt context: CompleteContext = "context",
    }
}

wire_struct! {
    /// The completion values.
    #[derive(Default)]
    pub struct Completion {
        /// At most 100 values.
        req values: Vec<String> = "values",
        /// How many values exist in all.
        opt total: u64 = "total",
        /// Whether more values exist than were sent.
        opt has_more: bool = "hasMore",
    }
}

wire_struct! {
    /// The result of `completion/complete`.
    #[derive(Default)]
    pub struct CompleteResult {
        /// Result metadata.
        opt meta: Meta = "_meta",
        /// `"complete"` in 2026-07-28.
        opt result_type: ResultType = "resultType",
        /// The values.
        req completion: Completion = "completion",
    }
}
