//! Fuzz target `request_state`: the body is `arbor_fuzz::request_state` (see its documentation), shared
//! with the stable corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| arbor_fuzz::request_state(data));
