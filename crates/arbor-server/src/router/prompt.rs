//! Prompts: a typed async function, its argument list, and its argument completions.
//!
//! Prompt arguments travel as a map of strings. A [`PromptRoute`] derives the listed
//! `arguments` (name, title, description, required) from the argument type's schema, so
//! the list and the parser cannot disagree. On `prompts/get` the router checks that every
//! required argument is present (-32602 otherwise, as the spec asks), turns the strings
//! into JSON (a string stays a string unless the field's schema does not accept strings,
//! in which case `"3"` is read as the number 3), and deserialises the argument type.
//!
//! This module does not render messages; the handler does. Invariant: the listed
//! `arguments` are exactly the argument type's top-level properties, in declaration order.

use super::completion::{self, Completer, CompletionRequest, IntoCompletion};
use super::error::{RouteKind, RouterError, SchemaPart};
use super::handler_fn::HandlerFn;
use super::result::IntoPromptResult;
use super::schema::{self, Contract};
use crate::context::RequestContext;
use crate::reply::Reply;
use arbor_protocol::error::McpError;
use arbor_protocol::meta::Meta;
use arbor_protocol::model::common::{Icon, JsonObject};
use arbor_protocol::model::prompts::{GetPromptResult, Prompt, PromptArgument};
use futures::future::BoxFuture;
use futures::FutureExt as _;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

type ErasedPrompt =
    Arc<dyn Fn(Value, RequestContext) -> BoxFuture<'static, Result<Reply<GetPromptResult>, McpError>> + Send + Sync>;

/// A prompt ready to register: its definition, handler and argument completions.
///
/// ```
/// # use arbor_server::router::{completion, PromptRoute};
/// # use arbor_protocol::model::prompts::PromptMessage;
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct ReviewArgs {
///     /// The language of the code.
///     language: String,
///     /// The code to review.
///     code: String,
/// }
///
/// async fn review(args: ReviewArgs) -> Vec<PromptMessage> {
///     vec![
///         PromptMessage::user(format!("Review this {} code:\n{}", args.language, args.code)),
///         PromptMessage::assistant("I will look at correctness first, then style."),
///     ]
/// }
///
/// // A prompt may also return its text alone: one user message.
/// async fn explain(args: ReviewArgs) -> String {
///     format!("Explain this {} code line by line:\n{}", args.language, args.code)
/// }
///
/// let route = PromptRoute::new("review", review)
///     .description("Review code")
///     .complete("language", completion::starting_with(["rust", "python", "go"]));
/// let explain = PromptRoute::new("explain", explain);
/// ```
pub struct PromptRoute {
    pub(crate) prompt: Prompt,
    handler: ErasedPrompt,
    /// Whether each argument's schema accepts a string as it is.
    takes_string: HashMap<String, bool>,
    pub(crate) completers: HashMap<String, Completer>,
}

impl fmt::Debug for PromptRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut completions: Vec<&String> = self.completers.keys().collect();
        completions.sort();
        f.debug_struct("PromptRoute")
            .field("prompt", &self.prompt)
            .field("completions", &completions)
            .finish_non_exhaustive()
    }
}

impl PromptRoute {
    /// A prompt named `name` whose arguments are parsed as `A` and handed to `handler`.
    ///
    /// # Panics
    ///
    /// If `A`'s schema is not an object schema; [`PromptRoute::try_new`] returns the error
    /// instead.
    pub fn new<A, H, M>(name: impl Into<String>, handler: H) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoPromptResult,
    {
        PromptRoute::try_new(name, handler).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`PromptRoute::new`], returning [`RouterError::Schema`] instead of panicking when
    /// `A`'s schema is not an object schema.
    pub fn try_new<A, H, M>(name: impl Into<String>, handler: H) -> Result<Self, RouterError>
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        H: HandlerFn<A, M>,
        H::Output: IntoPromptResult,
    {
        let name = name.into();
        let schema = schema::object_schema_for::<A>(Contract::Deserialize).map_err(|reason| RouterError::Schema {
            kind: RouteKind::Prompt,
            name: name.clone(),
            part: SchemaPart::Arguments,
            reason,
        })?;
        let (arguments, takes_string) = arguments_of(&schema);
        let label = name.clone();
        let handler: ErasedPrompt = Arc::new(move |args, cx| match serde_json::from_value::<A>(args) {
            Ok(args) => handler.call(args, cx).map(|out| out.into_prompt_result()).boxed(),
            Err(e) => {
                let error = McpError::invalid_params(format!(
                    "Invalid arguments for prompt {label}: {}",
                    arbor_protocol::reflect::Clamped(&e.to_string())
                ));
                futures::future::ready(Err(error)).boxed()
            }
        });
        let mut prompt = Prompt::new(name);
        prompt.arguments = (!arguments.is_empty()).then_some(arguments);
        Ok(PromptRoute { prompt, handler, takes_string, completers: HashMap::new() })
    }

