//! Fuzz target `oversized_id`: the body is `arbor_fuzz::oversized_id` (see its documentation), shared
//! with the stable corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| arbor_fuzz::oversized_id(data));
