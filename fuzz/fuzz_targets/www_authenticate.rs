//! Fuzz target `www_authenticate`: the body is `arbor_fuzz::www_authenticate` (see its documentation), shared
//! with the stable corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| arbor_fuzz::www_authenticate(data));
