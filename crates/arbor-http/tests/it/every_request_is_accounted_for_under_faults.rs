//! Handler faults, hung-up clients (mid-request and mid-stream) and overload over a real
//! loopback socket, a thousand requests and
//! more per scenario, each accounted for by the kit's ledger.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use arbor_http::HttpConfig;
use arbor_server::ServerConfig;
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::json;
use tests::kit::ledger::{Kind, Ledger};
use tests::kit::plan::{Fault, FaultPlan};
use tests::kit::Seed;

use crate::kit::{call, call_with, legacy, live, served, settle, RELEASED};
use crate::support::Served;
use crate::support::SseReader;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_faults_over_http_are_answered_once_each() {
    let name = "handler faults over HTTP";
    let seed = Seed::for_test(name);
    let served =
        served(ServerConfig::default().default_deadline(Duration::from_millis(300)), HttpConfig::default()).await;
    let baseline = live(&served).await;
    let plan = FaultPlan::new()
        .with(Fault::Panic, 2)
        .with(Fault::Error, 2)
        .with(Fault::Hang, 1)
        .with(Fault::Delay { ms: 10 }, 2)
        .with(Fault::Busy { ms: 1 }, 1)
        .with(Fault::None, 2);
    let mut rng = seed.rng(0);
    let faults: Vec<Fault> = (0..1200).map(|_| plan.pick(&mut rng)).collect();
    let ledger = Arc::new(Mutex::new(Ledger::new(name)));
    let served_ref = &served;
    let calls = futures::stream::iter(faults.into_iter().enumerate().map(|(n, fault)| {
        let ledger = ledger.clone();
        async move {
            let id = 1000 + n as i64;
            ledger.lock().sent(0, &json!(id), &[fault.expect()]);
            let answer = call(served_ref, id, fault).await;
            ledger.lock().received(0, &answer);
        }
    }));
    calls.buffer_unordered(64).collect::<Vec<()>>().await;
    let after = settle(&served, baseline).await;
    let summary = Arc::try_unwrap(ledger).expect("the calls are done").into_inner().finish(baseline, after);
    for kind in [Kind::Result, Kind::Timeout, Kind::Error(-32603), Kind::Error(-32602)] {
        assert!(summary.outcomes.get(&kind).is_some_and(|n| *n > 0), "no {kind}: {summary}");
    }
    served.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_hang_up_mid_request_leave_nothing_behind_over_http() {
    let name = "client hang-ups over HTTP";
    let seed = Seed::for_test(name);
    // Long enough that a request the server failed to stop would still be counted when
    // the counts are compared: only the hang-up can end it in time.
    let served = served(ServerConfig::default().default_deadline(Duration::from_secs(60)), HttpConfig::default()).await;
    let baseline = live(&served).await;
    let mut rng = seed.rng(0);
    let plan = FaultPlan::new().with(Fault::Hang, 1).with(Fault::Delay { ms: 20 }, 1).with(Fault::None, 1);
    // Each call is its own connection in the ledger, so a hang-up abandons that call only.
    let calls: Vec<(Fault, Duration)> =
        (0..1000).map(|_| (plan.pick(&mut rng), Duration::from_millis(rng.u64(0..30)))).collect();
    let ledger = Arc::new(Mutex::new(Ledger::new(name)));
    let served_ref = &served;
    let run = futures::stream::iter(calls.into_iter().enumerate().map(|(n, (fault, cut))| {
        let ledger = ledger.clone();
        async move {
            let id = json!(1000 + n);
            // A hang ends only by the hang-up; the others may be answered before it.
            let expect = if fault == Fault::Hang { vec![] } else { vec![Kind::Result] };
            ledger.lock().sent(n, &id, &expect);
            // The cut point is drawn in time: dropping the POST closes its connection.
            match tokio::time::timeout(cut, call(served_ref, 1000 + n as i64, fault)).await {
                Ok(answer) => {
                    ledger.lock().received(n, &answer);
                }
                Err(_) => ledger.lock().abandoned(n),
            }
        }
    }));
    run.buffer_unordered(64).collect::<Vec<()>>().await;
    let after = settle(&served, baseline).await;
    let summary = Arc::try_unwrap(ledger).expect("the calls are done").into_inner().finish(baseline, after);
    assert!(summary.disconnected > 0, "{summary}");
    served.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_at_ten_times_a_requesters_bound_is_refused_with_a_type_over_http() {
    let name = "overload at 10x the requester bound over HTTP";
    let seed = Seed::for_test(name);
    // Every POST comes from 127.0.0.1, one requester, whose bound is 25: of 250 calls that
    // never end sent at once, 25 run until the deadline and the rest are refused at once.
    // The deadline is far longer than sending a round takes, so no slot frees mid-round.
    let config = ServerConfig::default().max_in_flight_per_requester(25).default_deadline(Duration::from_secs(1));
    let served = served(config, HttpConfig::default()).await;
    let baseline = live(&served).await;
    let ledger = Arc::new(Mutex::new(Ledger::new(name)));
    let served_ref = &served;
    let plan = FaultPlan::new().with(Fault::Hang, 1);
    let mut rng = seed.rng(0);
    for round in 0..4 {
        let calls = (0..250).map(|n| {
            let (ledger, fault) = (ledger.clone(), plan.pick(&mut rng));
            async move {
                let id = 1000 + round * 250 + n;
                ledger.lock().sent(0, &json!(id), &[Kind::Timeout, Kind::Refused]);
                let answer = call(served_ref, id, fault).await;
                ledger.lock().received(0, &answer);
            }
        });
        futures::future::join_all(calls).await;
    }
    let after = settle(&served, baseline).await;
    let summary = Arc::try_unwrap(ledger).expect("the calls are done").into_inner().finish(baseline, after);
    assert_eq!(summary.outcomes.get(&Kind::Timeout), Some(&100), "exactly the bound ran each round: {summary}");
    assert_eq!(summary.outcomes.get(&Kind::Refused), Some(&900), "{summary}");
    served.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_answers_cut_after_a_random_event_leave_nothing_behind() {
    let name = "SSE answers cut mid-stream over HTTP";
    let seed = Seed::for_test(name);
    let served = served(ServerConfig::default(), HttpConfig::default()).await;
    let baseline = live(&served).await;
    let mut rng = seed.rng(0);
    // `progress` sends two progress notes, waits 20 ms and answers: its answer is an SSE
    // stream of three events. A call reads `keep` of them (3: all) and hangs up.
    let keeps: Vec<usize> = (0..1000).map(|_| rng.usize(0..=3)).collect();
    let ledger = Arc::new(Mutex::new(Ledger::new(name)));
    let served_ref = &served;
    let run = futures::stream::iter(keeps.into_iter().enumerate().map(|(n, keep)| {
        let ledger = ledger.clone();
        async move {
            let id = 1000 + n as i64;
            ledger.lock().sent(n, &json!(id), &[Kind::Result]);
            let params = json!({"name": "progress", "_meta": {"progressToken": id}});
            let response = served_ref.modern(id, "tools/call", params, &[]).send().await.expect("answered");
            let mut events = SseReader::new(response);
            for _ in 0..keep {
                let message = events.next_data().await.json();
                ledger.lock().received(n, &message);
            }
            if keep < 3 {
                ledger.lock().abandoned(n);
            }
        }
    }));
    run.buffer_unordered(64).collect::<Vec<()>>().await;
    let after = settle(&served, baseline).await;
    let summary = Arc::try_unwrap(ledger).expect("the calls are done").into_inner().finish(baseline, after);
    assert!(summary.disconnected > 0 && summary.outcomes.get(&Kind::Result).is_some_and(|n| *n > 0), "{summary}");
    served.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_loops_in_blocking_sections_leave_a_legacy_session_responsive_over_http() {
    let name = "blocking busy loops over HTTP";
    let _seed = Seed::for_test(name);
    let served = served(ServerConfig::default(), HttpConfig::default()).await;
    let session = served.initialize("2025-11-25", json!({})).await;
    let ready = json!({"jsonrpc": "2.0", "id": "ready", "method": "ping"});
    assert!(legacy(&served, &session, &ready).await.is_some());
    let baseline = live(&served).await;
    let ledger = Mutex::new(Ledger::new(name));
    // Each round: two calls spin in blocking sections, as many as the runtime has workers,
    // until the test releases them; while they are known to run, 100 pings on a legacy
    // session, 8 at a time. A spin on a worker would hold the pings until released, which
    // happens only after every ping is answered: the pings would never end (the bound
    // below fails the test). No clock decides: the spinners end when released.
    for round in 0..10u64 {
        let ids = [round * 2, round * 2 + 1].map(|k| 1000 + k as i64);
        let spinning = ids.map(|id| {
            ledger.lock().sent(0, &json!(id), &[Kind::Result]);
            let args = json!({"fault": "busy", "ms": 0, "until": round + 1});
            call_with(&served, id, args)
        });
        let spun = async {
            let answers = futures::future::join_all(spinning).await;
            for answer in &answers {
                ledger.lock().received(0, answer);
            }
        };
        let pings = async {
            until_in_flight(&served, baseline.requests + 2).await;
            let pings = (0..100).map(|n| {
                let id = json!(format!("probe-{round}-{n}"));
                ledger.lock().sent(1, &id, &[Kind::Result]);
                let (served, session, ledger) = (&served, session.as_str(), &ledger);
                async move {
                    let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
                    let answer = legacy(served, session, &ping).await.expect("a pong");
                    ledger.lock().received(1, &answer);
                }
            });
            let all = futures::stream::iter(pings).buffer_unordered(8).collect::<Vec<()>>();
            // A liveness bound, not a timing: held pings never end.
            tokio::time::timeout(Duration::from_secs(30), all)
                .await
                .unwrap_or_else(|_| panic!("round {round}: the spinning calls held the pings"));
            assert_eq!(ledger.lock().owed(0), 2, "round {round}: a spinning call ended before its release");
            RELEASED.store(round + 1, Ordering::Release);
        };
        tokio::join!(spun, pings);
    }
    let after = settle(&served, baseline).await;
    let summary = ledger.into_inner().finish(baseline, after);
    assert!(summary.requests >= 1000, "{summary}");
    served.finish().await;
}

/// Waits (bounded) until `n` requests are in flight on the served server.
async fn until_in_flight(served: &Served, n: usize) {
    for _ in 0..500 {
        if live(served).await.requests >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("{n} requests in flight in time");
}
