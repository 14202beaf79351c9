//! The soak run's driver (`soak.rs` holds the server and the overview): the load, the
//! ledger, the Redis restarts and the memory samples. Not a client library: it speaks raw
//! 2025-11-25 JSON over reqwest. Invariant: every request it sends is entered in the ledger
//! exactly once, with the one outcome it got.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use super::{elapsed_min, next_id, request, rss_kib, Options};

/// Outcomes so far; a violation is a request without exactly one proper answer.
#[derive(Default)]
struct Ledger {
    sent: AtomicU64,
    results: AtomicU64,
    errors: AtomicU64,
    violations: AtomicU64,
    first_violations: Mutex<Vec<String>>,
}

impl Ledger {
    fn violation(&self, at_min: f64, what: String) {
        let what = format!("at {at_min:.2} min: {what}");
        self.violations.fetch_add(1, Ordering::Relaxed);
        let mut first = self.first_violations.lock();
        if first.len() < 20 {
            first.push(what);
        }
    }

    fn line(&self) -> String {
        format!(
            "sent {} results {} errors {} violations {}",
            self.sent.load(Ordering::Relaxed),
            self.results.load(Ordering::Relaxed),
            self.errors.load(Ordering::Relaxed),
            self.violations.load(Ordering::Relaxed)
        )
    }
}

struct Run {
    http: reqwest::Client,
    url: String,
    ledger: Ledger,
    permits: Semaphore,
    /// Spawned request tasks not yet finished: the end waits for all of them before it
    /// stops the server, so no request is cut by the driver's own kill.
    outstanding: AtomicU64,
    start: Instant,
}

/// Runs `work` on its own task, counted in `run.outstanding` until it ends.
fn spawn_counted(run: &Arc<Run>, work: impl std::future::Future<Output = ()> + Send + 'static) {
    struct Counted(Arc<Run>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.outstanding.fetch_sub(1, Ordering::AcqRel);
        }
    }
    run.outstanding.fetch_add(1, Ordering::AcqRel);
    let counted = Counted(run.clone());
    tokio::spawn(async move {
        let _counted = counted;
        work.await;
    });
}

impl Run {
    /// POSTs one legacy message and enters its outcome; the session id of an answer.
    async fn post(&self, session: Option<&str>, body: Value) -> Option<(Option<String>, Value)> {
        let expects_answer = body.get("id").is_some();
        let _permit = self.permits.acquire().await.ok()?;
        if expects_answer {
            self.ledger.sent.fetch_add(1, Ordering::Relaxed);
        }
        let mut req = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .json(&body);
        if let Some(session) = session {
            req = req.header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25");
        }
        let method = body["method"].as_str().unwrap_or_default().to_owned();
        let response = match req.send().await {
            Ok(response) => response,
            Err(e) => {
                let mut why = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(inner) = source {
                    why.push_str(&format!(": {inner}"));
                    source = inner.source();
                }
                self.ledger.violation(elapsed_min(self.start), format!("{method}: no answer: {why}"));
                return None;
            }
        };
        let status = response.status();
        let id = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        if !expects_answer {
            return (status.as_u16() == 202).then(|| (id, Value::Null));
        }
        let text = match response.text().await {
            Ok(text) => text,
            Err(e) => {
                self.ledger.violation(elapsed_min(self.start), format!("{method}: the body broke off: {e}"));
                return None;
            }
        };
        // An SSE answer: its last data line holding the response.
        let json = if text.starts_with('{') {
            serde_json::from_str::<Value>(&text).ok()
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter_map(|d| serde_json::from_str::<Value>(d).ok())
                .find(|m| m.get("id").is_some() && m.get("method").is_none())
        };
        match json {
            Some(ref v) if v.get("result").is_some() => self.ledger.results.fetch_add(1, Ordering::Relaxed),
            Some(ref v) if v.get("error").is_some() => self.ledger.errors.fetch_add(1, Ordering::Relaxed),
            _ => {
                self.ledger.violation(
                    elapsed_min(self.start),
                    format!("{method}: HTTP {status} without an answer: {}", &text[..text.len().min(200)]),
                );
                return None;
            }
        };
        if status.is_server_error() {
            self.ledger.violation(elapsed_min(self.start), format!("{method}: HTTP {status}"));
        }
        Some((id, json.unwrap_or_default()))
    }

