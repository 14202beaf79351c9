//! The one handler shape: a plain async function of a typed input and, optionally, the
//! request context.
//!
//! A tool, prompt, resource template or completion handler is any
//! `Fn(In, RequestContext) -> impl Future` or `Fn(In) -> impl Future`; [`HandlerFn`] names
//! both, told apart by a marker type the compiler infers, so `router.tool("add", "…", add)`
//! accepts either form without a second method. This is not axum's arity-generic extractor
//! machinery: an MCP request has exactly two inputs, so two impls cover every handler.
//!
//! Invariant: every future a handler returns is `Send + 'static`, so the runtime can run it
//! in its own supervised task and drop it at the deadline or on cancellation.

use crate::context::RequestContext;
use std::future::Future;

/// Marks a handler that takes the request context as its second argument.
#[derive(Debug)]
pub enum WithContext {}

/// Marks a handler that takes only its input.
#[derive(Debug)]
pub enum WithoutContext {}

/// An async function usable as a handler: `async fn(input: In, cx: RequestContext) -> R`
/// or `async fn(input: In) -> R`. Implemented for every such function and closure; there
/// is nothing to implement by hand.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a handler taking `{In}`",
    label = "expected an `async fn(args: {In}, cx: RequestContext) -> R` or an `async fn(args: {In}) -> R`",
    note = "a handler is a plain async function (or a closure returning an `async move` block) whose future is `Send + 'static`",
    note = "if the argument type is right, check that the future does not hold a non-`Send` value (an `Rc`, a `MutexGuard`) across an `.await`"
)]
pub trait HandlerFn<In, Marker>: Send + Sync + 'static {
    /// What the future resolves to.
    type Output: Send + 'static;
    /// The future the handler returns.
    type Future: Future<Output = Self::Output> + Send + 'static;

    /// Calls the handler.
    fn call(&self, input: In, cx: RequestContext) -> Self::Future;
}

impl<F, Fut, In> HandlerFn<In, WithContext> for F
where
    F: Fn(In, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    type Output = Fut::Output;
    type Future = Fut;

    fn call(&self, input: In, cx: RequestContext) -> Fut {
        self(input, cx)
    }
}

impl<F, Fut, In> HandlerFn<In, WithoutContext> for F
where
    F: Fn(In) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    type Output = Fut::Output;
    type Future = Fut;

    fn call(&self, input: In, _cx: RequestContext) -> Fut {
        self(input)
    }
}

/// An async function usable as a static resource's reader: `async fn(cx: RequestContext) -> R`
/// or `async fn() -> R`. A static resource has no input beyond its own URI, which the
/// router already knows.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a resource reader",
    label = "expected an `async fn(cx: RequestContext) -> R` or an `async fn() -> R`",
    note = "a resource reader is a plain async function (or a closure returning an `async move` block) whose future is `Send + 'static`"
)]
pub trait ReadFn<Marker>: Send + Sync + 'static {
    /// What the future resolves to.
    type Output: Send + 'static;
    /// The future the reader returns.
    type Future: Future<Output = Self::Output> + Send + 'static;

    /// Calls the reader.
    fn call(&self, cx: RequestContext) -> Self::Future;
}

impl<F, Fut> ReadFn<WithContext> for F
where
    F: Fn(RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    type Output = Fut::Output;
    type Future = Fut;

    fn call(&self, cx: RequestContext) -> Fut {
        self(cx)
    }
}

impl<F, Fut> ReadFn<WithoutContext> for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    type Output = Fut::Output;
    type Future = Fut;

    fn call(&self, _cx: RequestContext) -> Fut {
        self()
    }
}
