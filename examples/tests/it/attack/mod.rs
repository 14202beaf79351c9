//! The attack on the running example servers, kept as a regression suite (issue 11): each
//! module is one defect an attacker found or one case that already held, driven against a
//! real `demo_server` or `conformance_server` process over raw loopback sockets or real
//! pipes. Every loop is bounded in count and every wait in time.

mod raw;

mod known_cases;
mod one_requester_cannot_starve_the_others;
mod slow_bodies_and_connection_floods;
mod stdio_eof_drains_requests_in_flight;
mod tasks_belong_to_their_requester;
mod uri_templates_match_in_linear_time;
mod weak_spots;
