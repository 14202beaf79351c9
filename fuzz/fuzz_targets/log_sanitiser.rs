//! Fuzz target `log_sanitiser`: the body is `arbor_fuzz::log_sanitiser` (see its documentation), shared
//! with the stable corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| arbor_fuzz::log_sanitiser(data));