    /// What the prompt is for.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.prompt.description = Some(description.into());
        self
    }

    /// A display name (2025-06-18 on).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.prompt.title = Some(title.into());
        self
    }

    /// Adds an icon (2025-11-25 on).
    pub fn icon(mut self, icon: Icon) -> Self {
        self.prompt.icons.get_or_insert_with(Vec::new).push(icon);
        self
    }

    /// Sets the prompt's `_meta`.
    pub fn meta(mut self, meta: Meta) -> Self {
        self.prompt.meta = Some(meta);
        self
    }

    /// Completes values of `argument` with `completer` (`completion/complete` with a
    /// `ref/prompt` reference).
    ///
    /// # Panics
    ///
    /// If the prompt has no argument called `argument`; [`PromptRoute::try_complete`]
    /// returns the error instead.
    pub fn complete<H, M>(self, argument: impl Into<String>, completer: H) -> Self
    where
        H: HandlerFn<CompletionRequest, M>,
        H::Output: IntoCompletion,
    {
        self.try_complete(argument, completer).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`PromptRoute::complete`], returning [`RouterError::UnknownVariable`] instead of
    /// panicking when the prompt has no argument called `argument`.
    pub fn try_complete<H, M>(mut self, argument: impl Into<String>, completer: H) -> Result<Self, RouterError>
    where
        H: HandlerFn<CompletionRequest, M>,
        H::Output: IntoCompletion,
    {
        let argument = argument.into();
        if !self.takes_string.contains_key(&argument) {
            return Err(RouterError::UnknownVariable {
                kind: RouteKind::Prompt,
                name: self.prompt.name.clone(),
                variable: argument,
            });
        }
        self.completers.insert(argument, completion::erase(completer));
        Ok(self)
    }

    /// The definition clients list.
    pub fn definition(&self) -> &Prompt {
        &self.prompt
    }

    /// Checks the arguments and calls the handler.
    pub(crate) fn get(
        &self,
        arguments: BTreeMap<String, String>,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Reply<GetPromptResult>, McpError>> {
        let name = &self.prompt.name;
        for argument in self.prompt.arguments.iter().flatten() {
            if argument.required == Some(true) && !arguments.contains_key(&argument.name) {
                let error =
                    McpError::invalid_params(format!("Missing required argument {} for prompt {name}", argument.name));
                return futures::future::ready(Err(error)).boxed();
            }
        }
        let object: Map<String, Value> = arguments
            .into_iter()
            .map(|(key, text)| {
                let value = self.coerce(&key, text);
                (key, value)
            })
            .collect();
        let description = self.prompt.description.clone();
        (self.handler)(Value::Object(object), cx)
            .map(move |result| {
                result.map(|reply| match reply {
                    // A result without a description takes the prompt's own.
                    Reply::Complete(mut r) => {
                        r.description = r.description.or(description);
                        Reply::Complete(r)
                    }
                    other => other,
                })
            })
            .boxed()
    }

    fn coerce(&self, argument: &str, text: String) -> Value {
        if self.takes_string.get(argument).copied().unwrap_or(true) {
            return Value::String(text);
        }
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    }
}

/// The prompt arguments described by an object schema, and whether each takes a string.
fn arguments_of(schema: &JsonObject) -> (Vec<PromptArgument>, HashMap<String, bool>) {
    let required: HashSet<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let mut arguments = Vec::new();
    let mut takes_string = HashMap::new();
    for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
        let text = |key: &str| property.get(key).and_then(Value::as_str).map(str::to_owned);
        let mut argument = PromptArgument::new(name.clone());
        argument.title = text("title");
        argument.description = text("description");
        // Listed as `false` too, not left out: clients show which ones they may skip.
        argument.required = Some(required.contains(name.as_str()));
        arguments.push(argument);
        takes_string.insert(name.clone(), accepts_string(property));
    }
    (arguments, takes_string)
}

/// Whether a property schema accepts a JSON string: it names no `type`, or names `string`
/// among its types.
fn accepts_string(property: &Value) -> bool {
    match property.get("type") {
        None => true,
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
        Some(_) => true,
    }
}
