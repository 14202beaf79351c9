//! Integration tests for arbor-protocol: one binary, one module per behaviour.

mod arbitrary_bytes_never_panic_the_decoder;
mod arbitrary_messages_round_trip;
mod encoded_messages_match_schema;
mod eras_negotiate_as_the_spec_says;
mod errors_map_to_their_codes;
mod explicit_nulls_are_absent_unless_the_schema_allows_null;
mod official_examples_round_trip;
mod one_pass_frame_decoding_agrees_with_the_two_step_path;
mod results_are_read_by_the_pending_requests_type;
mod revision_builders;
mod spec_schemas;
mod strategies;
