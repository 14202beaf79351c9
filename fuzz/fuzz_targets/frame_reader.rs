//! Fuzz target `frame_reader`: the body is `arbor_fuzz::frame_reader` (see its documentation), shared
//! with the stable corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| arbor_fuzz::frame_reader(data));
