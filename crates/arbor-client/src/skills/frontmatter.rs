//! A fetched `SKILL.md`'s front matter, read and compared field by field with the
//! entry's: the host rule "parse its YAML front matter and compare it field-by-field
//! against the entry's front matter, and do not load the skill on any discrepancy".
//!
//! The block is found by the conformance suite's rule (after an optional byte order mark,
//! `---` on the first line, up to the next line that is `---`), the YAML read with
//! `serde_norway` into JSON values, as arbor-server's scanner reads it, so our client
//! agrees with our server on every file. This module does not check the name rule or the
//! description's length (the entry is what the server vouches for; the comparison is the
//! check). Invariant: [`compare`] accepts only when both sides have exactly the same keys
//! and equal values (numbers compared by value, so `1` equals `1.0`).

use std::sync::LazyLock;

use arbor_protocol::model::common::JsonObject;
use regex::Regex;
use serde_json::Value;

use super::error::FrontmatterProblem;

/// The conformance suite's block rule, verbatim.
static BLOCK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)").expect("a valid pattern"));

/// The front matter of `text` as JSON, and where the body starts.
pub(crate) fn parse(text: &str) -> Result<(JsonObject, usize), FrontmatterProblem> {
    let bom = if text.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
    let captures = BLOCK.captures(&text[bom..]).ok_or(FrontmatterProblem::Missing)?;
    let (whole, block) = (captures.get(0).expect("group 0"), captures.get(1).expect("group 1"));
    let value: Value = serde_norway::from_str(block.as_str()).map_err(|e| FrontmatterProblem::Yaml(e.to_string()))?;
    match value {
        Value::Object(fields) => Ok((fields, bom + whole.end())),
        _ => Err(FrontmatterProblem::NotAMapping),
    }
}

/// The first field (in sorted order) that differs between the entry's front matter and
/// the file's, if any.
pub(crate) fn compare(entry: &JsonObject, file: &JsonObject) -> Result<(), FrontmatterProblem> {
    let mut keys: Vec<&String> = entry.keys().chain(file.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let same = match (entry.get(key), file.get(key)) {
            (Some(a), Some(b)) => same_value(a, b),
            _ => false,
        };
        if !same {
            return Err(FrontmatterProblem::Mismatch { field: key.clone() });
        }
    }
    Ok(())
}

/// JSON equality with numbers compared by value: a JSON server may send `1` for YAML's
/// `1.0`, which serde_json keeps as an integer.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64().is_some_and(|x| y.as_f64() == Some(x)),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_value(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_block_and_the_body_are_found() {
        let text = "---\nname: pdf-processing\ndescription: PDFs\nmetadata:\n  v: '1'\n---\n\nSkill body.\n";
        let (fields, body) = parse(text).unwrap();
        assert_eq!(
            Value::Object(fields),
            json!({"name": "pdf-processing", "description": "PDFs", "metadata": {"v": "1"}})
        );
        assert_eq!(&text[body..], "\nSkill body.\n");
        let (crlf, body) = parse("\u{feff}---\r\nname: a\r\ndescription: b\r\n---  \r\nx").unwrap();
        assert_eq!(Value::Object(crlf), json!({"name": "a", "description": "b"}));
        assert_eq!(body, "\u{feff}---\r\nname: a\r\ndescription: b\r\n---  \r\n".len());
    }

    #[test]
    fn a_file_without_a_mapping_block_is_refused() {
        assert_eq!(parse("# no block\n"), Err(FrontmatterProblem::Missing));
        assert_eq!(parse("---\nname: a\n"), Err(FrontmatterProblem::Missing));
        assert_eq!(parse("---\n- a\n---\n"), Err(FrontmatterProblem::NotAMapping));
        assert!(matches!(parse("---\nname: [a\n---\n"), Err(FrontmatterProblem::Yaml(_))));
    }

    #[test]
    fn any_differing_missing_or_extra_field_is_named() {
        let entry = object(json!({"name": "a", "description": "Extract PDFs", "metadata": {"n": 1}}));
        assert_eq!(compare(&entry, &entry.clone()), Ok(()));
        let numbers = object(json!({"name": "a", "description": "Extract PDFs", "metadata": {"n": 1.0}}));
        assert_eq!(compare(&entry, &numbers), Ok(()), "1 and 1.0 are the same number");
        let cases = [
            (json!({"name": "a", "description": "Exfiltrate credentials", "metadata": {"n": 1}}), "description"),
            (json!({"name": "a", "metadata": {"n": 1}}), "description"),
            (
                json!({"name": "a", "description": "Extract PDFs", "metadata": {"n": 1}, "allowed-tools": "Bash"}),
                "allowed-tools",
            ),
            (json!({"name": "a", "description": "Extract PDFs", "metadata": {"n": "1"}}), "metadata"),
            (json!({"name": "a", "description": "Extract PDFs", "metadata": {"n": 1, "m": 2}}), "metadata"),
            (json!({"name": "a", "description": "Extract PDFs", "metadata": {"n": 1}, "license": null}), "license"),
        ];
        for (file, field) in cases {
            assert_eq!(
                compare(&entry, &object(file.clone())),
                Err(FrontmatterProblem::Mismatch { field: field.into() }),
                "{file}"
            );
        }
    }
}
