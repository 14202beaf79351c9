//! Asking the client for input (elicitation, sampling, roots) with one handler API for
//! both protocol eras.
//!
//! A handler answers [`Reply::InputRequired`](crate::Reply::InputRequired) with input
//! requests and optional state, and is called again with the client's answers. What
//! happens in between depends on the era:
//!
//! - 2026-07-28 ([`modern`]): the server is stateless, so the request ends with an MRTR
//!   `input_required` result. [`modern::seal`] checks the request's declared client
//!   capabilities (-32021 otherwise) and packs the handler's state, the method, subject
//!   and (digested) arguments it answers, the keys and kinds of the input requests and
//!   an expiry into a `requestState` authenticated with HMAC-SHA256 under a [`StateKey`]. On the
//!   client's retry [`modern::open`] verifies that token before anything in it is
//!   believed and hands the handler its state and the answers to what it asked.
//! - 2024-11-05 … 2025-11-25 (`legacy`): the runtime itself sends `elicitation/create`,
//!   `sampling/createMessage` or `roots/list` to the client through a
//!   `ClientRequester`, concurrently, and calls the handler again in the same
//!   request task. State never leaves the server, so nothing is sealed.
//!
//! This module does not send or receive frames, and knows nothing about connections;
//! the runtime hands it the capabilities and, in the legacy era, a way to reach the
//! client. Invariant: a handler only ever sees state it produced itself and answers
//! whose key it issued, of the kind it asked for; anything the client could have
//! altered is verified before it reaches the handler.

mod canonical;
pub(crate) mod legacy;
pub mod modern;
pub(crate) mod needs;
mod seal;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_legacy;

#[allow(unused_imports)] // The runtime implements it on the connection.
pub(crate) use legacy::ClientRequester;
pub use seal::StateKey;
