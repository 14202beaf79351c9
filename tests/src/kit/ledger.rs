//! The request ledger: every request a test sends and every outcome it receives, and the
//! accounting checked at the end.
//!
//! A request is keyed by its connection (a number the test chooses) and its JSON-RPC id;
//! a key may carry several requests when a test reuses an id on purpose, each with the
//! outcomes it may end in. At [`Ledger::finish`] every request must have exactly one
//! outcome: a [`Kind`] received, or, for a request whose cancel the server must have
//! accepted, none at all ("cancelled: no answer"), or none because its client went away
//! ("disconnected"). A frame whose id the server cannot read (not JSON, an id of the wrong
//! type) is recorded with the id `null`: the error that answers it carries no id, or a
//! `null` one, and is matched to it. The live counts ([`Live`]) taken after the run must be back to the
//! baseline taken before it. It is not a linearizability checker: it accounts for
//! answers, not for the order or content of results.
//!
//! Invariant: a violation is never dropped. Each one is kept as a line and
//! [`Ledger::finish`] fails with all of them.

use std::collections::HashMap;
use std::fmt;

use serde_json::Value;

/// The outcome of one request, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A `result`.
    Result,
    /// A typed refusal: -32000 with a `scope` (an overload bound, a rate limit).
    Refused,
    /// The deadline ended it: an error whose data carries `timeoutMs`.
    Timeout,
    /// Any other JSON-RPC error, by code.
    Error(i64),
}

impl Kind {
    /// The kind of a response message.
    pub fn of(response: &Value) -> Kind {
        let Some(error) = response.get("error") else { return Kind::Result };
        let code = error["code"].as_i64().unwrap_or(0);
        if code == -32000 && error["data"].get("scope").is_some() {
            Kind::Refused
        } else if error["data"].get("timeoutMs").is_some() {
            Kind::Timeout
        } else {
            Kind::Error(code)
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Result => f.write_str("result"),
            Kind::Refused => f.write_str("refused"),
            Kind::Timeout => f.write_str("timeout"),
            Kind::Error(code) => write!(f, "error {code}"),
        }
    }
}

/// Live things a server holds, counted before and after a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Live {
    pub actors: usize,
    pub tasks: usize,
    pub connections: usize,
    pub requests: usize,
    pub streams: usize,
}

impl Live {
    /// Counts the connections, in-flight requests and subscription streams of a server's
    /// observed tree (arbor-server's `ServerView` as JSON); actors and tasks come from the
    /// caller's gauge.
    pub fn from_view(view: &Value, actors: usize, tasks: usize) -> Live {
        fn count(node: &Value, kind: &str) -> usize {
            let here = usize::from(node["kind"] == kind);
            here + node["children"].as_array().map_or(0, |c| c.iter().map(|n| count(n, kind)).sum())
        }
        let root = &view["root"];
        Live {
            actors,
            tasks,
            connections: count(root, "connection"),
            requests: count(root, "request"),
            streams: count(root, "stream"),
        }
    }
}

/// How a cancel the client sent must end its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancel {
    /// The request was still running when the server read the cancel (the test made
    /// sure): it must never be answered.
    Accepted,
    /// The cancel raced the answer: one answer or none are both correct, two are not.
    Raced,
}

#[derive(Debug)]
struct Request {
    expect: Vec<Kind>,
    outcome: Option<Kind>,
    cancel: Option<Cancel>,
    abandoned: bool,
}

/// What was sent and received, and what went wrong.
#[derive(Debug)]
pub struct Ledger {
    name: String,
    requests: HashMap<(usize, String), Vec<Request>>,
    sent: usize,
    violations: Vec<String>,
}

/// The accounting of a finished run.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub requests: usize,
    pub outcomes: HashMap<Kind, usize>,
    pub cancelled_unanswered: usize,
    pub disconnected: usize,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut kinds: Vec<_> = self.outcomes.iter().collect();
        kinds.sort_by_key(|(k, _)| k.to_string());
        let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
        write!(
            f,
            "{} requests: {}, cancelled with no answer {}, disconnected {}",
            self.requests,
            kinds.join(", "),
            self.cancelled_unanswered,
            self.disconnected
        )
    }
}

impl Ledger {
    /// An empty ledger for the run `name`.
    pub fn new(name: impl Into<String>) -> Ledger {
        Ledger { name: name.into(), requests: HashMap::new(), sent: 0, violations: Vec::new() }
    }

    /// Records a request sent on `conn` with `id`, which must end in one of `expect`
    /// (any kind when empty).
    pub fn sent(&mut self, conn: usize, id: &Value, expect: &[Kind]) {
        self.sent += 1;
        let request = Request { expect: expect.to_vec(), outcome: None, cancel: None, abandoned: false };
        self.requests.entry((conn, id.to_string())).or_default().push(request);
    }

