//! Fuzz target `typed_request`: the body is `arbor_fuzz::typed_request` (see its documentation), shared
//! with the stable corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| arbor_fuzz::typed_request(data));
