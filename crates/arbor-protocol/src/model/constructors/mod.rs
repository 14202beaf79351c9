//! Constructors for the model types a server or client author builds by hand.
//!
//! Every model struct carries an `extra` map (unknown members kept for the round trip),
//! so a struct literal has to spell `extra: Default::default()`; and once the types are
//! `#[non_exhaustive]`, a literal outside this crate will not compile at all. These
//! constructors take the required members, and the `with_*` methods set one optional
//! member each, so `Resource::new("file:///a.txt", "a").with_mime_type("text/plain")`
//! is the whole story. They live here, apart from the type definitions, so that the
//! definitions stay a readable transcription of the schema: `content` for content
//! blocks, `sampling` for sampling messages and params, `server` for what a server
//! lists and answers, `client` for what a client asks and answers, `forms` for
//! elicitation and the input requests, `lifecycle` for capabilities and the shared
//! params and results, `tasks` for tasks, `utilities` for completion, logging,
//! progress, cancellation and subscriptions. A member without a setter can still be
//! assigned on a value (`result.ttl_ms = ttl;`), which suits the members that are set
//! only sometimes.
//!
//! This module does not validate: it neither checks URIs nor base64 (see the type
//! modules). Invariant: a constructor sets its arguments and nothing else: every other
//! member is `None` (absent on the wire) and `extra` is empty (except where the
//! argument is a whole value taken over, as in `from_task`), so what it builds is
//! valid for every revision that has the type.

use base64::Engine as _;

/// `with_*` setters for optional members, one per `field: Type` pair.
macro_rules! setters {
    ($ty:ty { $( $(#[$doc:meta])* $method:ident => $field:ident : $arg:ty ),* $(,)? }) => {
        impl $ty {
            $(
                $(#[$doc])*
                #[must_use]
                pub fn $method(mut self, value: impl Into<$arg>) -> Self {
                    self.$field = Some(value.into());
                    self
                }
            )*
        }
    };
}

/// `with_*` setters that take the member's own type, for `u64` members: an integer
/// literal (an `i32` by default) does not convert into a `u64`, so `with_size(12)`
/// only compiles when the argument type is exact.
macro_rules! exact_setters {
    ($ty:ty { $( $(#[$doc:meta])* $method:ident => $field:ident : $arg:ty ),* $(,)? }) => {
        impl $ty {
            $(
                $(#[$doc])*
                #[must_use]
                pub fn $method(mut self, value: $arg) -> Self {
                    self.$field = Some(value);
                    self
                }
            )*
        }
    };
}

/// Standard base64, as `data` and `blob` members carry it.
fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

mod client;
mod content;
mod forms;
mod lifecycle;
mod sampling;
mod server;
mod skills;
mod tasks;
mod utilities;
