//! Integration tests of the transports, over in-memory pairs and real OS pipes.

mod frames_are_split_on_newlines;
mod oversized_lines_are_reported_and_skipped;
mod writes_are_batched_and_closed_cleanly;
