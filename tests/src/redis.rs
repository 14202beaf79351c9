//! A real `redis-server` owned by a test: started on a free loopback port, killed on drop,
//! restartable on the same port (empty) to play a Redis crash.
//!
//! It is a process handle, not a Redis client: what a test asks Redis stays with that test.
//! It must be installed (`apt-get install redis-server`; `.ci/run` does it). A missing
//! binary fails the test with that instruction rather than skipping: a Redis bus that was
//! never tested must not look tested.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `redis-server` process.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a server on a free loopback port.
    pub fn start() -> Self {
        // A free port can be taken by another test's process between our probe and
        // redis-server's bind: the port then accepts, but not for us, and our server exits.
        // Such a start is retried on another port.
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let mut server = Self { port, child: None };
            server.spawn();
            if server.still_running() {
                return server;
            }
        }
        panic!("redis-server kept losing its port to other processes");
    }

    /// Whether our process is still up a moment after its port accepted (it exits at once
    /// when another process holds the port).
    fn still_running(&mut self) -> bool {
        std::thread::sleep(Duration::from_millis(50));
        self.child.as_mut().is_some_and(|child| child.try_wait().ok().flatten().is_none())
    }

    /// `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Kills the server (connections drop at once, as in a crash).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills it and starts a new one on the same port, empty.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    fn spawn(&mut self) {
        let port = self.port;
        let child = command(port).spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start redis-server ({e}): the Redis tests need a real server on PATH; \
                     install it with `apt-get install -y redis-server`"
            )
        });
        self.child = Some(child);
        // A just-killed server's port can take a moment to be free again; retry for a while.
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                assert!(Instant::now() < deadline, "redis-server on port {port} keeps exiting ({status})");
                std::thread::sleep(Duration::from_millis(50));
                self.child = Some(command(port).spawn().unwrap());
                continue;
            }
            assert!(Instant::now() < deadline, "redis-server on port {port} did not accept connections within 10 s");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn command(port: u16) -> Command {
    let mut command = Command::new("redis-server");
    command
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
