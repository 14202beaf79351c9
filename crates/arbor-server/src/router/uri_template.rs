//! RFC 6570 URI templates, matched in reverse: which variable values would expand to
//! this URI?
//!
//! Supported are level-1 simple expressions `{var}` and the level-2 reserved form
//! `{+var}`. A simple value expands with every character outside the unreserved set
//! percent-encoded, so when matching, `{var}` spans only unreserved characters and `%XX`
//! triplets: `test://items/{id}/data` matches `test://items/a%2Fb/data` (id = `a/b`) but
//! not `test://items/a/b/data`. `{+var}` also spans reserved characters such as `/`, for
//! path-like values. Matched values are percent-decoded.
//!
//! Not supported (refused when the template is built, not silently mismatched): the other
//! operators (`#`, `.`, `/`, `;`, `?`, `&`), lists `{a,b}`, modifiers `{a:3}`/`{a*}`, and
//! two expressions with no literal text between them, which would be ambiguous.
//!
//! Matching is one pass over the URI's bytes (an automaton simulated breadth-first, see
//! "matching" below), linear in the URI's length for every template: a URI of a megabyte
//! costs milliseconds, and the router's URI cap bounds it further. When several
//! assignments would expand to the URI, the values are the shortest, from the left.
//! Invariant: a match assigns every variable a non-empty value, and expanding the template
//! with the decoded values gives back the URI up to percent-encoding.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var { name: String, reserved: bool },
}

/// A parsed URI template.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

impl fmt::Debug for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.parts).finish()
    }
}

impl UriTemplate {
    /// Parses `template`, or says why it is not one this module can match.
    pub(crate) fn parse(template: &str) -> Result<UriTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let close = rest.find('}').ok_or_else(|| format!("unclosed `{{` in {template:?}"))?;
                    let expression = &rest[1..close];
                    let (name, reserved) = match expression.strip_prefix('+') {
                        Some(name) => (name, true),
                        None => (expression, false),
                    };
                    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.') {
                        return Err(format!(
                            "unsupported expression {{{expression}}} in {template:?}: only {{var}} and {{+var}} are supported"
                        ));
                    }
                    if matches!(parts.last(), Some(Part::Var { .. })) {
                        return Err(format!("{template:?} has two expressions with no text between them"));
                    }
                    if parts.iter().any(|p| matches!(p, Part::Var { name: n, .. } if n == name)) {
                        return Err(format!("{template:?} uses the variable {name} twice"));
                    }
                    parts.push(Part::Var { name: name.to_owned(), reserved });
                    rest = &rest[close + 1..];
                }
                found => {
                    let end = found.unwrap_or(rest.len());
                    if rest[..end].contains('}') {
                        return Err(format!("stray `}}` in {template:?}"));
                    }
                    parts.push(Part::Literal(rest[..end].to_owned()));
                    rest = &rest[end..];
                }
            }
        }
        Ok(UriTemplate { parts })
    }

    /// The variable names, in order.
    pub(crate) fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var { name, .. } => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// Whether the template has no variables (it names exactly one URI).
    #[cfg(test)]
    pub(crate) fn is_literal(&self) -> bool {
        self.variables().next().is_none()
    }

    /// Whether some variable values expand to `uri` (without decoding them).
    pub(crate) fn is_match(&self, uri: &str) -> bool {
        Matcher::new(&self.parts).run(uri.as_bytes()).is_some()
    }

    /// The decoded variable values that expand to `uri`, if any.
    ///
    /// Linear in `uri`'s length: see [`Matcher`].
    pub(crate) fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let spans = Matcher::new(&self.parts).run(uri.as_bytes())?;
        let names = self.variables();
        names
            .zip(spans)
            .map(|(name, (start, end))| Some((name.to_owned(), percent_decode(&uri[start..end])?)))
            .collect()
    }
}

