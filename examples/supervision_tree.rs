//! A supervision-tree experiment you can run: `cargo run -p examples --example supervision_tree`.
//!
//! It builds a small tree, injects crashes on a schedule, and prints the tree and the
//! restart history after each step. It ends by itself after a few seconds.
//!
//! With `--observe PORT` it serves the live observer (`arbor_http::Observer`) for this
//! tree at `http://127.0.0.1:PORT/observer` (loopback only), slows the schedule down so
//! each step can be watched, and repeats it until Ctrl-C.
//!
//! ```text
//! root                  one_for_one, at most 5 restarts in 10 s
//! ├─ clock              worker, permanent
//! ├─ pipeline           supervisor, rest_for_one, at most 2 restarts in 10 s
//! │  ├─ source          worker, permanent
//! │  └─ sink            worker, permanent (restarted whenever source is)
//! ├─ sessions           dynamic supervisor, at most 3 children
//! └─ requests           task supervisor, at most 8 tasks, 200 ms deadline
//! ```

use std::time::Duration;

use arbor_otp::{
    ChildSpec, DynamicSupervisorHandle, DynamicSupervisorSpec, ExitReason, NodeSnapshot, Restart, Started, Strategy,
    SupervisorHandle, SupervisorSpec, TaskOptions, TaskOutcome, TaskSupervisor, TaskSupervisorSpec,
};
use ractor::{Actor, ActorProcessingErr, ActorRef};

/// A worker that does nothing until told to crash or to finish.
struct Worker;

enum Cmd {
    Crash,
    Finish,
}

impl Actor for Worker {
    type Msg = Cmd;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _me: ActorRef<Cmd>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(&self, me: ActorRef<Cmd>, cmd: Cmd, _: &mut ()) -> Result<(), ActorProcessingErr> {
        match cmd {
            Cmd::Crash => panic!("injected crash"),
            Cmd::Finish => ExitReason::Normal.stop(&me.get_cell()),
        }
        Ok(())
    }
}

fn worker(id: &str) -> ChildSpec {
    ChildSpec::new(id, |ctx| async move {
        let (actor, _) = Actor::spawn_linked(None, Worker, (), ctx.supervisor()).await?;
        Ok(Started::actor(actor))
    })
}

/// Prints one line per node, indented like the diagram above.
fn print_tree(node: &NodeSnapshot, prefix: &str, last: bool, root: bool) {
    let branch = if root {
        ""
    } else if last {
        "└─ "
    } else {
        "├─ "
    };
    let mut line = format!("{prefix}{branch}{} [{:?}", node.id, node.kind);
    if let Some(strategy) = node.strategy {
        line += &format!(" {strategy:?}");
    }
    if let Some(restart) = node.restart {
        line += &format!(", {restart:?}");
    }
    line += &format!("] {:?}", node.status);
    // A restarted child shows up with a new actor id.
    if let Some(actor) = &node.actor_id {
        line += &format!(" as {actor}");
    }
    if node.restart_count > 0 {
        line += &format!(", {} restart(s)", node.restart_count);
    }
    if let Some(tasks) = &node.tasks {
        line += &format!(
            ", tasks: {} in flight, {} completed, {} panicked, {} timed out, {} cancelled",
            tasks.in_flight, tasks.completed, tasks.panicked, tasks.timed_out, tasks.cancelled
        );
    }
    println!("{line}");
    let child_prefix = if root { String::new() } else { format!("{prefix}{}", if last { "   " } else { "│  " }) };
    for (i, child) in node.children.iter().enumerate() {
        print_tree(child, &child_prefix, i + 1 == node.children.len(), false);
    }
}

fn print_history(node: &NodeSnapshot) {
    for r in &node.recent_restarts {
        println!("  {:>6} ms  {:<10} restarted {:<8} ({})", r.at_ms, node.id, r.child, r.reason);
    }
    for child in &node.children {
        print_history(child);
    }
}

async fn crash(sup: &SupervisorHandle, id: &str) {
    if let Some(cell) = sup.which_children().await.ok().and_then(|c| c.into_iter().find(|c| c.id == id)?.actor) {
        let _ = cell.send_message(Cmd::Crash);
    }
}

/// The pause after each step: long enough to watch it in the observer when it is served.
static PAUSE_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(250);

async fn step(root: &SupervisorHandle, title: &str) {
    tokio::time::sleep(Duration::from_millis(PAUSE_MS.load(std::sync::atomic::Ordering::Relaxed))).await;
    println!("\n== {title}");
    print_tree(&root.snapshot().await, "", true, true);
}

/// `--observe PORT`: the port to serve the observer on.
fn observe_port() -> Result<Option<u16>, String> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => Ok(None),
        (Some("--observe"), Some(port)) => port.parse().map(Some).map_err(|_| format!("`{port}` is not a port")),
        _ => Err("usage: supervision_tree [--observe PORT]".into()),
    }
}

