//! Fuzz target `jsonrpc_frame`: the body is `arbor_fuzz::jsonrpc_frame` (see its documentation), shared
//! with the stable corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| arbor_fuzz::jsonrpc_frame(data));