    async fn open(&self) -> Option<String> {
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "soak", "version": "0"}});
        let (id, _) = self.post(None, request(next_id(), "initialize", params)).await?;
        let id = id?;
        self.post(Some(&id), json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        Some(id)
    }

    async fn call(&self, session: &str, roll: u64) {
        let params = if roll.is_multiple_of(2) {
            json!({"name": "echo", "arguments": {"message": format!("m{roll}")}})
        } else {
            json!({"name": "flaky", "arguments": {"roll": roll}})
        };
        self.post(Some(session), request(next_id(), "tools/call", params)).await;
    }

    async fn delete(&self, session: &str) {
        let _permit = self.permits.acquire().await;
        let sent =
            self.http.delete(&self.url).header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25");
        match sent.send().await {
            Ok(r) if r.status().as_u16() == 200 => {}
            Ok(r) => self.ledger.violation(elapsed_min(self.start), format!("DELETE: HTTP {}", r.status())),
            Err(e) => self.ledger.violation(elapsed_min(self.start), format!("DELETE: {e}")),
        }
    }
}

/// The least-squares slope of `(x, y)` points.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let (mx, my) = (points.iter().map(|p| p.0).sum::<f64>() / n, points.iter().map(|p| p.1).sum::<f64>() / n);
    let num: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let den: f64 = points.iter().map(|(x, _)| (x - mx) * (x - mx)).sum();
    if den == 0.0 {
        0.0
    } else {
        num / den
    }
}

