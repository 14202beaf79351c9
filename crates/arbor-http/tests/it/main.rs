//! Integration tests for arbor-http: one binary, one module per behaviour, real sockets on
//! 127.0.0.1:0 and a real HTTP client.

// Helpers are shared by the modules; not every one uses all of them.
#[allow(dead_code)]
mod support;

mod kit;

mod a_drain_answers_every_admitted_request_by_its_deadline;
mod a_tenant_policy_is_enforced_before_the_body;
mod auth_verifiers;
mod bad_requests_are_refused_with_the_spec_status;
mod connections_are_bounded_and_slow_bodies_cut;
mod every_legacy_request_is_accounted_for_under_peer_faults;
mod every_request_is_accounted_for_under_faults;
mod every_request_is_tied_to_a_verified_principal;
mod legacy_sessions_are_capped_per_peer_and_by_memory;
mod legacy_sessions_are_resumable_and_reaped;
mod legacy_tasks_ask_for_input_on_an_open_stream;
mod modern_requests_are_checked_and_scoped_to_their_exchange;
mod mounted_routers_check_hosts_and_shut_down_in_order;
mod oauth_against_a_real_authorization_server;
mod ordered_shutdown_answers_every_request_and_outwaits_a_slow_child;
mod the_observer_shows_the_live_tree_in_a_browser;
mod the_observer_snapshot_shows_the_tree_to_loopback_peers_only;
