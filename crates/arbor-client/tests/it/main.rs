//! Integration tests of `arbor-client` against our own server (`arbor-server`), over an
//! in-memory pair, a spawned process (stdio) and Streamable HTTP.

mod support;

mod calls_are_typed_in_both_eras;
mod era_detection_falls_back_on_any_error_or_silence;
mod input_is_answered_by_the_handler_in_both_eras;
