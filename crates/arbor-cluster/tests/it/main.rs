//! The Redis task store against a real throwaway `redis-server` (`tests::redis`): the
//! store contract of the in-memory store, two servers sharing it, a node dying mid-task,
//! and a Redis outage. Leases are short (300 ms) so each test takes well under a few
//! seconds; assertions count outcomes, never durations.

mod a_forwarded_signal_reaches_its_node_once_and_survives_a_redis_restart;
mod a_keyring_on_redis_rotates_in_stages_that_wait_for_every_node;
mod a_redis_outage_is_unavailable_promptly_and_heals_without_a_rebuild;
mod a_task_of_a_stopped_node_fails_once_its_lease_expires;
mod input_and_cancel_reach_the_node_running_the_task;
mod support;
mod the_session_store_shares_records_events_and_answers;
mod the_store_keeps_the_memory_stores_contract;
mod two_servers_on_one_redis_serve_each_others_tasks_to_their_owner_only;
