//! Hostile input, drawn by seed: frames no well-behaved client sends (not JSON, cut short,
//! not an object, over the size limit, nested thousands deep, the wrong `jsonrpc`, an id
//! of the wrong type), unknown method names (very long, with control and bidi characters)
//! and invalid params for every typed client request, each with the JSON-RPC error it must
//! get and the id that error must carry.
//!
//! It is bytes and JSON only, like the rest of the kit: a driver sends [`Hostile::text`]
//! over its own transport and tells the ledger the id and code ([`Hostile::id`],
//! [`Hostile::code`]). It is not a fuzzer (`crates/arbor-fuzz` is): every shape here has
//! one known right answer, so a run is an accounting, not a search.
//!
//! Invariant: every choice comes from the generator given, and an id the server cannot
//! read is `null` here (the error that answers it carries none), so the ledger matches it.

use serde_json::{json, Value};

/// Text that marks what a peer sent, so a test can count how much of it an error reflects.
pub const MARKER: char = 'Ж';

/// The shapes of a bad frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BadFrame {
    /// Bytes that are not JSON.
    NotJson,
    /// A valid request cut short.
    Truncated,
    /// JSON that is not an object: a number, a string, `null`, `true`.
    NotAnObject,
    /// A request over the size limit, its id within the first bytes.
    OversizedIdFirst,
    /// A request over the size limit, its id after the long params.
    OversizedIdLast,
    /// A request whose params are nested thousands deep.
    DeeplyNested,
    /// A request with a `jsonrpc` other than `"2.0"` (or none).
    WrongVersion,
    /// A request whose id is an object, an array, a float, a boolean or `null`.
    WrongIdType,
}

impl BadFrame {
    /// Every shape, in a fixed order.
    pub const ALL: [BadFrame; 8] = [
        BadFrame::NotJson,
        BadFrame::Truncated,
        BadFrame::NotAnObject,
        BadFrame::OversizedIdFirst,
        BadFrame::OversizedIdLast,
        BadFrame::DeeplyNested,
        BadFrame::WrongVersion,
        BadFrame::WrongIdType,
    ];

    /// One shape, drawn from `rng`.
    pub fn pick(rng: &mut fastrand::Rng) -> BadFrame {
        BadFrame::ALL[rng.usize(..BadFrame::ALL.len())]
    }
}

/// One hostile frame: its text, and the error it must get.
#[derive(Debug, Clone)]
pub struct Hostile {
    /// What `ALL` it is, for the summary.
    pub shape: BadFrame,
    /// The frame, one line (no newline in it).
    pub text: String,
    /// The id the error must carry: `null` when the server cannot read one.
    pub id: Value,
    /// The JSON-RPC error code it must get.
    pub code: i64,
}

/// How deep [`BadFrame::DeeplyNested`] nests.
pub const DEPTH: usize = 5_000;

/// A frame of `shape` for the request id `id` (used where the frame has a readable id),
/// sized against `max_frame` bytes (the limit an oversized frame must exceed).
pub fn bad_frame(rng: &mut fastrand::Rng, shape: BadFrame, id: &Value, max_frame: usize) -> Hostile {
    let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string();
    let (text, id, code) = match shape {
        BadFrame::NotJson => {
            let garbage = ["{not json", "}", "{\"jsonrpc\": 2.0,,}", "\u{1}\u{2}", "{'id': 1}", "nul", "[1,"];
            (garbage[rng.usize(..garbage.len())].to_owned(), Value::Null, -32700)
        }
        BadFrame::Truncated => {
            let cut = rng.usize(1..ping.len() - 1);
            (ping[..cut].to_owned(), Value::Null, -32700)
        }
        BadFrame::NotAnObject => {
            let scalars = ["42", "\"ping\"", "null", "true", "-1.5e3"];
            (scalars[rng.usize(..scalars.len())].to_owned(), Value::Null, -32600)
        }
        BadFrame::OversizedIdFirst => {
            let pad = "x".repeat(max_frame + rng.usize(1..1024));
            let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"pad":"{pad}"}}}}"#);
            (text, id.clone(), -32600)
        }
        BadFrame::OversizedIdLast => {
            // Past the first bytes the transport keeps, so the id is not certain.
            let pad = "y".repeat(max_frame.max(16 * 1024) + rng.usize(1..1024));
            let text = format!(r#"{{"jsonrpc":"2.0","method":"ping","params":{{"pad":"{pad}"}},"id":{id}}}"#);
            (text, Value::Null, -32600)
        }
        BadFrame::DeeplyNested => {
            let (open, close) = if rng.bool() { ("[", "]") } else { ("{\"a\":", "}") };
            let deep = format!("{}1{}", open.repeat(DEPTH), close.repeat(DEPTH));
            let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"deep":{deep}}}}}"#);
            (text, id.clone(), -32600)
        }
        BadFrame::WrongVersion => {
            let versions = [json!("1.0"), json!(2.0), json!("2"), json!(null)];
            let mut frame = json!({"id": id, "method": "ping"});
            if rng.u8(..4) > 0 {
                frame["jsonrpc"] = versions[rng.usize(..versions.len())].clone();
            }
            (frame.to_string(), id.clone(), -32600)
        }
        BadFrame::WrongIdType => {
            let ids = [json!({"n": 1}), json!([1]), json!(1.5), json!(true), json!(null)];
            let frame = json!({"jsonrpc": "2.0", "id": ids[rng.usize(..ids.len())], "method": "ping"});
            (frame.to_string(), Value::Null, -32600)
        }
    };
    Hostile { shape, text, id, code }
}