    /// Records a cancel sent for the unanswered request `id` on `conn` (the latest
    /// unanswered one with that id); a cancel for an id the ledger never saw sent, or whose
    /// requests are all answered, changes nothing, as on the server.
    pub fn cancelled(&mut self, conn: usize, id: &Value, how: Cancel) {
        let requests = self.requests.get_mut(&(conn, id.to_string()));
        if let Some(request) = requests.and_then(|r| r.iter_mut().rev().find(|r| r.outcome.is_none())) {
            request.cancel = Some(how);
        }
    }

    /// Records that the client of `conn` went away: its unanswered requests are owed no
    /// answer from then on.
    pub fn abandoned(&mut self, conn: usize) {
        for ((c, _), requests) in self.requests.iter_mut() {
            if *c == conn {
                for request in requests.iter_mut().filter(|r| r.outcome.is_none()) {
                    request.abandoned = true;
                }
            }
        }
    }

    /// Records a message received on `conn`; notifications and server requests are not
    /// outcomes and are ignored. Returns the outcome's kind. An error without an id (or
    /// with a `null` one) answers a request recorded with the id `null`.
    pub fn received(&mut self, conn: usize, message: &Value) -> Option<Kind> {
        if message.get("method").is_some() {
            return None;
        }
        let kind = Kind::of(message);
        let id = match message.get("id") {
            Some(id) => id,
            None if message.get("error").is_some() => &Value::Null,
            None => {
                self.violations.push(format!("conn {conn}: a result without an id: {message}"));
                return Some(kind);
            }
        };
        let Some(requests) = self.requests.get_mut(&(conn, id.to_string())) else {
            self.violations.push(format!("conn {conn}: an answer ({kind}) to id {id}, never sent: {message}"));
            return Some(kind);
        };
        let open = |r: &&mut Request| r.outcome.is_none();
        // With an id in use twice, the answer goes to the request that may end that way.
        let slot = match requests.iter_mut().filter(open).position(|r| r.expect.is_empty() || r.expect.contains(&kind))
        {
            Some(i) => requests.iter_mut().filter(open).nth(i),
            None => requests.iter_mut().find(|r| r.outcome.is_none()),
        };
        match slot {
            None => self.violations.push(format!("conn {conn}: a second answer ({kind}) to id {id}: {message}")),
            Some(request) => {
                if request.cancel == Some(Cancel::Accepted) {
                    self.violations.push(format!("conn {conn}: id {id} answered ({kind}) after an accepted cancel"));
                }
                if !request.expect.is_empty() && !request.expect.contains(&kind) {
                    self.violations
                        .push(format!("conn {conn}: id {id} ended {kind}, expected {:?}: {message}", request.expect));
                }
                request.outcome = Some(kind);
            }
        }
        Some(kind)
    }

    /// Requests on `conn` still owed an answer: unanswered, not cancelled, not abandoned.
    pub fn owed(&self, conn: usize) -> usize {
        self.requests
            .iter()
            .filter(|((c, _), _)| *c == conn)
            .flat_map(|(_, r)| r.iter())
            .filter(|r| r.outcome.is_none() && r.cancel.is_none() && !r.abandoned)
            .count()
    }

    /// Requests sent so far.
    pub fn len(&self) -> usize {
        self.sent
    }

    /// Whether nothing was sent.
    pub fn is_empty(&self) -> bool {
        self.sent == 0
    }

    /// Checks the accounting and the live counts against `baseline`, prints the one-line
    /// summary and returns it; fails with every violation found.
    pub fn finish(mut self, baseline: Live, after: Live) -> Summary {
        let mut summary = Summary { requests: self.sent, ..Summary::default() };
        for ((conn, id), requests) in &self.requests {
            for request in requests {
                match (request.outcome, request.cancel) {
                    (Some(kind), _) => *summary.outcomes.entry(kind).or_default() += 1,
                    (None, Some(_)) => summary.cancelled_unanswered += 1,
                    (None, None) if request.abandoned => summary.disconnected += 1,
                    (None, None) => self.violations.push(format!("conn {conn}: id {id} never answered")),
                }
            }
        }
        if after != baseline {
            self.violations.push(format!("live counts not back to baseline: {after:?}, baseline {baseline:?}"));
        }
        println!("[kit] {}: {summary}", self.name);
        assert!(
            self.violations.is_empty(),
            "{}: {} violations:\n{}",
            self.name,
            self.violations.len(),
            self.violations.join("\n")
        );
        summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(id: i64) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    }

