//! Fuzz target `x_mcp_header`: the body is `arbor_fuzz::x_mcp_header` (see its documentation), shared
//! with the stable corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| arbor_fuzz::x_mcp_header(data));
