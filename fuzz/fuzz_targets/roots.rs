//! Fuzz target `roots`: the body is `arbor_fuzz::roots` (see its documentation), shared
//! with the stable corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| arbor_fuzz::roots(data));
