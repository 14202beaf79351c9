//! The safety checks applied around the handler's callbacks, in both eras: pure functions
//! over typed params and results, no IO, no clock reads, no handler calls.
//!
//! Each check either passes (possibly rewriting the value: a clamped `maxTokens`, a coerced
//! `includeContext`, a root URI with `.`/`..` resolved) or returns a `Refusal`, which the
//! era layer turns into the JSON-RPC error (legacy) or the typed input-handler error
//! (modern). They do not decide capabilities or rates' bookkeeping beyond the bucket.
//!
//! Invariant: a check never panics on any input a peer can send.

pub(crate) mod elicitation;
pub(crate) mod form;
pub mod logs;
pub mod rate;
pub(crate) mod roots;
pub(crate) mod sampling;

/// Why a check refused a request or an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The request is malformed or asks for something refused by the spec's rules: -32602.
    InvalidParams(String),
    /// A sampling policy refusal (idle, tool loop, over budget): the configured code.
    Rejected(String),
    /// The handler's answer does not fit: -32603.
    InvalidAnswer(String),
}
