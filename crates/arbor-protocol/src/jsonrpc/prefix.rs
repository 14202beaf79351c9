//! Reading the id of a request from the first bytes of a frame too long to decode.
//!
//! The transport skips a line over its cap but keeps its first bytes (a few KiB), so the
//! -32600 that refuses it can carry the request's id and the client can match the error
//! to its request. [`request_id_in_prefix`] walks the members of the top-level object in
//! those bytes, skipping nested values whole, and answers only when the prefix settles
//! it: one top-level `"id"` whose value ends inside the prefix, and a top-level `"method"`
//! (so the frame is a request, not a response to one of ours, whose id is in another
//! id space). Anything else (a batch, a truncated or malformed member, a duplicate
//! envelope member, an id nested in `params`) gives `None`, and the error goes out
//! without an id as before. An id that comes after a long `params` is past the prefix and
//! is not found.
//!
//! Invariant: it never panics and never reads past the slice, whatever the bytes; nested
//! values are skipped with a depth counter, not recursion.

use super::RequestId;
use serde_json::Value;

/// The envelope members whose repetition makes the decoder refuse the frame without an id.
const ENVELOPE: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

/// The id of the request whose frame starts with `prefix`, when the prefix shows it for
/// certain; see the module documentation for what that takes.
pub fn request_id_in_prefix(prefix: &[u8]) -> Option<RequestId> {
    let mut s = Scanner { bytes: prefix, pos: 0 };
    s.ws();
    s.eat(b'{')?;
    let mut id = None;
    let mut seen = [0u8; ENVELOPE.len()];
    s.ws();
    if s.peek() == Some(b'}') {
        return None;
    }
    // The prefix may end anywhere: past that point nothing more is known, so the loop
    // stops and decides on the members read in full.
    loop {
        s.ws();
        match s.peek() {
            None => break,
            Some(b'"') => {}
            Some(_) => return None,
        }
        let Some(end) = s.string_end() else { break };
        let key = s.key(end)?;
        s.ws();
        match s.next() {
            None => break,
            Some(b':') => {}
            Some(_) => return None,
        }
        s.ws();
        if let Some(i) = ENVELOPE.iter().position(|m| *m == key) {
            seen[i] += 1;
            if seen[i] > 1 {
                return None;
            }
        }
        if key == "id" {
            id = Some(s.id_value()?);
        } else if !s.skip_value() {
            break;
        }
        s.ws();
        match s.next() {
            Some(b',') => continue,
            Some(b'}') | None => break,
            Some(_) => return None,
        }
    }
    let has = |name: &str| ENVELOPE.iter().position(|m| *m == name).is_some_and(|i| seen[i] > 0);
    if !has("method") || has("result") || has("error") {
        return None;
    }
    id.flatten()
}

struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// The end (exclusive) of the string starting at `pos` (which holds its opening
    /// quote), or `None` if the prefix ends first.
    fn string_end(&self) -> Option<usize> {
        let mut i = self.pos + 1;
        loop {
            match *self.bytes.get(i)? {
                b'"' => return Some(i + 1),
                b'\\' => i += 2,
                _ => i += 1,
            }
        }
    }

    /// The member name that ends at `end`, decoded (`"\u0069d"` is `id`, as the
    /// decoder reads it).
    fn key(&mut self, end: usize) -> Option<String> {
        let key = serde_json::from_slice::<String>(self.bytes.get(self.pos..end)?).ok()?;
        self.pos = end;
        Some(key)
    }

    /// The value of `"id"`: `Some(Some(id))` for a string or an integer that ends inside
    /// the prefix, `Some(None)` for `null` (a notification's), `None` otherwise.
    fn id_value(&mut self) -> Option<Option<RequestId>> {
        let start = self.pos;
        let end = match self.peek()? {
            b'"' => self.string_end()?,
            b'-' | b'0'..=b'9' | b'n' => {
                let mut i = start;
                while self.bytes.get(i).is_some_and(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b)) {
                    i += 1;
                }
                // A number cut off by the end of the prefix may be missing digits.
                self.bytes.get(i)?;
                i
            }
            _ => return None,
        };
        let value: Value = serde_json::from_slice(self.bytes.get(start..end)?).ok()?;
        self.pos = end;
        match value {
            Value::Null => Some(None),
            other => RequestId::from_value(&other).map(Some),
        }
    }

    /// Skips one value; `false` if the prefix ends inside it.
    fn skip_value(&mut self) -> bool {
        let mut depth = 0usize;
        loop {
            let Some(b) = self.peek() else { return false };
            match b {
                b'"' => match self.string_end() {
                    Some(end) => self.pos = end,
                    None => return false,
                },
                b'{' | b'[' => {
                    depth += 1;
                    self.pos += 1;
                }
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    self.pos += 1;
                }
                // The end of this member: the caller reads the separator.
                b',' | b'}' | b']' if depth == 0 => return true,
                _ => self.pos += 1,
            }
            if depth == 0 && matches!(self.bytes.get(self.pos.wrapping_sub(1)), Some(b'}' | b']' | b'"')) {
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(prefix: &str) -> Option<RequestId> {
        request_id_in_prefix(prefix.as_bytes())
    }

    #[test]
    fn the_id_before_the_params_is_read() {
        let pad = "x".repeat(10_000);
        let line = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"pad":"{pad}"}}}}"#);
        assert_eq!(id(&line[..4096]), Some(RequestId::from(7)));
        let line = format!(r#" {{ "id" : "a\"b" , "method":"x","params":{{"id":1,"pad":"{pad}"}}}}"#);
        assert_eq!(id(&line[..4096]), Some(RequestId::from("a\"b")));
    }

    #[test]
    fn the_id_after_the_params_is_read_only_when_it_is_in_the_prefix() {
        let line = r#"{"jsonrpc":"2.0","method":"x","params":{"id":99,"a":[{"id":98}]},"id":8,"pad":"xxxxxxxx"}"#;
        assert_eq!(id(line), Some(RequestId::from(8)));
        assert_eq!(id(&line[..60]), None, "cut inside params");
        let cut = line.find(r#""id":8"#).unwrap() + 6;
        assert_eq!(id(&line[..cut - 1]), None, "no value yet");
        assert_eq!(id(&line[..cut]), None, "the number may go on: {}", &line[..cut]);
        assert_eq!(id(&line[..cut + 1]), Some(RequestId::from(8)));
    }

    #[test]
    fn a_nested_id_is_never_taken_for_the_requests() {
        for line in [
            r#"{"jsonrpc":"2.0","method":"x","params":{"id":99,"pad":"xxxx"#,
            r#"{"jsonrpc":"2.0","method":"x","params":["{\"id\":5,", {"id":4}], "pad":"xx"#,
            r#"{"method":"x","params":{"s":"\"id\":3,"},"pad":"xxxxxx"#,
        ] {
            assert_eq!(id(line), None, "{line}");
        }
    }

    #[test]
    fn responses_notifications_batches_and_doubt_give_no_id() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"pad":"xxxx"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1"#,
            r#"{"jsonrpc":"2.0","id":1,"params":{"pad":"xxxx"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"x","params":{"pad":"x"#,
            r#"{"jsonrpc":"2.0","method":"x","params":{"pad":"x"#,
            r#"{"id":1,"id":2,"method":"x","params":{"pad":"x"#,
            r#"{"id":1,"method":"x","method":"y","params":{"pad":"x"#,
            r#"{"id":1.5,"method":"x","params":{"pad":"x"#,
            r#"{"id":true,"method":"x","params":{"pad":"x"#,
            r#"{"id":"unterminated"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"x"}"#,
            r#"{"id" 1,"method":"x","params":{"#,
            "",
            "{",
            "{}",
            "not json",
        ] {
            assert_eq!(id(line), None, "{line}");
        }
    }

    #[test]
    fn an_escaped_member_name_is_read_as_the_decoder_reads_it() {
        assert_eq!(id(r#"{"\u0069d":5,"method":"x","params":{"pad":"#), Some(RequestId::from(5)));
    }
}
