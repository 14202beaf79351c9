//! Integration tests for arbor-server: one binary, one module per behaviour, raw JSON at the boundary.

mod schema;
mod support;

mod a_closed_connection_stops_its_requests;
mod an_endpoint_routes_what_each_submission_causes;
mod bad_input_gets_the_spec_error;
mod batches_are_answered_with_one_array;
mod cancelled_request_stops_its_task;
mod closed_endpoints_give_their_memory_back;
mod connection_survives_handler_panic;
mod deadline_stops_a_hung_handler;
mod end_of_input_drains_requests_in_flight;
mod every_message_matches_the_negotiated_schema;
mod handshake_era_negotiates_once;
mod input_required_works_in_both_eras;
mod old_revisions_get_only_what_they_define;
mod overload_is_refused_at_once;
mod per_request_era_reads_terms_from_meta;
mod progress_and_logs_reach_the_client;
mod router_is_served_in_both_eras;
#[cfg(unix)]
mod stdio_exits_cleanly_on_eof;
mod subscriptions_stream_bus_events_in_both_eras;
mod tasks_outlive_their_request;
mod the_tree_is_root_tenant_connections_connection;
