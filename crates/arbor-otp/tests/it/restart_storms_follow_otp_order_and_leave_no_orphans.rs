//! Restart storms: a three-level tree (one_for_one root, a one_for_all and a
//! rest_for_one subtree, a one_for_one leaf under the latter) whose workers are crashed
//! over a thousand times by seed, each crash checked against the OTP reference model of
//! `support::storm`: which workers stop (reverse start order) and start again (start
//! order), which supervisors give up, and that afterwards exactly the spec's actors live,
//! no earlier incarnation among them.
//!
//! Within the intensity the storm hits every supervisor with bursts of exactly its
//! `max_restarts` per period (the paused clock moves only when the next crash would be one
//! too many) and nothing ever escalates. Past it, the rest_for_one subtree is crashed as
//! fast as the clock allows: its leaf gives up, then itself, and the root restarts it,
//! while the one_for_all sibling, crashed within its own intensity, keeps running; at the
//! end the root itself is pushed over and the whole tree stops in reverse order.

use std::time::Duration;

use arbor_otp::Strategy;
use tests::kit::{Rng, Seed};

use crate::support::storm::{Crash, Shape, Storm};
use crate::support::{assert_no_leaks, settle};

/// Crashes per storm.
const CRASHES: usize = 1000;
const PERIOD: Duration = Duration::from_secs(1);

fn tree() -> Shape {
    use Shape::Worker as W;
    Shape::sup(
        "storm",
        Strategy::OneForOne,
        3,
        PERIOD,
        vec![
            W("r0"),
            Shape::sup("all", Strategy::OneForAll, 3, PERIOD, vec![W("a0"), W("a1"), W("a2")]),
            Shape::sup(
                "rest",
                Strategy::RestForOne,
                3,
                PERIOD,
                vec![W("s0"), W("s1"), Shape::sup("leaf", Strategy::OneForOne, 2, PERIOD, vec![W("o0"), W("o1")])],
            ),
        ],
    )
}

fn how(rng: &mut Rng) -> Crash {
    if rng.bool() {
        Crash::Panic
    } else {
        Crash::Fail
    }
}

#[tokio::test(start_paused = true)]
async fn a_storm_within_the_intensity_restarts_in_otp_order_and_never_escalates() {
    let seed = Seed::for_test("restart storm within the intensity");
    let mut rng = seed.rng(0);
    let mut storm = Storm::start(&tree()).await;
    let workers = storm.model.workers();
    let mut step = 0;
    while storm.tally.crashes < CRASHES {
        let path = &workers[rng.usize(..workers.len())];
        // One restart too many for the supervisor in charge: let the window move on.
        if !storm.predict(path).gave_up.is_empty() {
            storm.advance(Duration::from_millis(rng.u64(20..300))).await;
            continue;
        }
        let outcome = storm.crash(step, path, how(&mut rng)).await;
        assert!(outcome.gave_up.is_empty(), "step {step}: nothing escalates within the intensity");
        step += 1;
        if step % 100 == 0 {
            storm.check_alive().await;
        }
    }
    storm.check_alive().await;
    let tally = &storm.tally;
    assert!(tally.gave_up.is_empty(), "{tally}");
    assert_eq!(tally.restarts.values().sum::<u64>(), CRASHES as u64, "one restart per crash: {tally}");
    for sup in ["storm", "all", "rest", "leaf"] {
        assert!(tally.restarts.get(sup).is_some_and(|n| *n > 0), "{sup} restarted children: {tally}");
    }
    // The storm ran at the intensity's edge: on average, close to max_restarts per period.
    let seconds = storm.now_ms() as f64 / 1000.0;
    println!(
        "[kit] restart storm within the intensity: {tally}, {} incarnations, {seconds:.1} s of paused clock",
        storm.incarnations()
    );
    let shutdown = storm.root.shutdown().await;
    assert_eq!(shutdown, arbor_otp::ExitReason::Shutdown(None));
    assert_no_leaks(&storm.gauge).await;
}

#[tokio::test(start_paused = true)]
async fn a_storm_past_the_intensity_escalates_level_by_level_and_leaves_no_orphans() {
    let seed = Seed::for_test("restart storm past the intensity");
    let mut rng = seed.rng(0);
    let mut storm = Storm::start(&tree()).await;
    let workers = storm.model.workers();
    let failing: Vec<_> = workers.iter().filter(|p| p[0] == "rest").cloned().collect();
    let sibling: Vec<_> = workers.iter().filter(|p| p[0] == "all").cloned().collect();
    let r0 = storm.root.which_children().await.unwrap()[0].actor.clone().expect("r0 runs");
    let all_before = storm.root.which_children().await.unwrap()[1].actor.clone().expect("all runs");
    let mut step = 0;
    while storm.tally.crashes < CRASHES {
        // Mostly the failing subtree, as fast as it goes; now and then the sibling, but
        // only within its own intensity.
        let sibling_turn = rng.u8(..4) == 0;
        let path =
            if sibling_turn { &sibling[rng.usize(..sibling.len())] } else { &failing[rng.usize(..failing.len())] };
        let predicted = storm.predict(path);
        if sibling_turn && !predicted.gave_up.is_empty() {
            continue;
        }
        // The root may restart the failing subtree, but not give up yet.
        if predicted.gave_up.iter().any(|s| s == "storm") {
            storm.advance(Duration::from_millis(100)).await;
            continue;
        }
        storm.crash(step, path, how(&mut rng)).await;
        step += 1;
        if step % 100 == 0 {
            storm.check_alive().await;
        }
    }
    storm.check_alive().await;
    let tally = &storm.tally;
    assert!(tally.gave_up.get("leaf").is_some_and(|n| *n > 0), "the leaf escalated: {tally}");
    assert!(tally.gave_up.get("rest").is_some_and(|n| *n > 0), "its parent escalated in turn: {tally}");
    assert!(!tally.gave_up.contains_key("all") && !tally.gave_up.contains_key("storm"), "{tally}");
    assert_eq!(
        tally.restarts.get("storm").copied(),
        tally.gave_up.get("rest").copied(),
        "root restarts = rest's escalations"
    );
    // The sibling subtree and the root's own worker were never touched by the escalations.
    assert_eq!(
        storm.root.which_children().await.unwrap()[1].actor.as_ref().map(|a| a.get_id()),
        Some(all_before.get_id())
    );
    assert_eq!(storm.root.which_children().await.unwrap()[0].actor.as_ref().map(|a| a.get_id()), Some(r0.get_id()));
    println!("[kit] restart storm past the intensity: {tally}, {} incarnations", storm.incarnations());

    // Now past the root's intensity too: the whole tree stops, last started first, and the
    // root exits with the reason that says so.
    let mut last = None;
    while storm.model.alive() {
        let path = &failing[rng.usize(..failing.len())];
        last = Some(storm.crash(step, path, how(&mut rng)).await);
        step += 1;
    }
    let last = last.expect("at least one crash");
    assert_eq!(last.gave_up.last().map(String::as_str), Some("storm"), "escalation reached the root: {last:?}");
    let tail: Vec<&str> = last.log.iter().rev().take(4).rev().map(String::as_str).collect();
    assert_eq!(tail, ["stop a2", "stop a1", "stop a0", "stop r0"], "the root stopped its children in reverse order");
    let reason = storm.root.wait().await;
    assert!(reason.to_string().contains(arbor_otp::REACHED_MAX_RESTART_INTENSITY), "{reason}");
    settle().await;
    storm.check_alive().await;
    println!("[kit] restart storm past the root's intensity: {}", storm.tally);
    assert_no_leaks(&storm.gauge).await;
}
