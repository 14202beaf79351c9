//! Integration tests of `arbor-client` against our own server (`arbor-server`), over an
//! in-memory pair, a spawned process (stdio) and Streamable HTTP.

mod hosted_tasks_serve_arbors_server;
mod scripted;
mod support;
mod tasks_are_awaited_in_both_eras;
mod tasks_are_hosted_for_a_server_and_statuses_are_pushed;

// The handler runtime's own tests, on tokio's paused clock, with their own rig.
mod handler;

mod a_stdio_server_is_spawned_and_restarted;
mod calls_and_sessions_are_timed_by_the_conventions;
mod calls_are_typed_in_both_eras;
mod cancelling_a_call_tells_the_server;
mod dpop_binds_tokens_and_follows_nonces;
mod era_detection_falls_back_on_any_error_or_silence;
mod every_call_is_accounted_for_against_a_hostile_server;
mod every_http_call_is_accounted_for_against_malformed_streams;
mod input_is_answered_by_the_handler_in_both_eras;
mod oauth_logs_in_to_a_real_authorization_server;
mod skills_are_loaded_and_verified_from_our_server;
mod skills_from_a_hostile_http_server_are_refused;
mod skills_from_a_hostile_server_are_refused;
mod streamable_http_serves_both_eras;
mod the_http_client_recovers_from_a_primed_stream_and_a_refused_probe;
mod timeouts_reset_on_progress_within_a_maximum;
mod typed_calls_notifications_and_watches;
