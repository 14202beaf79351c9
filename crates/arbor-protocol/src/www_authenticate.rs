//! The `WWW-Authenticate` grammar (RFC 9110 §11.6.1) as a client reads it: challenges,
//! each a scheme with `name=value` parameters, values tokens or quoted strings.
//!
//! Pure parsing, shared by the server's tests (which read back the challenges it builds)
//! and the client's OAuth (which acts on them); building a challenge is the server's
//! (`arbor-http`). Invariant: a value that does not follow the grammar yields `None`,
//! never a guess.

/// One challenge read from a `WWW-Authenticate` value: its scheme and parameters in order
/// (names lower-cased, values unquoted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedChallenge {
    /// The auth scheme (`Bearer`), as sent.
    pub scheme: String,
    /// `(name, value)` pairs.
    pub params: Vec<(String, String)>,
}

impl ParsedChallenge {
    /// The value of parameter `name` (case-insensitive), if present.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Reads every challenge of a `WWW-Authenticate` value (RFC 9110 §11.6.1: a scheme
/// followed by comma-separated `name=value` parameters, values tokens or quoted strings).
/// `None` when the value does not follow that grammar.
pub fn parse_challenges(value: &str) -> Option<Vec<ParsedChallenge>> {
    let mut p = Cursor { s: value.as_bytes(), i: 0 };
    let mut out: Vec<ParsedChallenge> = Vec::new();
    loop {
        p.skip_ows_and_commas();
        if p.done() {
            return Some(out);
        }
        let scheme = p.token()?;
        let mut challenge = ParsedChallenge { scheme, params: Vec::new() };
        loop {
            p.skip_ows();
            // A parameter is `name = value`; a token not followed by `=` starts the next
            // challenge.
            let save = p.i;
            p.skip_ows_and_commas();
            if p.done() {
                break;
            }
            let name = p.token()?;
            p.skip_ows();
            if p.peek() != Some(b'=') {
                p.i = save;
                break;
            }
            p.i += 1;
            p.skip_ows();
            let value = if p.peek() == Some(b'"') { p.quoted()? } else { p.token()? };
            challenge.params.push((name.to_ascii_lowercase(), value));
        }
        out.push(challenge);
    }
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn done(&self) -> bool {
        self.i >= self.s.len()
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }
    fn skip_ows_and_commas(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.i += 1;
        }
    }
    /// A `token` (RFC 9110 tchar), also accepting `/` and `:` so an unquoted URL some
    /// servers send still reads.
    fn token(&mut self) -> Option<String> {
        let start = self.i;
        while let Some(c) = self.peek() {
            let tchar = c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~/:".contains(&c);
            if !tchar {
                break;
            }
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }
    fn quoted(&mut self) -> Option<String> {
        self.i += 1;
        let mut out = Vec::new();
        loop {
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return Some(String::from_utf8_lossy(&out).into_owned());
                }
                b'\\' => {
                    self.i += 1;
                    out.push(self.peek()?);
                    self.i += 1;
                }
                c => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }
}
