//! A small Server-Sent Events parser: bytes in, the `data` of each event out.
//!
//! It implements what MCP needs of the SSE format: `data` lines (joined by newlines),
//! `event` types (only the default `message` type carries JSON-RPC), `id` and `retry`
//! fields read and ignored, comment lines (keep-alives) skipped, CRLF or LF line ends.
//! Invariant: bytes split anywhere across chunks give the same events as one chunk.

#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    event: Option<String>,
}

impl SseParser {
    /// Feeds a chunk; returns the data of every `message` event it completed.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for &b in chunk {
            if b == b'\n' {
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.line_done(&line, &mut out);
            } else {
                self.line.push(b);
            }
        }
        out
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<Vec<u8>>) {
        if line.is_empty() {
            let event = self.event.take();
            // An event with empty data (a 2025-11-25 priming event) carries no message.
            if self.has_data && !self.data.is_empty() && event.as_deref().is_none_or(|e| e == "message") {
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
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SseParser;

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
}