// ===== matching =====
//
// Matching is a breadth-first simulation of the template's automaton over the URI's bytes
// (a Pike VM): every live thread advances one byte at a time, and two threads that reach
// the same state at the same position are the same from then on, so only the first, the
// one the old backtracking search would have tried first, is kept. Each state is thus
// visited at most once per position, which makes a match cost O(n · S · k) for a URI of n
// bytes, a template of S states (its literal bytes plus 25 per variable) and k variables
// (each thread carries its k value spans), with no allocation per byte: for
// `demo://notes/{id}` a handful of threads at any one time, whatever the URI.
//
// A variable's states know its value's UTF-8 decoding state, so a value is ended only
// where its percent-decoded bytes are valid UTF-8, and a `%XX` triplet is read whole at its
// `%` (the two digits are then skipped), so no prefix is ever decoded twice. Priority
// reproduces the backtracking search exactly: a variable ends as soon as it can (shortest
// values first, from the left), and only if the rest cannot match does it grow.

/// Where a UTF-8 decoder is between characters: after a whole character (`ACCEPT`), or
/// expecting continuation bytes, some with a narrowed first range (Unicode 15, table 3-7:
/// no overlong forms, no surrogates, nothing past U+10FFFF).
mod utf8 {
    pub(super) const ACCEPT: u8 = 0;
    const CONT1: u8 = 1;
    const CONT2: u8 = 2;
    const CONT3: u8 = 3;
    const AFTER_E0: u8 = 4;
    const AFTER_ED: u8 = 5;
    const AFTER_F0: u8 = 6;
    const AFTER_F4: u8 = 7;
    /// How many states there are.
    pub(super) const STATES: usize = 8;

    /// The state after `byte`, or `None` if no valid UTF-8 continues this way.
    pub(super) fn step(state: u8, byte: u8) -> Option<u8> {
        let next = match (state, byte) {
            (ACCEPT, 0x00..=0x7f) => ACCEPT,
            (ACCEPT, 0xc2..=0xdf) => CONT1,
            (ACCEPT, 0xe0) => AFTER_E0,
            (ACCEPT, 0xe1..=0xec | 0xee..=0xef) => CONT2,
            (ACCEPT, 0xed) => AFTER_ED,
            (ACCEPT, 0xf0) => AFTER_F0,
            (ACCEPT, 0xf1..=0xf3) => CONT3,
            (ACCEPT, 0xf4) => AFTER_F4,
            (CONT1, 0x80..=0xbf) => ACCEPT,
            (CONT2, 0x80..=0xbf) => CONT1,
            (CONT3, 0x80..=0xbf) => CONT2,
            (AFTER_E0, 0xa0..=0xbf) => CONT1,
            (AFTER_ED, 0x80..=0x9f) => CONT1,
            (AFTER_F0, 0x90..=0xbf) => CONT2,
            (AFTER_F4, 0x80..=0x8f) => CONT2,
            _ => return None,
        };
        Some(next)
    }
}

/// States of one variable: `FRESH` (nothing read yet), then per UTF-8 state `u` one of
/// `AT + u` (between tokens), `SKIP2 + u` and `SKIP1 + u` (inside a `%XX` already read).
const FRESH: usize = 0;
const AT: usize = 1;
const SKIP2: usize = AT + utf8::STATES;
const SKIP1: usize = SKIP2 + utf8::STATES;
const VAR_STATES: usize = SKIP1 + utf8::STATES;

/// Where a thread is: in part `part`, at `sub` (a literal's next byte, or a variable's
/// state above). `part == parts.len()` is the end of the template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct At {
    part: usize,
    sub: usize,
}

/// The threads alive at one position, in priority order, each with its variables' spans.
struct Threads {
    list: Vec<At>,
    /// `spans[i * k .. (i + 1) * k]` belongs to `list[i]`.
    spans: Vec<(usize, usize)>,
    /// The generation in which each state was last added: a state is added once per
    /// position.
    seen: Vec<usize>,
}

impl Threads {
    fn new(states: usize) -> Self {
        Threads { list: Vec::new(), spans: Vec::new(), seen: vec![usize::MAX; states] }
    }

    fn clear(&mut self) {
        self.list.clear();
        self.spans.clear();
    }
}

/// One run of a template's automaton over one URI.
struct Matcher<'t> {
    parts: &'t [Part],
    /// The first state id of each part (and of the end, last).
    base: Vec<usize>,
    /// Each part's variable index (meaningful for variables only).
    var: Vec<usize>,
    /// How many variables there are.
    k: usize,
    /// State visits so far, for the tests' linearity check.
    work: usize,
}

