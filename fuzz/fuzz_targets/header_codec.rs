//! Fuzz target `header_codec`: the body is `arbor_fuzz::header_codec` (see its documentation), shared
//! with the stable corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| arbor_fuzz::header_codec(data));
