//! A strict reader of the Prometheus text exposition format (0.0.4), for the tests that
//! scrape `/metrics`: every line must be a `# HELP`, a `# TYPE`, blank, or a sample
//! `name{label="value",...} value`; anything else fails the test, so a malformed page
//! cannot pass as an empty one.

use std::collections::BTreeMap;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// A parsed page: its samples and each family's declared type.
#[derive(Debug, Default)]
pub struct Page {
    pub samples: Vec<Sample>,
    pub types: BTreeMap<String, String>,
}

impl Page {
    /// The sum of the samples named `name` whose labels include every pair of `with`.
    pub fn sum(&self, name: &str, with: &[(&str, &str)]) -> f64 {
        self.matching(name, with).map(|s| s.value).sum()
    }

    /// The samples named `name` whose labels include every pair of `with`.
    pub fn matching<'a>(&'a self, name: &'a str, with: &'a [(&str, &str)]) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples
            .iter()
            .filter(move |s| s.name == name && with.iter().all(|(k, v)| s.labels.get(*k).is_some_and(|x| x == v)))
    }
}

/// Parses a whole page; panics naming the first line that is not the format.
pub fn parse(text: &str) -> Page {
    let mut page = Page::default();
    for (n, line) in text.lines().enumerate() {
        let fail = |why: &str| -> ! { panic!("line {}: {why}: {line:?}", n + 1) };
        if line.trim().is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut words = rest.splitn(3, ' ');
            match (words.next(), words.next(), words.next()) {
                (Some("HELP"), Some(name), _) if is_name(name) => {}
                (Some("TYPE"), Some(name), Some(kind))
                    if is_name(name) && ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) =>
                {
                    page.types.insert(name.to_owned(), kind.to_owned());
                }
                _ => fail("a comment that is neither HELP nor TYPE"),
            }
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap_or_else(|| fail("no value"));
        let name = &line[..name_end];
        if !is_name(name) {
            fail("not a metric name");
        }
        let mut rest = &line[name_end..];
        let mut labels = BTreeMap::new();
        if let Some(body) = rest.strip_prefix('{') {
            let mut chars = body.char_indices().peekable();
            loop {
                let key_start = match chars.peek() {
                    Some((_, '}')) => {
                        chars.next();
                        break;
                    }
                    Some((i, _)) => *i,
                    None => fail("unterminated labels"),
                };
                let eq = body[key_start..].find('=').unwrap_or_else(|| fail("a label without '='")) + key_start;
                let key = &body[key_start..eq];
                if !is_name(key) || body.as_bytes().get(eq + 1) != Some(&b'"') {
                    fail("a malformed label");
                }
                while chars.peek().is_some_and(|(i, _)| *i <= eq + 1) {
                    chars.next();
                }
                let mut value = String::new();
                loop {
                    match chars.next() {
                        Some((_, '\\')) => match chars.next() {
                            Some((_, 'n')) => value.push('\n'),
                            Some((_, c @ ('\\' | '"'))) => value.push(c),
                            _ => fail("a bad escape"),
                        },
                        Some((_, '"')) => break,
                        Some((_, c)) => value.push(c),
                        None => fail("an unterminated label value"),
                    }
                }
                if labels.insert(key.to_owned(), value).is_some() {
                    fail("a repeated label");
                }
                match chars.next() {
                    Some((_, ',')) => {}
                    Some((_, '}')) => break,
                    _ => fail("labels not separated by ','"),
                }
            }
            let consumed = chars.peek().map_or(body.len(), |(i, _)| *i);
            rest = &body[consumed..];
        }
        let mut fields = rest.split_whitespace();
        let value = match fields.next() {
            Some("+Inf") => f64::INFINITY,
            Some("-Inf") => f64::NEG_INFINITY,
            Some("NaN") => f64::NAN,
            Some(v) => v.parse().unwrap_or_else(|_| fail("not a number")),
            None => fail("no value"),
        };
        if let Some(ts) = fields.next() {
            ts.parse::<i64>().unwrap_or_else(|_| fail("not a timestamp"));
        }
        if fields.next().is_some() || !rest.starts_with(' ') {
            fail("trailing text");
        }
        page.samples.push(Sample { name: name.to_owned(), labels, value });
    }
    page
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

#[test]
fn the_reader_takes_the_format_and_refuses_anything_else() {
    let page = parse(
        "# HELP a_total A thing\n# TYPE a_total counter\na_total{k=\"v\\\"x\",b=\"2\"} 3\nh_bucket{le=\"+Inf\"} 1\nb 2.5 1700000000\n",
    );
    assert_eq!(page.types["a_total"], "counter");
    assert_eq!(page.sum("a_total", &[("k", "v\"x")]), 3.0);
    assert_eq!(page.sum("h_bucket", &[("le", "+Inf")]), 1.0);
    assert_eq!(page.sum("b", &[]), 2.5);
    for bad in ["a{k=v} 1", "a 1 2 3", "# COMMENT x", "a{k=\"v\"}1", "1a 2", "a{k=\"v\"} one"] {
        assert!(std::panic::catch_unwind(|| parse(bad)).is_err(), "{bad:?} was taken");
    }
}