impl<'t> Matcher<'t> {
    fn new(parts: &'t [Part]) -> Self {
        let (mut base, mut var, mut next, mut k) = (Vec::with_capacity(parts.len() + 1), Vec::new(), 0, 0);
        for part in parts {
            base.push(next);
            var.push(k);
            next += match part {
                Part::Literal(literal) => literal.len(),
                Part::Var { .. } => {
                    k += 1;
                    VAR_STATES
                }
            };
        }
        base.push(next);
        Matcher { parts, base, var, k, work: 0 }
    }

    fn states(&self) -> usize {
        self.base[self.parts.len()] + 1
    }

    /// The byte spans of the variables' values, if the template matches `uri` whole.
    fn run(&mut self, uri: &[u8]) -> Option<Vec<(usize, usize)>> {
        let mut now = Threads::new(self.states());
        let mut next = Threads::new(self.states());
        let mut scratch = vec![(0, 0); self.k];
        self.add(&mut now, 0, At { part: 0, sub: 0 }, &mut scratch, 0);
        for pos in 0..uri.len() {
            if now.list.is_empty() {
                return None;
            }
            let generation = pos + 1;
            next.clear();
            for i in 0..now.list.len() {
                scratch.copy_from_slice(&now.spans[i * self.k..(i + 1) * self.k]);
                if let Some(to) = self.step(now.list[i], uri, pos) {
                    self.add(&mut next, generation, to, &mut scratch, pos + 1);
                }
            }
            std::mem::swap(&mut now, &mut next);
        }
        let end = self.parts.len();
        let winner = now.list.iter().position(|at| at.part == end)?;
        Some(now.spans[winner * self.k..(winner + 1) * self.k].to_vec())
    }

    /// Where a thread at `at` goes on the byte at `pos`, if anywhere.
    fn step(&self, at: At, uri: &[u8], pos: usize) -> Option<At> {
        let byte = uri[pos];
        let sub = match self.parts.get(at.part)? {
            Part::Literal(literal) => (literal.as_bytes()[at.sub] == byte).then_some(at.sub + 1)?,
            Part::Var { reserved, .. } => match at.sub {
                FRESH | AT..SKIP2 => {
                    let state = if at.sub == FRESH { utf8::ACCEPT } else { (at.sub - AT) as u8 };
                    if byte == b'%' {
                        // The whole triplet is read here; its digits are then skipped.
                        let decoded = hex_pair(uri.get(pos + 1..pos + 3)?)?;
                        SKIP2 + usize::from(utf8::step(state, decoded)?)
                    } else if is_unreserved(byte) || (*reserved && is_reserved(byte)) {
                        AT + usize::from(utf8::step(state, byte)?)
                    } else {
                        return None;
                    }
                }
                SKIP2..SKIP1 => at.sub - SKIP2 + SKIP1,
                _ => at.sub - SKIP1 + AT,
            },
        };
        Some(At { part: at.part, sub })
    }

    /// Adds the thread `at` (with `spans`) at position `pos`, following the moves that read
    /// nothing first: a literal fully read goes on to the next part, a variable that may
    /// end here ends (before it may grow), a variable entered records where it starts.
    fn add(&mut self, threads: &mut Threads, generation: usize, at: At, spans: &mut [(usize, usize)], pos: usize) {
        self.work += 1;
        let at = match self.parts.get(at.part) {
            Some(Part::Literal(literal)) if at.sub == literal.len() => At { part: at.part + 1, sub: 0 },
            _ => at,
        };
        let id = self.base[at.part] + at.sub;
        if threads.seen[id] == generation {
            // A thread tried earlier already holds this state: its match, if any, wins.
            return;
        }
        threads.seen[id] = generation;
        match self.parts.get(at.part) {
            // Literals are never empty, so a literal just entered waits for its first byte.
            Some(Part::Literal(_)) => {}
            Some(Part::Var { .. }) => {
                let v = self.var[at.part];
                if at.sub == FRESH {
                    spans[v].0 = pos;
                } else if at.sub == AT + usize::from(utf8::ACCEPT) {
                    // Ending here is tried first: shortest values win. Spans of later
                    // variables written meanwhile are rewritten when the thread gets there.
                    spans[v].1 = pos;
                    self.add(threads, generation, At { part: at.part + 1, sub: 0 }, spans, pos);
                }
            }
            // The end of the template.
            None => {}
        }
        threads.list.push(at);
        threads.spans.extend_from_slice(spans);
    }
}

