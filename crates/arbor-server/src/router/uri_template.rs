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

    /// The decoded variable values that expand to `uri`, if any.
    pub(crate) fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut values = Vec::new();
        match_parts(&self.parts, uri, &mut values).then_some(values)
    }
}

fn match_parts(parts: &[Part], uri: &str, values: &mut Vec<(String, String)>) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return uri.is_empty();
    };
    match first {
        Part::Literal(literal) => {
            uri.strip_prefix(literal.as_str()).is_some_and(|tail| match_parts(rest, tail, values))
        }
        Part::Var { name, reserved } => {
            // Try every place the value could end, shortest first; the next part is a
            // literal (or the end), so backtracking is bounded by the URI's length.
            for end in value_ends(uri, *reserved) {
                let Some(value) = percent_decode(&uri[..end]) else {
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

/// The byte offsets at which a non-empty variable value starting at the front of `uri`
/// may end: after each allowed character or whole `%XX` triplet.
fn value_ends(uri: &str, reserved: bool) -> Vec<usize> {
    let bytes = uri.as_bytes();
    let mut ends = Vec::new();
    let mut i = 0;
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
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
