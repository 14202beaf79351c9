//! The observer's memory of the last minutes: one sample of every tenant's load per
//! interval, in a ring of fixed size, and the requests per second between samples.
//!
//! Not a metrics store: it lives in memory, for the chart of one page, and forgets what
//! is older than the ring. Invariant: it never holds more than its capacity of samples.

use std::collections::VecDeque;
use std::time::SystemTime;

use arbor_server::observe::TenantLoad;
use serde_json::{json, Map, Value};
use tokio::time::Instant;

struct Sample {
    at: Instant,
    wall_ms: u64,
    loads: Vec<TenantLoad>,
}

/// The last samples, oldest first.
pub(super) struct History {
    capacity: usize,
    samples: VecDeque<Sample>,
}

fn refused(load: &TenantLoad) -> u64 {
    load.refused.overloaded + load.refused.rate_limited + load.refused.unauthorized
}

impl History {
    pub(super) fn new(capacity: usize) -> History {
        History { capacity, samples: VecDeque::with_capacity(capacity.min(1024)) }
    }

    pub(super) fn push(&mut self, loads: Vec<TenantLoad>) {
        if self.samples.len() == self.capacity {
            self.samples.pop_front();
        }
        let wall_ms = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        self.samples.push_back(Sample { at: Instant::now(), wall_ms, loads });
    }

    /// The loads with `requests_per_s` and `refused_per_s` since the latest sample (the
    /// last two samples' rate when the latest is too recent to tell).
    pub(super) fn with_rates(&self, loads: &[TenantLoad]) -> Vec<Value> {
        let now = Instant::now();
        loads
            .iter()
            .map(|load| {
                let mut value = serde_json::to_value(load).unwrap_or(Value::Null);
                let earlier = self.samples.iter().rev().find(|s| now.duration_since(s.at).as_millis() >= 200);
                let (rps, refused_ps) = earlier
                    .and_then(|s| Some((s, s.loads.iter().find(|l| l.tenant == load.tenant)?)))
                    .map_or((0.0, 0.0), |(s, before)| {
                        let elapsed = now.duration_since(s.at);
                        let secs = elapsed.as_secs_f64().max(1e-3);
                        (
                            load.requests_per_s(before, elapsed),
                            refused(load).saturating_sub(refused(before)) as f64 / secs,
                        )
                    });
                value["requests_per_s"] = json!(round(rps));
                value["refused_per_s"] = json!(round(refused_ps));
                value
            })
            .collect()
    }

    /// Every sample as `{t_ms, tenants: {name: {requests_per_s, in_flight, refused_per_s}}}`,
    /// rates computed from the sample before.
    pub(super) fn to_json(&self) -> Value {
        let mut out = Vec::with_capacity(self.samples.len());
        let mut before: Option<&Sample> = None;
        for sample in &self.samples {
            let mut tenants = Map::new();
            for load in &sample.loads {
                let prior = before.and_then(|b| Some((b, b.loads.iter().find(|l| l.tenant == load.tenant)?)));
                let (rps, refused_ps) = prior.map_or((0.0, 0.0), |(b, prev)| {
                    let elapsed = sample.at.duration_since(b.at);
                    let secs = elapsed.as_secs_f64().max(1e-3);
                    (load.requests_per_s(prev, elapsed), refused(load).saturating_sub(refused(prev)) as f64 / secs)
                });
                tenants.insert(
                    load.tenant.clone(),
                    json!({"requests_per_s": round(rps), "in_flight": load.in_flight, "refused_per_s": round(refused_ps)}),
                );
            }
            out.push(json!({"t_ms": sample.wall_ms, "tenants": tenants}));
            before = Some(sample);
        }
        Value::Array(out)
    }
}

fn round(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}
