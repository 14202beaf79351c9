//! Fuzz target `client_sse`: the body is `arbor_fuzz::client_sse` (see its documentation), shared
//! with the stable corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| arbor_fuzz::client_sse(data));
