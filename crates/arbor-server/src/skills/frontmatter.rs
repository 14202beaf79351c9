//! A `SKILL.md`'s front matter: found by the block rule the conformance suite uses,
//! parsed as YAML into JSON, and checked (`name`, `description`, the naming rule).
//!
//! The block is `---` on the first line (after an optional byte order mark), then
//! everything up to the next line that is `---` (trailing spaces or tabs allowed). The
//! YAML is read with `serde_norway` straight into `serde_json` values, so what a skill
//! entry carries is the author's front matter verbatim: every key, strings, maps and
//! lists as YAML 1.2's core schema reads them (`yes` stays a string). This module does not
//! decide where a skill lives or what its folder is called (the scanner compares the
//! name with the folder). Invariant: a front matter that [`parse`] accepts has a `name`
//! that satisfies [`valid_name`] and a non-empty `description` of at most 1024 characters.

use std::sync::LazyLock;

use arbor_protocol::model::common::JsonObject;
use regex::Regex;
use serde_json::Value;

use super::error::FrontmatterError;

/// The conformance suite's block rule, verbatim.
static BLOCK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)").expect("a valid pattern"));

/// The naming rule without its "no `--`" part, which the regex crate cannot say.
static NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$").expect("a valid pattern"));

/// The Agent Skills bound on `description`, in characters.
const MAX_DESCRIPTION_CHARS: usize = 1024;

/// A parsed, checked front matter.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Frontmatter {
    /// Every key the author wrote.
    pub(crate) fields: JsonObject,
    pub(crate) name: String,
    pub(crate) description: String,
}

/// Whether `name` satisfies the Agent Skills naming rule.
pub(crate) fn valid_name(name: &str) -> bool {
    NAME.is_match(name) && !name.contains("--")
}

/// Reads and checks the front matter of a `SKILL.md`'s text.
pub(crate) fn parse(text: &str) -> Result<Frontmatter, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let block = BLOCK.captures(text).and_then(|c| c.get(1)).ok_or(FrontmatterError::Missing)?;
    let value: Value = serde_norway::from_str(block.as_str()).map_err(|e| FrontmatterError::Yaml(e.to_string()))?;
    let Value::Object(fields) = value else { return Err(FrontmatterError::NotAMapping) };
    let required = |key: &'static str| match fields.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(FrontmatterError::Required(key)),
    };
    let (name, description) = (required("name")?, required("description")?);
    if !valid_name(&name) {
        return Err(FrontmatterError::BadName(name));
    }
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(FrontmatterError::LongDescription(chars));
    }
    Ok(Frontmatter { fields, name, description })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_block_is_read_verbatim_with_every_key() {
        let text = "---\nname: pdf-processing\ndescription: PDFs\nlicense: MIT\nmetadata:\n  author: a\nok: yes\n---\n\nBody\n";
        let fm = parse(text).unwrap();
        assert_eq!(fm.name, "pdf-processing");
        let expected = json!({"name": "pdf-processing", "description": "PDFs", "license": "MIT",
            "metadata": {"author": "a"}, "ok": "yes"});
        assert_eq!(Value::Object(fm.fields), expected);
    }

    #[test]
    fn crlf_and_a_byte_order_mark_read_like_lf() {
        let lf = parse("---\nname: a\ndescription: b\n---\nx").unwrap();
        let crlf = parse("\u{feff}---\r\nname: a\r\ndescription: b\r\n---  \r\nx").unwrap();
        assert_eq!(lf, crlf);
        assert!(parse("---\nname: a\ndescription: b\n---").is_ok(), "a block may end the file");
    }

    #[test]
    fn missing_or_malformed_front_matter_is_refused() {
        assert!(matches!(parse("# Just markdown\n"), Err(FrontmatterError::Missing)));
        assert!(matches!(parse("---\nname: a\ndescription: b\n"), Err(FrontmatterError::Missing)));
        assert!(matches!(parse("---\nname: [a\n---\n"), Err(FrontmatterError::Yaml(_))));
        assert!(matches!(parse("---\n- a\n---\n"), Err(FrontmatterError::NotAMapping)));
        assert!(matches!(parse("---\nname: a\n---\n"), Err(FrontmatterError::Required("description"))));
        assert!(matches!(parse("---\nname: 3\ndescription: b\n---\n"), Err(FrontmatterError::Required("name"))));
        assert!(matches!(parse("---\nname: a\ndescription: ''\n---\n"), Err(FrontmatterError::Required(_))));
        let long = format!("---\nname: a\ndescription: {}\n---\n", "x".repeat(1025));
        assert!(matches!(parse(&long), Err(FrontmatterError::LongDescription(1025))));
    }

    proptest::proptest! {
        /// Any text: no panic, and whatever is accepted satisfies the module's invariant.
        #[test]
        fn any_text_is_refused_or_accepted_with_a_valid_name(text in "(---\\n)?[a-z: \\n'\"\\[\\]{}#-]{0,120}(\\n---\\n)?") {
            if let Ok(fm) = parse(&text) {
                proptest::prop_assert!(valid_name(&fm.name));
                proptest::prop_assert!(!fm.description.is_empty() && fm.description.chars().count() <= 1024);
                proptest::prop_assert_eq!(fm.fields.get("name").and_then(Value::as_str), Some(fm.name.as_str()));
            }
        }
    }

    #[test]
    fn the_naming_rule_is_the_agent_skills_one() {
        for good in ["a", "pdf-processing", "x1-2", &"a".repeat(64)] {
            assert!(valid_name(good), "{good} refused");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a.b", &"a".repeat(65)] {
            assert!(!valid_name(bad), "{bad} accepted");
        }
        assert!(matches!(parse("---\nname: Bad\ndescription: b\n---\n"), Err(FrontmatterError::BadName(_))));
    }
}
