//! Integration tests for arbor-bus: one binary, one module per behaviour. The local cases
//! need nothing; the Redis cases start their own `redis-server` on a free loopback port
//! (and fail, saying so, if it is not installed). Waiting is bounded everywhere: paused
//! clock for the local cases, a deadline per wait for the Redis ones.

mod support;

mod a_closed_bus_ends_every_subscription;
mod dropping_a_subscription_unsubscribes;
mod every_subscriber_of_a_topic_receives_each_message;
mod full_queues_follow_their_overflow_policy;
mod publishers_never_wait_for_slow_subscribers;
mod redis_nodes_deliver_to_each_other;
mod redis_restarts_are_reported_as_gaps;
mod topics_are_independent;
