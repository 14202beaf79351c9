//! Answering a JSON-RPC batch (2025-03-26) with one array.
//!
//! The members of a batch run like any other requests (each on its own task, answered at
//! once or by its report), but their responses are collected here instead of written, and
//! the array goes out when the last one is in. It is not a way to run a batch in order:
//! members are concurrent, and the array lists responses in completion order, which
//! JSON-RPC allows (responses are matched by id).
//!
//! Invariant: each member that expects a response reports exactly once (a frame, or `None`
//! when it was cancelled or stopped), so the array is written exactly once, or not at all
//! when no member answered.

use parking_lot::Mutex;

use super::output::{Kind, Output};

/// The responses of one batch, collected until the last member reports.
#[derive(Debug)]
pub(crate) struct BatchReply {
    output: Output,
    state: Mutex<(Vec<Vec<u8>>, usize)>,
}

impl BatchReply {
    /// A batch of which `expected` members will report.
    pub(crate) fn new(output: Output, expected: usize) -> BatchReply {
        BatchReply { output, state: Mutex::new((Vec::with_capacity(expected), expected)) }
    }

    /// One member's response, or `None` for a member that will never answer.
    pub(crate) fn report(&self, frame: Option<Vec<u8>>) {
        let mut state = self.state.lock();
        let (frames, outstanding) = &mut *state;
        if *outstanding == 0 {
            return;
        }
        frames.extend(frame);
        *outstanding -= 1;
        if *outstanding > 0 || frames.is_empty() {
            return;
        }
        let frames = std::mem::take(frames);
        drop(state);
        let _ = self.output.send_with(Kind::Response, |buf| {
            buf.push(b'[');
            for (i, frame) in frames.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                buf.extend_from_slice(frame);
            }
            buf.push(b']');
        });
    }
}
