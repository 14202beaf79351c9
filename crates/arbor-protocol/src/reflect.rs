//! Text a peer sent, made fit to be sent back in an error: [`clamp`] (and the
//! allocation-free [`Clamped`] for `format!`) keep at most [`MAX_REFLECTED_CHARS`]
//! characters and escape what could hide or reorder the text around it.
//!
//! Every error message or `data` member that echoes client-supplied text (a method,
//! tool, prompt or resource name, a URI, a header value, a session id, a version) goes
//! through here, so a 3 MB method name costs an error of a few hundred bytes and a
//! right-to-left override cannot make a log line or a UI read backwards. It is not a
//! sanitiser for HTML or shells, and not for text the server wrote itself.
//!
//! Invariant: the output has at most `MAX_REFLECTED_CHARS` characters plus the one-char
//! truncation mark `…`, counted in chars (never cutting a UTF-8 sequence), and contains no
//! control character (Unicode `Cc`) and no bidi or invisible format character: each is
//! written as `\u{XXXX}`, which counts towards the limit.

use std::borrow::Cow;
use std::fmt::{self, Write};

/// The most characters of peer text an error reflects.
pub const MAX_REFLECTED_CHARS: usize = 200;

/// Marks reflected text that was cut.
pub const TRUNCATION_MARK: char = '…';

/// Whether `c` is written escaped: controls (C0, DEL, C1), the bidi embeddings,
/// overrides, isolates and marks, and the invisible format characters that could make
/// reflected text look like something else (zero-width joiners, line and paragraph
/// separators, word joiners, the byte-order mark).
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2069}'
                | '\u{FEFF}'
        )
}

/// `text` clamped for reflection: borrowed when it is already fit (short, nothing
/// hidden), otherwise rewritten.
pub fn clamp(text: &str) -> Cow<'_, str> {
    if text.chars().take(MAX_REFLECTED_CHARS + 1).count() <= MAX_REFLECTED_CHARS && !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len().min(4 * MAX_REFLECTED_CHARS + 8));
    let _ = write!(out, "{}", Clamped(text));
    Cow::Owned(out)
}

/// Bytes a peer sent (a header value that may not be UTF-8), clamped: invalid sequences
/// become U+FFFD first.
pub fn clamp_bytes(bytes: &[u8]) -> String {
    // Enough bytes for the limit even if every char were four bytes; the rest is cut.
    let head = &bytes[..bytes.len().min(4 * (MAX_REFLECTED_CHARS + 1))];
    let lossy = String::from_utf8_lossy(head);
    let mut out = clamp(&lossy).into_owned();
    if head.len() < bytes.len() && !out.ends_with(TRUNCATION_MARK) {
        out.push(TRUNCATION_MARK);
    }
    out
}

/// Displays its text clamped, without allocating: `format!("Unknown tool: {}", Clamped(name))`.
#[derive(Clone, Copy, Debug)]
pub struct Clamped<'a>(pub &'a str);

impl fmt::Display for Clamped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut written = 0usize;
        for c in self.0.chars() {
            // Every hidden char is in the BMP, so its escape is `\u{XXXX}`, 8 chars.
            let len = if is_hidden(c) { 8 } else { 1 };
            // An escape is never split: it fits whole or the text is cut before it.
            if written + len > MAX_REFLECTED_CHARS {
                return f.write_char(TRUNCATION_MARK);
            }
            if len == 1 {
                f.write_char(c)?;
            } else {
                write!(f, "\\u{{{:04X}}}", u32::from(c))?;
            }
            written += len;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_plain_text_is_borrowed() {
        assert!(matches!(clamp("tools/call"), Cow::Borrowed("tools/call")));
    }
}
