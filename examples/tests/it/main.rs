//! Integration tests for the example servers: each one run as its own process and spoken to
//! over real stdio pipes with raw JSON lines, or over Streamable HTTP on a port it chose,
//! one module per behaviour.

mod attack;
#[cfg(unix)]
mod cluster;
mod http;
mod prometheus;
mod support;

mod a_confirmation_is_bound_to_its_path;
#[cfg(unix)]
mod a_key_rotation_mid_run_refuses_no_request_state;
#[cfg(unix)]
mod a_node_killed_mid_task_fails_its_tasks_within_the_lease;
#[cfg(unix)]
mod a_redis_restart_mid_run_gives_clear_errors_and_service_resumes;
mod conformance_server_answers_in_both_eras;
#[cfg(unix)]
mod conformance_server_closes_a_slow_post_stream_for_polling;
mod demo_server_counts_with_progress_and_stops_when_cancelled;
#[cfg(unix)]
mod demo_server_drains_on_sigterm_and_answers_every_call_once;
mod demo_server_metrics_count_every_call_under_load;
#[cfg(unix)]
mod demo_server_serves_both_eras_over_http_on_the_port_it_prints;
#[cfg(unix)]
mod demo_server_serves_each_tenant_its_limits_and_tools;
mod demo_server_serves_its_skills_over_http_in_both_eras;
#[cfg(unix)]
mod demo_server_serves_the_observer_beside_mcp;
#[cfg(unix)]
mod demo_servers_behind_a_load_balancer_share_tasks_and_keys;
mod demo_servers_share_a_live_feed_through_redis;
mod demo_servers_share_legacy_sessions_through_redis;
mod every_conformance_answer_matches_its_revision;
mod readiness_follows_a_redis_that_dies_and_comes_back;
mod supervision_tree_can_be_watched_in_the_observer;
#[cfg(unix)]
mod the_facade_examples_run_end_to_end;