/// A method name no revision defines: a plausible one, a very long one, or one with
/// control and bidi characters, each carrying [`MARKER`]s to count in the error.
pub fn unknown_method(rng: &mut fastrand::Rng) -> String {
    match rng.u8(..3) {
        0 => format!("tools/{}{MARKER}", ["frobnicate", "delete", "exec", "list2"][rng.usize(..4)]),
        1 => MARKER.to_string().repeat(rng.usize(1_000..20_000)),
        _ => {
            let hidden = ['\u{0}', '\u{7}', '\u{1b}', '\n', '\r', '\u{202E}', '\u{2066}', '\u{200B}', '\u{FEFF}'];
            (0..rng.usize(10..400))
                .map(|i| if i % 3 == 0 { hidden[rng.usize(..hidden.len())] } else { MARKER })
                .collect()
        }
    }
}

/// Hostile text for a string member: long, or with hidden characters, with [`MARKER`]s.
pub fn hostile_text(rng: &mut fastrand::Rng) -> String {
    if rng.bool() {
        MARKER.to_string().repeat(rng.usize(500..5_000))
    } else {
        format!("{MARKER}\u{202E}{MARKER}\u{1b}[2J{MARKER}\n{}", MARKER.to_string().repeat(rng.usize(..300)))
    }
}

/// Which era's wire a request is for, where the answers differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25 and before: an unknown resource is -32002.
    Legacy,
    /// 2026-07-28: an unknown resource is -32602 (-32002 is retired).
    Modern,
}

/// Invalid params for a typed client request (method, params, code): each is -32602,
/// but an unknown resource, which is -32002 on the legacy wire; `text` is hostile text
/// placed where the server may reflect it. The server must advertise every method used
/// (tools, prompts, resources with subscriptions, tasks), else -32601 comes first:
/// `served` says which methods the server under test has, and only those are drawn.
pub fn invalid_params(
    rng: &mut fastrand::Rng,
    text: &str,
    era: Era,
    served: impl Fn(&str) -> bool,
) -> (&'static str, Value, i64) {
    let cases: [(&str, Value); 17] = [
        ("tools/call", json!({"arguments": {}})),
        ("tools/call", json!({"name": 7})),
        ("tools/call", json!({"name": text})),
        ("tools/call", json!({"name": "fault", "arguments": "not an object"})),
        ("resources/read", json!({})),
        ("resources/read", json!({"uri": text})),
        ("prompts/get", json!({"name": text})),
        ("prompts/get", json!({"name": ["x"]})),
        ("completion/complete", json!({"ref": {"type": text}, "argument": {"name": "a", "value": "b"}})),
        ("logging/setLevel", json!({"level": text})),
        ("resources/subscribe", json!({"uri": 12})),
        ("tools/list", json!({"cursor": text})),
        ("prompts/list", json!({"cursor": 5})),
        ("resources/list", json!({"cursor": text})),
        ("resources/templates/list", json!({"cursor": {}})),
        ("tasks/get", json!({"taskId": text})),
        ("tasks/cancel", json!({})),
    ];
    let cases: Vec<_> = cases.into_iter().filter(|(method, _)| served(method)).collect();
    let (method, params) = cases[rng.usize(..cases.len())].clone();
    let unknown_resource = method == "resources/read" && params.get("uri").is_some();
    let code = if unknown_resource && era == Era::Legacy { -32002 } else { -32602 };
    (method, params, code)
}

/// Checks that an error's message and data reflect at most `max_reflected` characters of
/// peer text per reflected member (counted by [`MARKER`]s, at most `members` of them) and
/// contain no control, bidi or invisible character; returns the reason when not.
pub fn reflection_fault(error: &Value, max_reflected: usize, members: usize) -> Option<String> {
    let text = error.to_string();
    let markers = text.chars().filter(|c| *c == MARKER).count();
    if markers > max_reflected * members {
        return Some(format!("{markers} characters of peer text reflected (bound {max_reflected} x {members})"));
    }
    let message = error["message"].as_str().unwrap_or_default();
    let hidden = |s: &str| {
        s.chars().find(|c| {
            c.is_control() || matches!(c, '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
        })
    };
    if let Some(c) = hidden(message) {
        return Some(format!("a hidden character U+{:04X} in the message", u32::from(c)));
    }
    let data = error.get("data").map(|d| d.to_string()).unwrap_or_default();
    // The data as JSON text: an escaped control character is fine, a raw bidi one is not.
    if let Some(c) = hidden(&data) {
        return Some(format!("a hidden character U+{:04X} in the data", u32::from(c)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::Seed;

    #[test]
    fn every_bad_frame_is_one_line_and_a_seed_fixes_them() {
        let draw = |seed: u64| {
            let mut rng = Seed::fixed(seed).rng(3);
            (0..200)
                .map(|n| {
                    let shape = BadFrame::pick(&mut rng);
                    bad_frame(&mut rng, shape, &json!(n), 512).text
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(1), draw(1));
        assert!(draw(1).iter().all(|t| !t.contains('\n')));
        let long = unknown_method(&mut Seed::fixed(5).rng(0));
        assert!(long.contains(MARKER));
    }

    #[test]
    fn a_reflection_over_the_bound_or_with_a_hidden_character_is_found() {
        let fine = json!({"code": -32601, "message": format!("Method not found: {}…", "Ж".repeat(200))});
        assert_eq!(reflection_fault(&fine, 200, 1), None);
        let long = json!({"code": -32601, "message": "Ж".repeat(201)});
        assert!(reflection_fault(&long, 200, 1).is_some());
        let bidi = json!({"code": -32601, "message": "a\u{202E}b"});
        assert!(reflection_fault(&bidi, 200, 1).is_some());
    }
}