    #[test]
    fn a_balanced_run_passes_and_counts_each_kind() {
        let mut ledger = Ledger::new("balanced");
        ledger.sent(0, &json!(1), &[Kind::Result]);
        ledger.sent(0, &json!(2), &[Kind::Timeout]);
        ledger.sent(0, &json!(3), &[]);
        ledger.sent(1, &json!(1), &[Kind::Result]);
        ledger.cancelled(0, &json!(3), Cancel::Accepted);
        assert_eq!(ledger.owed(0), 2);
        ledger.received(0, &answer(1));
        ledger.received(0, &json!({"id": 2, "error": {"code": -32603, "message": "t", "data": {"timeoutMs": 5}}}));
        ledger.received(0, &json!({"method": "notifications/progress"}));
        ledger.abandoned(1);
        let summary = ledger.finish(Live::default(), Live::default());
        assert_eq!((summary.requests, summary.cancelled_unanswered, summary.disconnected), (4, 1, 1));
        assert_eq!(summary.outcomes[&Kind::Timeout], 1);
    }

    fn violations(build: impl FnOnce(&mut Ledger)) -> String {
        let mut ledger = Ledger::new("faulty");
        build(&mut ledger);
        let failed =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ledger.finish(Live::default(), Live::default())));
        let panic = failed.expect_err("the ledger must fail");
        panic.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    #[test]
    fn every_broken_rule_is_reported() {
        let missing = violations(|l| l.sent(0, &json!(1), &[]));
        assert!(missing.contains("never answered"), "{missing}");
        let twice = violations(|l| {
            l.sent(0, &json!(1), &[]);
            l.received(0, &answer(1));
            l.received(0, &answer(1));
        });
        assert!(twice.contains("second answer"), "{twice}");
        let after_cancel = violations(|l| {
            l.sent(0, &json!(1), &[]);
            l.cancelled(0, &json!(1), Cancel::Accepted);
            l.received(0, &answer(1));
        });
        assert!(after_cancel.contains("after an accepted cancel"), "{after_cancel}");
        let wrong = violations(|l| {
            l.sent(0, &json!(1), &[Kind::Refused]);
            l.received(0, &answer(1));
        });
        assert!(wrong.contains("expected"), "{wrong}");
        let stranger = violations(|l| {
            l.received(0, &answer(9));
        });
        assert!(stranger.contains("never sent"), "{stranger}");
        let mut leaked = Ledger::new("leak");
        leaked.sent(0, &json!(1), &[]);
        leaked.received(0, &answer(1));
        let after = Live { tasks: 1, ..Live::default() };
        let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| leaked.finish(Live::default(), after)));
        assert!(failed.is_err(), "a leaked task fails the run");
    }

    #[test]
    fn a_cancel_goes_to_the_unanswered_request_of_a_reused_id() {
        let mut ledger = Ledger::new("dup cancel");
        ledger.sent(0, &json!(5), &[]);
        ledger.sent(0, &json!(5), &[Kind::Error(-32600)]);
        ledger.received(0, &json!({"id": 5, "error": {"code": -32600, "message": "dup"}}));
        ledger.cancelled(0, &json!(5), Cancel::Accepted);
        assert_eq!(ledger.owed(0), 0, "the first, still running, is the one cancelled");
        let summary = ledger.finish(Live::default(), Live::default());
        assert_eq!(summary.cancelled_unanswered, 1);
    }

    #[test]
    fn an_error_without_an_id_answers_a_request_whose_id_was_unreadable() {
        let mut ledger = Ledger::new("anonymous");
        ledger.sent(0, &Value::Null, &[Kind::Error(-32700)]);
        ledger.sent(0, &Value::Null, &[Kind::Error(-32600)]);
        ledger.received(0, &json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "bad"}}));
        ledger.received(0, &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "bad"}}));
        let summary = ledger.finish(Live::default(), Live::default());
        assert_eq!(summary.outcomes.values().sum::<usize>(), 2);
        let extra = violations(|l| {
            l.received(0, &json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "bad"}}));
        });
        assert!(extra.contains("never sent"), "{extra}");
    }

    #[test]
    fn a_reused_id_routes_each_answer_to_the_request_that_may_end_so() {
        let mut ledger = Ledger::new("dup");
        ledger.sent(0, &json!(5), &[Kind::Timeout]);
        ledger.sent(0, &json!(5), &[Kind::Error(-32600)]);
        ledger.received(0, &json!({"id": 5, "error": {"code": -32600, "message": "dup"}}));
        ledger.received(0, &json!({"id": 5, "error": {"code": -32603, "message": "t", "data": {"timeoutMs": 1}}}));
        let summary = ledger.finish(Live::default(), Live::default());
        assert_eq!(summary.outcomes.values().sum::<usize>(), 2);
    }
}
