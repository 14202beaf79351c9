//! Argument completion (`completion/complete`) for prompt arguments and resource-template
//! variables.
//!
//! A completion function is registered next to the prompt or template it serves
//! ([`PromptRoute::complete`](super::PromptRoute::complete),
//! [`TemplateRoute::complete`](super::TemplateRoute::complete)), so removing the prompt
//! removes its completions too. It receives a [`CompletionRequest`] and returns the
//! candidate values; [`starting_with`] builds one from a fixed list.
//!
//! This module does not decide which prompt or template is meant; the router does.
//! Invariant: a completion result never carries more than 100 values; when a function
//! returns more, the first 100 are sent with `hasMore: true` and the full count in `total`.

use super::handler_fn::HandlerFn;
use crate::context::RequestContext;
use arbor_protocol::error::McpError;
use arbor_protocol::model::completion::Completion;
use futures::future::BoxFuture;
use futures::FutureExt as _;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The spec's cap on values in one completion result.
pub const MAX_VALUES: usize = 100;

/// What the client is completing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompletionRequest {
    /// The argument (or template variable) being completed.
    pub argument: String,
    /// What the user has typed so far.
    pub value: String,
    /// Values of the other arguments already filled in (2025-06-18 on; empty before).
    pub context: BTreeMap<String, String>,
}

/// What a completion function may return: `Vec<String>` (all candidates; the router sends
/// the first 100), a [`Completion`] (when the function knows `total`/`hasMore` itself), or
/// `Result<T, E>` of either with `E: Into<McpError>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a completion function",
    label = "this is not a list of completion values",
    note = "return a `Vec<String>` or a `Completion`, or a `Result<_, McpError>` of one of those"
)]
pub trait IntoCompletion {
    /// The values, or the protocol error.
    fn into_completion(self) -> Result<Completion, McpError>;
}

impl IntoCompletion for Vec<String> {
    fn into_completion(self) -> Result<Completion, McpError> {
        Ok(Completion::new(self))
    }
}

impl IntoCompletion for Completion {
    fn into_completion(self) -> Result<Completion, McpError> {
        Ok(self)
    }
}

impl<T, E> IntoCompletion for Result<T, E>
where
    T: IntoCompletion,
    E: Into<McpError>,
{
    fn into_completion(self) -> Result<Completion, McpError> {
        self.map_err(Into::into)?.into_completion()
    }
}

/// A registered completion function, with its input and output types erased.
pub(crate) type Completer =
    Arc<dyn Fn(CompletionRequest, RequestContext) -> BoxFuture<'static, Result<Completion, McpError>> + Send + Sync>;

pub(crate) fn erase<H, M>(handler: H) -> Completer
where
    H: HandlerFn<CompletionRequest, M>,
    H::Output: IntoCompletion,
{
    Arc::new(move |request, cx| handler.call(request, cx).map(|out| out.into_completion().map(clamp)).boxed())
}

/// Caps `completion` at [`MAX_VALUES`], keeping `total` and `hasMore` truthful.
pub(crate) fn clamp(mut completion: Completion) -> Completion {
    let count = completion.values.len();
    if count > MAX_VALUES {
        completion.values.truncate(MAX_VALUES);
        completion.has_more = Some(true);
        let total = completion.total.unwrap_or(0).max(count as u64);
        completion.total = Some(total);
    } else {
        completion.total = completion.total.or(Some(count as u64));
        completion.has_more = completion.has_more.or(Some(false));
    }
    completion
}

/// A completion function offering the values of `candidates` that start with what the user
/// typed (ignoring ASCII case), in the given order.
pub fn starting_with<I, S>(
    candidates: I,
) -> impl Fn(CompletionRequest) -> std::future::Ready<Vec<String>> + Send + Sync + 'static
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let candidates: Arc<[String]> = candidates.into_iter().map(Into::into).collect();
    move |request: CompletionRequest| {
        let typed = request.value.to_ascii_lowercase();
        let values = candidates.iter().filter(|c| c.to_ascii_lowercase().starts_with(&typed)).cloned().collect();
        std::future::ready(values)
    }
}
