//! A real HAProxy owned by a test: a round-robin HTTP load balancer without stickiness in
//! front of the backends the test names, on a free loopback port, killed on drop.
//!
//! It is a process handle and its configuration, nothing else: what goes through it stays
//! with the test. It must be installed (`apt-get install haproxy`; `scripts/test` does it).
//! A missing binary fails the test with that instruction rather than skipping: a cluster
//! that was never tested behind a real balancer must not look tested.
//!
//! Invariant: every request is balanced on its own (`balance roundrobin`, HTTP mode, no
//! cookie, no stick table, a connection to a backend per request), so consecutive
//! requests land on consecutive backends; streams (SSE) may stay open as long as the
//! test's own bounds allow (`timeout tunnel`). A backend that refuses connections (a
//! killed node) is skipped for the request at once (`option redispatch`), so only the
//! requests it was serving when it died fail, with the balancer's 502. Every answer names
//! the backend that gave it ([`BACKEND_HEADER`]: `node{i}`, `i` its index in the list the
//! test gave), so a test knows which node served what without asking the nodes.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The response header naming the backend that answered: `node0`, `node1`, … in the
/// order of [`Haproxy::round_robin`]'s list.
pub const BACKEND_HEADER: &str = "x-arbor-backend";

/// The index of the backend a [`BACKEND_HEADER`] value names (`node2` → 2).
pub fn backend_index(value: &str) -> Option<usize> {
    value.strip_prefix("node")?.parse().ok()
}

/// A running `haproxy` process.
#[derive(Debug)]
pub struct Haproxy {
    port: u16,
    child: Option<Child>,
    config: PathBuf,
}

impl Haproxy {
    /// Starts HAProxy on a free loopback port, balancing every request round robin over
    /// `backends` (HTTP/1.1, no stickiness).
    pub fn round_robin(backends: &[SocketAddr]) -> Self {
        assert!(!backends.is_empty(), "a load balancer needs a backend");
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let config = std::env::temp_dir().join(format!("arbor-haproxy-{}-{port}.cfg", std::process::id()));
        std::fs::write(&config, configuration(port, backends)).expect("writing the HAProxy configuration");
        // Debian installs it in /usr/sbin, which a user's PATH may not hold.
        let binary = if std::path::Path::new("/usr/sbin/haproxy").exists() { "/usr/sbin/haproxy" } else { "haproxy" };
        let child = Command::new(binary)
            .arg("-db") // foreground, no daemon: killed with the handle
            .arg("-f")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start haproxy ({e}): the cluster tests need a real load balancer on PATH; \
                     install it with `apt-get install -y haproxy`"
                )
            });
        let mut proxy = Self { port, child: Some(child), config };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = proxy.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("haproxy exited at start ({status}); its configuration is {}", proxy.config.display());
            }
            assert!(Instant::now() < deadline, "haproxy on port {port} did not accept connections within 10 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        proxy
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_file(&self.config);
    }
}

/// The configuration: one frontend, one round-robin backend, timeouts bounded so that a
/// test's stuck stream ends by itself.
fn configuration(port: u16, backends: &[SocketAddr]) -> String {
    let servers: String = backends.iter().enumerate().map(|(i, addr)| format!("    server node{i} {addr}\n")).collect();
    format!(
        "global
    maxconn 1024

defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout tunnel 60s
    # A connection to a backend per request: every request is balanced on its own.
    option http-server-close
    # A backend that refuses the connection (a node that died) costs the request nothing:
    # it is sent to the next backend at once, as production balancers are set up to do.
    # Only a request a node was serving when it died gets an error (502).
    retries 2
    option redispatch 1

frontend mcp
    bind 127.0.0.1:{port}
    default_backend nodes

backend nodes
    balance roundrobin
    http-response set-header {BACKEND_HEADER} %s
{servers}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A backend answering every request with its own name, on a thread of its own.
    fn backend(name: &'static str) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut head = [0u8; 1024];
                let _ = stream.read(&mut head);
                let answer = format!("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nConnection: close\r\n\r\n{name}");
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        addr
    }

    fn get(proxy: &Haproxy) -> String {
        named_and_served(proxy).1
    }

    #[test]
    fn consecutive_requests_land_on_consecutive_backends() {
        let proxy = Haproxy::round_robin(&[backend("A"), backend("B"), backend("C")]);
        let served: Vec<String> = (0..6).map(|_| get(&proxy)).collect();
        let first = served[0].clone();
        let order = ["A", "B", "C"];
        let start = order.iter().position(|n| *n == first).expect("a backend's answer");
        let expected: Vec<String> = (0..6).map(|i| order[(start + i) % 3].to_owned()).collect();
        assert_eq!(served, expected, "round robin without stickiness");
    }

    #[test]
    fn every_answer_names_the_backend_that_gave_it() {
        let proxy = Haproxy::round_robin(&[backend("A"), backend("B"), backend("C")]);
        let order = ["A", "B", "C"];
        let mut named = Vec::new();
        for _ in 0..3 {
            let (index, served) = named_and_served(&proxy);
            assert_eq!(order[index], served, "node{index} is the list's entry {index}");
            named.push(index);
        }
        named.sort_unstable();
        assert_eq!(named, [0, 1, 2], "three requests, three backends");
    }

    /// The backend an answer names, and the body it served.
    fn named_and_served(proxy: &Haproxy) -> (usize, String) {
        let mut stream = TcpStream::connect(proxy.addr()).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        stream.write_all(b"GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n").unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let prefix = format!("{BACKEND_HEADER}: ");
        let index = answer.lines().find_map(|line| line.strip_prefix(prefix.as_str())).and_then(backend_index);
        (index.expect("a backend named"), answer.rsplit("\r\n\r\n").next().unwrap_or_default().to_owned())
    }
}
