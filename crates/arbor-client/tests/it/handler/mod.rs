//! The client handler's runtime tests (`arbor_client::handler`), on tokio's paused clock:
//! legacy server requests on supervised tasks (cap, timeout, panic, cancel, undeclared,
//! rate limit, idle sampling, deadline pause), modern `answer_inputs`, the notification
//! worker, and capability advertisement.

mod support;

mod capabilities;
mod inputs;
mod notifications;
mod requests;
