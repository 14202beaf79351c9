//! A small Server-Sent Events parser: bytes in, the `data` of each event out.
//!
//! It implements what MCP needs of the SSE format: `data` lines (joined by newlines),
//! `event` types (only the default `message` type carries JSON-RPC), the last event `id`
//! and the `retry` delay remembered for resuming a stream (SEP-1699), comment lines
//! (keep-alives) skipped, CRLF or LF line ends. An event whose data (or any of whose
//! lines) is longer than the frame cap, the same cap a stdio frame has, is dropped and
//! counted ([`SseParser::take_oversized`]), never buffered past the cap.
//! Invariant: bytes split anywhere across chunks give the same events as one chunk, and
//! the parser holds at most about twice the cap whatever the server sends.

#[derive(Debug)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    event: Option<String>,
    id: Option<String>,
    last_id: Option<String>,
    retry: Option<u64>,
    /// The most bytes an event's data, or one line, may hold.
    max: usize,
    /// The line being read went past `max`: the rest of it is skipped.
    long_line: bool,
    /// The event being read went past `max`: it is dropped when it ends.
    oversized: bool,
    /// Events dropped for their size, not yet taken.
    dropped: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::with_max(arbor_transport::DEFAULT_MAX_FRAME_BYTES)
    }
}

impl SseParser {
    /// A parser that drops events over `max` bytes of data.
    pub(crate) fn with_max(max: usize) -> Self {
        SseParser {
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            event: None,
            id: None,
            last_id: None,
            retry: None,
            max,
            long_line: false,
            oversized: false,
            dropped: 0,
        }
    }

    /// Feeds a chunk; returns the data of every `message` event it completed.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for &b in chunk {
            if b == b'\n' {
                let mut line = std::mem::take(&mut self.line);
                if std::mem::take(&mut self.long_line) {
                    // Whatever field it was, the event cannot be trusted whole.
                    self.oversized = true;
                    continue;
                }
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.line_done(&line, &mut out);
            } else if self.line.len() < self.max {
                self.line.push(b);
            } else {
                self.long_line = true;
                self.line.clear();
            }
        }
        out
    }

    /// How many events were dropped for their size since last asked.
    pub(crate) fn take_oversized(&mut self) -> usize {
        std::mem::take(&mut self.dropped)
    }

    /// The id of the last event completed (a priming event with empty data counts), to
    /// send as `Last-Event-ID` when resuming.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The reconnection delay the server asked for (`retry`, milliseconds), if any.
    pub(crate) fn retry_ms(&self) -> Option<u64> {
        self.retry
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<Vec<u8>>) {
        if line.is_empty() {
            // As in the SSE spec, the event's id becomes the stream's last event id when
            // the event is dispatched, even one without data.
            if let Some(id) = self.id.take() {
                self.last_id = Some(id);
            }
            let event = self.event.take();
            if std::mem::take(&mut self.oversized) {
                self.dropped += 1;
            // An event with empty data (a 2025-11-25 priming event) carries no message.
            } else if self.has_data && !self.data.is_empty() && event.as_deref().is_none_or(|e| e == "message") {
                out.push(std::mem::take(&mut self.data));
            }
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.oversized || self.data.len() + value.len() + 1 > self.max {
                    self.oversized = true;
                    self.data = Vec::new();
                    return;
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            // An id containing NUL is ignored (SSE spec).
            b"id" if !value.contains(&0) => self.id = Some(String::from_utf8_lossy(value).into_owned()),
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SseParser;

    #[test]
    fn an_event_over_the_cap_is_dropped_and_counted_and_the_next_one_read() {
        let mut p = SseParser::with_max(16);
        // One line too long, then one event whose data lines add up past the cap.
        let text = b"data: {\"x\":\"0123456789abcdef\"}\n\ndata: 0123456789\ndata: 0123456789\n\ndata: {}\n\n";
        for split in 0..text.len() {
            let mut p = SseParser::with_max(16);
            let mut got = p.feed(&text[..split]);
            got.extend(p.feed(&text[split..]));
            assert_eq!((got, p.take_oversized()), (vec![b"{}".to_vec()], 2), "split at {split}");
        }
        assert_eq!(p.feed(text), vec![b"{}".to_vec()]);
        assert_eq!((p.take_oversized(), p.take_oversized()), (2, 0));
        assert!(p.line.capacity() <= 64 && p.data.capacity() <= 64, "nothing buffered past the cap");
    }

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let text = b": keep-alive\r\nid: 1\r\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nevent: endpoint\ndata: /x\n\nid: 7\ndata:\n\ndata:{}\n\n";
        let whole = SseParser::default().feed(text);
        assert_eq!(whole, vec![b"{\"a\":\n1}".to_vec(), b"{}".to_vec()]);
        for split in 0..text.len() {
            let mut p = SseParser::default();
            let mut got = p.feed(&text[..split]);
            got.extend(p.feed(&text[split..]));
            assert_eq!(got, whole, "split at {split}");
        }
    }

    #[test]
    fn the_last_event_id_and_retry_are_remembered_for_resuming() {
        let mut p = SseParser::default();
        assert_eq!(p.last_event_id(), None);
        assert!(p.feed(b"id: event-1\nretry: 500\ndata: \n\n").is_empty());
        assert_eq!((p.last_event_id(), p.retry_ms()), (Some("event-1"), Some(500)));
        // An id only counts once its event is complete; a bad retry is ignored.
        p.feed(b"retry: soon\nid: event-2\ndata: {}\n");
        assert_eq!((p.last_event_id(), p.retry_ms()), (Some("event-1"), Some(500)));
        assert_eq!(p.feed(b"\n"), vec![b"{}".to_vec()]);
        assert_eq!(p.last_event_id(), Some("event-2"));
    }
}
