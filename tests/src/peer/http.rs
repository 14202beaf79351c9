//! The parts of a raw Streamable HTTP client every crate's HTTP tests share: the POST of
//! a JSON-RPC body with the head the transport requires, and the reading of
//! `text/event-stream` bodies into events.
//!
//! It is not a client: no session, era or retry logic, and no opinion on how long a read
//! may take. The callers keep their own readers (bounds, what ends a stream) and feed the
//! bytes they read to an [`EventBuffer`], which only cuts them into events as the SSE
//! format defines them (WHATWG HTML, "Server-sent events"): fields up to an empty line,
//! comments skipped, data lines joined with `\n`.

use serde_json::Value;

/// A POST of `body` to `url` with `Content-Type: application/json` and the `Accept` both
/// eras require (`application/json, text/event-stream`).
pub fn post(client: &reqwest::Client, url: &str, body: &Value) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string())
}

/// One SSE event as read.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: Option<String>,
    pub event: Option<String>,
    pub retry: Option<u64>,
    /// The data lines, joined with `\n`; empty for an event without data (a priming event).
    pub data: String,
}

impl Event {
    /// The data as JSON (panics with the event if it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("event data is not JSON ({e}): {self:?}"))
    }
}

/// The bytes of an SSE body read so far, cut into events as they complete.
#[derive(Debug, Default)]
pub struct EventBuffer {
    buf: Vec<u8>,
}

impl EventBuffer {
    /// Appends bytes as read off the body.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The first complete event in the buffer, if any. Blocks without an `id`, `event` or
    /// `data` field (comments such as keep-alives, a lone `retry`) are consumed and skipped.
    pub fn next_event(&mut self) -> Option<Event> {
        loop {
            // Events end with an empty line; the servers under test write `\n` line ends.
            let end = self.buf.windows(2).position(|w| w == b"\n\n")?;
            let block: Vec<u8> = self.buf.drain(..end + 2).collect();
            let block = String::from_utf8(block).expect("SSE is UTF-8");
            let mut event = Event::default();
            let mut data: Vec<&str> = Vec::new();
            let mut is_event = false;
            for line in block.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => (event.id, is_event) = (Some(value.to_owned()), true),
                    "event" => (event.event, is_event) = (Some(value.to_owned()), true),
                    "retry" => event.retry = value.parse().ok(),
                    "data" => {
                        data.push(value);
                        is_event = true;
                    }
                    // A comment (empty field name) or a field SSE does not define.
                    _ => {}
                }
            }
            if is_event {
                event.data = data.join("\n");
                return Some(event);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_cut_at_empty_lines_across_chunks_and_comments_are_skipped() {
        let mut buf = EventBuffer::default();
        buf.push(b": keep-alive\n\nid: 0-0\nretry: 1000\ndata:\n\nevent: message\nda");
        let priming = buf.next_event().expect("the priming event");
        assert_eq!(priming, Event { id: Some("0-0".into()), event: None, retry: Some(1000), data: String::new() });
        assert_eq!(buf.next_event(), None, "the third event is not complete yet");
        buf.push(b"ta: {\"a\":\ndata: 1}\n\nretry: 5\n\n");
        let message = buf.next_event().expect("the message");
        assert_eq!(message.event.as_deref(), Some("message"));
        assert_eq!(message.data, "{\"a\":\n1}", "data lines are joined with a newline");
        assert_eq!(message.json(), serde_json::json!({"a": 1}));
        assert_eq!(buf.next_event(), None, "a lone retry is no event");
    }
}
