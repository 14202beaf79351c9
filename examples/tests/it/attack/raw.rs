//! A raw HTTP/1.1 peer for the attack suite: bytes written exactly as given on a loopback
//! socket, the answer read back by hand (status, headers, body as sent). Nothing here is a
//! well-behaved client: that is the point. Every read is bounded by a deadline.

#![allow(dead_code)]

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one answer may take.
pub const WAIT: Duration = Duration::from_secs(15);

/// `host:port` of an endpoint URL such as `http://127.0.0.1:PORT/mcp`.
pub fn authority(url: &str) -> &str {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    rest.split('/').next().expect("an authority")
}

/// A parsed HTTP response.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as JSON (panics with the body if it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

/// Connects to `authority` (`127.0.0.1:PORT`).
pub async fn connect(authority: &str) -> TcpStream {
    tokio::time::timeout(WAIT, TcpStream::connect(authority))
        .await
        .expect("connecting in time")
        .expect("connecting to the server")
}

/// Connects to `authority` from the local address `from` (e.g. `127.0.0.2`, a second
/// loopback peer for the per-peer bounds).
pub async fn connect_from(authority: &str, from: std::net::IpAddr) -> TcpStream {
    let target: std::net::SocketAddr = authority.parse().expect("an IP:PORT authority");
    let socket = match from {
        std::net::IpAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
        std::net::IpAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
    }
    .expect("a socket");
    socket.bind(std::net::SocketAddr::new(from, 0)).expect("binding the client end");
    tokio::time::timeout(WAIT, socket.connect(target))
        .await
        .expect("connecting in time")
        .expect("connecting to the server")
}

/// A POST of `body` to `path` with the usual MCP headers plus `extra` (`Name: value\r\n` lines).
pub fn post_bytes(authority: &str, path: &str, extra: &str, body: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n{extra}\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

/// Writes `request` on a fresh connection and reads one whole response (the connection
/// is closed after it). `None` if the server closed the connection without answering.
pub async fn exchange(authority: &str, request: &[u8]) -> Option<Answer> {
    let mut tcp = connect(authority).await;
    tcp.write_all(request).await.ok()?;
    read_answer(&mut tcp, WAIT).await
}

/// Reads one response from `tcp` within `within`: a `Content-Length` body, a chunked body
/// or (for `text/event-stream`) whatever arrives until the stream ends or `within` passes.
/// `None` if the connection closed before a status line arrived.
pub async fn read_answer(tcp: &mut TcpStream, within: Duration) -> Option<Answer> {
    let deadline = tokio::time::Instant::now() + within;
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        if !read_more(tcp, &mut buf, deadline).await {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let status: u16 = status_line.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned())).collect();
    let mut answer = Answer { status, headers, body: Vec::new() };
    let mut rest = buf[head_end + 4..].to_vec();
    if let Some(len) = answer.header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        while rest.len() < len {
            if !read_more(tcp, &mut rest, deadline).await {
                break;
            }
        }
        rest.truncate(len);
        answer.body = rest;
    } else if answer.header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        answer.body = read_chunked(tcp, rest, deadline).await;
    } else {
        while read_more(tcp, &mut rest, deadline).await {}
        answer.body = rest;
    }
    Some(answer)
}

/// Decodes a chunked body until its last chunk, the connection's end or the deadline.
async fn read_chunked(tcp: &mut TcpStream, mut raw: Vec<u8>, deadline: tokio::time::Instant) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = find(&raw, b"\r\n") else {
            if !read_more(tcp, &mut raw, deadline).await {
                return body;
            }
            continue;
        };
        let size_text = String::from_utf8_lossy(&raw[..line_end]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
        if size == 0 {
            return body;
        }
        while raw.len() < line_end + 2 + size + 2 {
            if !read_more(tcp, &mut raw, deadline).await {
                body.extend_from_slice(&raw[(line_end + 2).min(raw.len())..]);
                return body;
            }
        }
        body.extend_from_slice(&raw[line_end + 2..line_end + 2 + size]);
        raw.drain(..line_end + 2 + size + 2);
    }
}

/// Reads what is there into `buf`; `false` at end of stream, on error or past `deadline`.
async fn read_more(tcp: &mut TcpStream, buf: &mut Vec<u8>, deadline: tokio::time::Instant) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    match tokio::time::timeout_at(deadline, tcp.read(&mut chunk)).await {
        Ok(Ok(0)) | Ok(Err(_)) | Err(_) => false,
        Ok(Ok(n)) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The open file descriptors of process `pid` (Linux: `/proc/PID/fd`).
pub fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// The resident set of process `pid` in KiB (Linux: `VmRSS` of `/proc/PID/status`).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// User + system CPU seconds process `pid` has used so far (Linux: `/proc/PID/stat`).
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th.
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields.get(11).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // USER_HZ, the unit of those fields, is 100 on every Linux ABI.
    ticks / 100.0
}