pub async fn drive(o: Options) -> i32 {
    println!("soak: {o:?}");
    let mut redis = tests::redis::RedisServer::start();
    let dir = std::env::temp_dir().join(format!("arbor-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let port_file = dir.join("port");
    let exe = std::env::current_exe().expect("this binary");
    let mut server = std::process::Command::new(exe)
        .args(["--serve", "--redis", &redis.url(), "--port-file", port_file.to_str().unwrap()])
        .args(["--resources", &o.resources.to_string()])
        .env("RUST_LOG", "error")
        // The injected panics would print a backtrace each: the log keeps their messages.
        .env("RUST_BACKTRACE", "0")
        .stderr(std::fs::File::create(dir.join("server.stderr")).expect("a log file"))
        .spawn()
        .expect("the server");
    let mut port = None;
    for _ in 0..300 {
        if let Some(p) = std::fs::read_to_string(&port_file).ok().and_then(|p| p.trim().parse::<u16>().ok()) {
            port = Some(p);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let port = port.expect("the server printed its port");
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).pool_max_idle_per_host(512).build().unwrap();
    let run = Arc::new(Run {
        http,
        url: format!("http://127.0.0.1:{port}/mcp"),
        ledger: Ledger::default(),
        permits: Semaphore::new(256),
        outstanding: AtomicU64::new(0),
        start: Instant::now(),
    });
    let start = run.start;
    let end = start + Duration::from_secs(o.minutes * 60);

    // The held sessions and their subscriptions.
    let held_count = (o.subscriptions / o.resources.max(1)).max(1);
    let mut held = Vec::new();
    for _ in 0..held_count {
        let Some(id) = run.open().await else { continue };
        held.push(id);
    }
    let mut subscribing = tokio::task::JoinSet::new();
    for (i, session) in held.iter().enumerate() {
        let (run, session) = (run.clone(), session.clone());
        let resources = o.resources;
        subscribing.spawn(async move {
            for r in 0..resources {
                run.post(
                    Some(&session),
                    request(next_id(), "resources/subscribe", json!({"uri": format!("soak://r/{r}")})),
                )
                .await;
            }
            i
        });
        if subscribing.len() >= 64 {
            subscribing.join_next().await;
        }
    }
    while subscribing.join_next().await.is_some() {}
    println!(
        "soak: {} sessions hold {} subscriptions ({:.1} min); {}",
        held.len(),
        held.len() as u64 * o.resources,
        elapsed_min(start),
        run.ledger.line()
    );
    let held = Arc::new(held);

    // Calls at `rate` per second on the held sessions (each one touches its session).
    let load = {
        let (run, held) = (run.clone(), held.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            let per_tick = (o.rate / 100).max(1);
            let mut roll = o.seed;
            while Instant::now() < end {
                tick.tick().await;
                for _ in 0..per_tick {
                    roll = roll.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let (run, session) = (run.clone(), held[(roll >> 33) as usize % held.len()].clone());
                    let r = roll >> 40;
                    spawn_counted(&run.clone(), async move {
                        run.call(&session, r).await;
                    });
                }
            }
        })
    };
    // Sessions churned evenly over what is left of the run (opening the subscriptions took
    // part of it: paced over the whole run, the churn fell short of `--sessions`).
    let churn = {
        let run = run.clone();
        tokio::spawn(async move {
            let left = end.saturating_duration_since(Instant::now()).mul_f64(0.98);
            let every = (left / u32::try_from(o.sessions.max(1)).unwrap_or(u32::MAX)).max(Duration::from_micros(100));
            let mut tick = tokio::time::interval(every);
            let mut n = 0u64;
            while Instant::now() < end && n < o.sessions {
                tick.tick().await;
                n += 1;
                let run = run.clone();
                spawn_counted(&run.clone(), async move {
                    let Some(id) = run.open().await else { return };
                    for k in 0..3 {
                        run.call(&id, n * 3 + k).await;
                    }
                    run.delete(&id).await;
                });
            }
            n
        })
    };

    // Samples, Redis restarts, until the end.
    let mut samples = Vec::new();
    let mut next_sample = Instant::now();
    let mut next_restart = start + Duration::from_secs(o.redis_restart_secs);
    let pid = server.id();
    while Instant::now() < end {
        if Instant::now() >= next_sample {
            let rss = rss_kib(pid);
            samples.push((elapsed_min(start), rss as f64));
            println!("soak: {:6.1} min  RSS {rss:>8} KiB  {}", elapsed_min(start), run.ledger.line());
            next_sample += Duration::from_secs(o.sample_secs);
        }
        if Instant::now() >= next_restart {
            println!("soak: restarting Redis");
            redis.kill();
            tokio::time::sleep(Duration::from_secs(2)).await;
            redis.restart();
            next_restart += Duration::from_secs(o.redis_restart_secs);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = load.await;
    let churned = churn.await.unwrap_or(0);
    // Let every request task end (each request is bounded by the client's 30 s, a churned
    // session makes five): the server is stopped only after, so none is cut by the kill.
    let waited = Instant::now();
    while run.outstanding.load(Ordering::Acquire) > 0 && waited.elapsed() < Duration::from_secs(180) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let left = run.outstanding.load(Ordering::Acquire);
    if left > 0 {
        run.ledger.violation(elapsed_min(start), format!("{left} request tasks still running 180 s after the end"));
    }
    samples.push((elapsed_min(start), rss_kib(pid) as f64));
    let _ = server.kill();
    let _ = server.wait();
    println!("soak: the server's log is {}", dir.join("server.stderr").display());

    let warm = &samples[samples.len() / 5..];
    let per_min = slope(warm);
    let mean = warm.iter().map(|p| p.1).sum::<f64>() / warm.len().max(1) as f64;
    let growth = per_min * o.minutes as f64 / mean.max(1.0);
    println!("soak: {churned} sessions churned; {}", run.ledger.line());
    println!(
        "soak: RSS slope after warm-up {per_min:+.1} KiB/min over {} samples (mean {mean:.0} KiB): {:+.2}% over the run",
        warm.len(),
        growth * 100.0
    );
    for v in run.ledger.first_violations.lock().iter() {
        println!("soak: violation: {v}");
    }
    let violations = run.ledger.violations.load(Ordering::Relaxed);
    if churned < o.sessions {
        println!("soak: only {churned} of the {} sessions asked for were churned", o.sessions);
    }
    if violations > 0 || growth > 0.10 || churned < o.sessions {
        println!("soak: FAIL");
        1
    } else {
        println!("soak: PASS");
        0
    }
}