/// The byte two hex digits spell, if they are two hex digits.
fn hex_pair(digits: &[u8]) -> Option<u8> {
    let digit = |b: u8| char::from(b).to_digit(16);
    Some((digit(digits[0])? * 16 + digit(digits[1])?) as u8)
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~".contains(&b)
}

fn is_reserved(b: u8) -> bool {
    b":/?#[]@!$&'()*+,;=".contains(&b)
}

/// Decodes `%XX` triplets; `None` if the bytes are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            out.push(hex_pair(bytes.get(i + 1..i + 3)?)?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    //! The automaton against the backtracking search it replaced (kept here as the
    //! oracle), on every short URI over an alphabet of the tricky tokens, and its work
    //! counted on URIs of a megabyte.

    use super::*;

    /// The matcher this module used before issue 11: it tries every end of each value,
    /// shortest first, percent-decoding each candidate prefix (quadratic).
    fn backtracking(template: &UriTemplate, uri: &str) -> Option<Vec<(String, String)>> {
        fn match_parts(parts: &[Part], uri: &str, values: &mut Vec<(String, String)>) -> bool {
            let Some((first, rest)) = parts.split_first() else {
                return uri.is_empty();
            };
            match first {
                Part::Literal(literal) => {
                    uri.strip_prefix(literal.as_str()).is_some_and(|tail| match_parts(rest, tail, values))
                }
                Part::Var { name, reserved } => {
                    for end in value_ends(uri, *reserved) {
                        let Some(value) = old_decode(&uri[..end]) else {
                            continue;
                        };
                        values.push((name.clone(), value));
                        if match_parts(rest, &uri[end..], values) {
                            return true;
                        }
                        values.pop();
                    }
                    false
                }
            }
        }
        fn value_ends(uri: &str, reserved: bool) -> Vec<usize> {
            let bytes = uri.as_bytes();
            let (mut ends, mut i) = (Vec::new(), 0);
            while i < bytes.len() {
                let b = bytes[i];
                if b == b'%' {
                    if i + 2 < bytes.len() && bytes[i + 1].is_ascii_hexdigit() && bytes[i + 2].is_ascii_hexdigit() {
                        i += 3;
                    } else {
                        break;
                    }
                } else if is_unreserved(b) || (reserved && is_reserved(b)) {
                    i += 1;
                } else {
                    break;
                }
                ends.push(i);
            }
            ends
        }
        fn old_decode(s: &str) -> Option<String> {
            let bytes = s.as_bytes();
            let (mut out, mut i) = (Vec::new(), 0);
            while i < bytes.len() {
                if bytes[i] == b'%' {
                    out.push(u8::from_str_radix(s.get(i + 1..i + 3)?, 16).ok()?);
                    i += 3;
                } else {
                    out.push(bytes[i]);
                    i += 1;
                }
            }
            String::from_utf8(out).ok()
        }
        let mut values = Vec::new();
        match_parts(&template.parts, uri, &mut values).then_some(values)
    }

    /// Templates of every supported shape: one variable or several, reserved or not,
    /// separators that values may also hold, a literal or a variable first or last.
    const TEMPLATES: &[&str] = &[
        "x://{id}",
        "x://{id}/d",
        "{a}-{b}",
        "x://{a}-{b}-e",
        "x://{+p}",
        "x://{+p}/x",
        "{+p}.t",
        "{a}.{+b}/{c}",
        "x://{a}%41{b}",
        "lit",
    ];

    /// Tokens that exercise every rule: unreserved and reserved characters, the template
    /// literals' characters, whole and broken triplets, UTF-8 lead, continuation and
    /// invalid bytes, a character no value may hold, and non-ASCII text.
    const TOKENS: &[&str] = &[
        "a", "-", ".", "/", "x", "e", "d", "%41", "%2F", "%C3", "%A9", "%E2", "%82", "%AC", "%FF", "%ED", "%A0", "%4",
        "%", " ", "é",
    ];

    /// Calls `f` on every concatenation of up to `len` tokens after `prefix`.
    fn each_uri(prefix: &str, len: usize, f: &mut impl FnMut(&str)) {
        f(prefix);
        if len == 0 {
            return;
        }
        for token in TOKENS {
            each_uri(&format!("{prefix}{token}"), len - 1, f);
        }
    }

    #[test]
    fn the_automaton_agrees_with_the_backtracking_search_on_every_short_uri() {
        let (mut compared, mut matched) = (0usize, 0usize);
        for source in TEMPLATES {
            let template = UriTemplate::parse(source).unwrap();
            let prefix = source.split('{').next().unwrap_or_default();
            for start in ["", prefix] {
                each_uri(start, 3, &mut |uri| {
                    let expected = backtracking(&template, uri);
                    assert_eq!(template.matches(uri), expected, "{source} against {uri:?}");
                    assert_eq!(template.is_match(uri), expected.is_some(), "{source} against {uri:?}");
                    compared += 1;
                    matched += usize::from(expected.is_some());
                });
            }
        }
        // 10 templates × 2 prefixes × (1 + 21 + 21² + 21³) URIs, of which many match.
        assert_eq!(compared, 10 * 2 * (1 + 21 + 441 + 9261));
        eprintln!("{matched} of {compared} matched");
        assert!(matched > 1_000, "{matched} of {compared} matched");
    }

    #[test]
    fn the_automaton_agrees_with_the_backtracking_search_on_longer_random_uris() {
        // A fixed xorshift sequence: the same URIs on every run.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for source in TEMPLATES {
            let template = UriTemplate::parse(source).unwrap();
            let prefix = source.split('{').next().unwrap_or_default();
            for _ in 0..3_000 {
                let len = (next() % 24) as usize;
                let mut uri = prefix.to_owned();
                for _ in 0..len {
                    uri.push_str(TOKENS[(next() % TOKENS.len() as u64) as usize]);
                }
                assert_eq!(template.matches(&uri), backtracking(&template, &uri), "{source} against {uri:?}");
            }
        }
    }

    /// The matcher's work (state visits) on `uri`, and its answer.
    fn work(template: &UriTemplate, uri: &str) -> (bool, usize) {
        let mut matcher = Matcher::new(&template.parts);
        let matched = matcher.run(uri.as_bytes()).is_some();
        (matched, matcher.work)
    }

    #[test]
    fn matching_a_megabyte_uri_visits_each_state_at_most_once_per_byte() {
        const MB: usize = 1 << 20;
        let cases: [(&str, String, bool); 8] = [
            // The attack: one long value, then the end.
            ("demo://notes/{id}", format!("demo://notes/{}", "a".repeat(MB)), true),
            ("demo://notes/{id}", format!("demo://notes/{}", "%41".repeat(MB / 3)), true),
            // A value that never becomes valid UTF-8 until its last byte, or never.
            ("demo://notes/{id}", format!("demo://notes/{}%A9", "%C3%A9".repeat(MB / 6)), false),
            ("demo://notes/{id}", format!("demo://notes/{}", "%C3".repeat(MB / 3)), false),
            // Separators the values may hold: every `-` is a candidate end of `a`.
            ("x://{a}-{b}-e", format!("x://{}", "a-".repeat(MB / 2)), false),
            ("x://{a}-{b}-e", format!("x://{}e", "a-".repeat(MB / 2)), true),
            // A reserved value that spans the separator it ends at.
            ("x://{+p}/x", format!("x://{}", "/".repeat(MB)), false),
            ("{a}.{+b}/{c}", format!("{}/", "a.".repeat(MB / 2)), false),
        ];
        for (source, uri, expected) in cases {
            let template = UriTemplate::parse(source).unwrap();
            let states = Matcher::new(&template.parts).states();
            let (matched, visits) = work(&template, &uri);
            assert_eq!(matched, expected, "{source} against {} bytes", uri.len());
            // At most one visit per state per byte, plus the moves that read nothing
            // (each visit causes at most one more).
            let bound = 2 * states * (uri.len() + 1);
            assert!(visits <= bound, "{source}: {visits} visits for {} bytes (bound {bound})", uri.len());
        }
    }

    #[test]
    fn a_megabyte_value_is_matched_and_decoded_whole() {
        let template = UriTemplate::parse("demo://notes/{id}").unwrap();
        let uri = format!("demo://notes/{}%C3%A9", "%41".repeat(1 << 18));
        let values = template.matches(&uri).expect("a match");
        assert_eq!(values.len(), 1);
        assert_eq!(values[0].1.len(), (1 << 18) + 2);
        assert!(values[0].1.ends_with("Aé"));
    }
}