/// Serves the observer for `root` on 127.0.0.1:`port` until the process ends.
async fn serve_observer(root: &SupervisorHandle, port: u16) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)).await?;
    let app = arbor_http::Observer::new().router_for_tree(root.clone());
    let serving = arbor_http::serve(listener, app);
    println!("observer: http://{}/observer", serving.local_addr()?);
    tokio::spawn(async move { serving.await });
    Ok(())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    // Keep the injected panics' messages out of the output; the snapshots report them.
    std::panic::set_hook(Box::new(|_| {}));
    let observe = match observe_port() {
        Ok(port) => port,
        Err(why) => {
            eprintln!("supervision_tree: {why}");
            return std::process::ExitCode::from(2);
        }
    };
    if observe.is_some() {
        PAUSE_MS.store(2000, std::sync::atomic::Ordering::Relaxed);
    }

    let pipeline = SupervisorSpec::new("pipeline")
        .strategy(Strategy::RestForOne)
        .intensity(2, Duration::from_secs(10))
        .child(worker("source"))
        .child(worker("sink"));
    let spec = SupervisorSpec::new("root")
        .intensity(5, Duration::from_secs(10))
        .child(worker("clock"))
        .child(ChildSpec::supervisor("pipeline", pipeline))
        .child(ChildSpec::dynamic_supervisor("sessions", DynamicSupervisorSpec::new("sessions").max_children(3)))
        .child(ChildSpec::task_supervisor(
            "requests",
            TaskSupervisorSpec::new("requests").max_concurrency(8).default_deadline(Duration::from_millis(200)),
        ));
    let root = SupervisorHandle::start(spec).await.expect("tree starts");
    if let Some(port) = observe {
        if let Err(e) = serve_observer(&root, port).await {
            eprintln!("supervision_tree: cannot serve the observer on port {port}: {e}");
            return std::process::ExitCode::FAILURE;
        }
    }
    loop {
        experiment(&root).await;
        if observe.is_none() {
            break;
        }
    }
    let snapshot = root.snapshot().await;
    println!("\n== restart history");
    print_history(&snapshot);
    println!("\n== snapshot as JSON (pipeline only)");
    println!("{}", serde_json::to_string_pretty(&snapshot.find(&["pipeline"]).unwrap().to_json()).unwrap());

    let reason = root.shutdown().await;
    println!("\n== root shut down in order: {reason}; actors still alive: {}", root.gauge().alive_actors());
    std::process::ExitCode::SUCCESS
}

/// One run of the schedule of crashes.
async fn experiment(root: &SupervisorHandle) {
    step(root, "started").await;

    crash(root, "clock").await;
    step(root, "clock crashed: one_for_one restarts only the clock").await;

    let pipeline = root.child_handle::<SupervisorHandle>("pipeline").await.expect("pipeline");
    crash(&pipeline, "source").await;
    step(root, "source crashed: rest_for_one restarts source and sink").await;

    let sessions = root.child_handle::<DynamicSupervisorHandle>("sessions").await.expect("sessions");
    let mut started = Vec::new();
    for _ in 0..4 {
        match sessions.start_child(worker("session").restart(Restart::Transient)).await {
            Ok(cell) => started.push(cell),
            Err(err) => println!("   fourth session refused: {err}"),
        }
    }
    let _ = started[0].send_message(Cmd::Crash);
    let _ = started[1].send_message(Cmd::Finish);
    step(root, "sessions: one crashed (transient: restarted), one finished (not restarted)").await;

    let requests = root.child_handle::<TaskSupervisor>("requests").await.expect("requests");
    let ok = requests.spawn(async { Ok::<_, String>("answer") }).unwrap();
    let boom = requests.spawn(async { panic!("handler bug") as Result<&str, String> }).unwrap();
    let slow = requests.spawn(std::future::pending::<Result<&str, String>>()).unwrap();
    let cancelled = requests.spawn_with(TaskOptions::deadline(Duration::from_secs(5)), std::future::pending()).unwrap();
    cancelled.cancel().unwrap();
    for (name, outcome) in
        [("ok", ok.await), ("boom", boom.await), ("slow", slow.await), ("cancelled", cancelled.await)]
    {
        let shown = match outcome {
            TaskOutcome::Panicked(msg) => format!("panicked: {msg}"),
            other => other.kind().to_owned(),
        };
        println!("   task {name:<9} -> {shown}");
    }
    step(root, "requests: completed, panicked, timed out, cancelled").await;

    for _ in 0..3 {
        let pipeline = root.child_handle::<SupervisorHandle>("pipeline").await.expect("pipeline");
        crash(&pipeline, "source").await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    step(root, "source crashed three times fast: pipeline gave up, root restarted it").await;
    // The sessions finish, so a next run (with --observe) starts them again.
    for child in sessions.which_children().await.unwrap_or_default() {
        if let Some(cell) = child.actor {
            let _ = cell.send_message(Cmd::Finish);
        }
    }
}
