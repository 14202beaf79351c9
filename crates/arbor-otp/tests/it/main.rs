//! Integration tests for arbor-otp: one binary, one module per behaviour, every timeout on
//! tokio's paused clock. The supervisor cases follow Erlang/OTP's `supervisor_SUITE`.

mod support;

mod children_can_be_administered_at_run_time;
mod dynamic_supervisors_start_anonymous_children_on_demand;
mod exceeding_restart_intensity_escalates_to_the_parent;
mod random_sequences_follow_the_otp_reference_model;
mod reporting_tasks_report_exactly_once;
mod restarts_and_escalations_are_counted_per_supervisor;
mod shutdown_stops_children_in_reverse_order_within_their_timeouts;
mod significant_children_trigger_auto_shutdown;
mod snapshots_describe_the_whole_tree;
mod start_errors_carry_their_cause;
mod supervisors_restart_children_by_restart_type_and_strategy;
mod task_supervisors_deliver_exactly_one_outcome;
