//! Fuzz target `elicitation_schema`: the body is `arbor_fuzz::elicitation_schema` (see its documentation), shared
//! with the stable corpus replay test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| arbor_fuzz::elicitation_schema(data));
