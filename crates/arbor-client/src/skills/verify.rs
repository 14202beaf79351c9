//! The checks between a skill entry and what the server serves: the entry is usable
//! ([`check_entry`]: its `SKILL.md` URI, its name, a complete manifest of well-formed
//! lines), a URI is in the manifest ([`manifest_line`], asked before any read), and a
//! read's bytes match their line ([`verify`]: the byte length, then the SHA-256 digest).
//!
//! Pure functions over values: no I/O here (the client's `skills` calls read). The
//! invariant the callers rely on: [`verify`] returns the bytes only when both checks
//! passed, so content that failed verification never leaves this module.

use std::collections::HashSet;
use std::fmt::Write as _;

use arbor_protocol::model::content::ResourceContents;
use arbor_protocol::model::skills::{Skill as SkillEntry, SkillFile, SkillResources, SKILL_FILE};
use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::error::{Check, SkillError};

/// What an entry says about its skill, once checked.
#[derive(Debug)]
pub(crate) struct Checked<'a> {
    /// The skill root, `skill://<skill-path>` (no trailing slash).
    pub(crate) root: &'a str,
    pub(crate) name: &'a str,
    pub(crate) description: &'a str,
    /// `None` for a dynamic skill (or an entry without `resources`).
    pub(crate) manifest: Option<&'a [SkillFile]>,
}

/// Whether `digest` is `sha256:` and 64 lowercase hex digits.
fn well_formed_digest(digest: &str) -> bool {
    digest
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// Checks an entry before anything of its skill is read.
pub(crate) fn check_entry(entry: &SkillEntry) -> Result<Checked<'_>, SkillError> {
    let bad = |problem: String| SkillError::BadEntry { uri: entry.uri.clone(), problem };
    let root = entry
        .uri
        .strip_suffix(SKILL_FILE)
        .and_then(|r| r.strip_suffix('/'))
        .filter(|r| r.contains("://") && !r.ends_with("://"))
        .ok_or_else(|| bad(format!("its uri is not a <scheme>://<skill-path>/{SKILL_FILE}")))?;
    let text = |key: &str| match entry.frontmatter.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.as_str()),
        _ => Err(bad(format!("its front matter has no {key}"))),
    };
    let (name, description) = (text("name")?, text("description")?);
    let last = root.rsplit('/').next().unwrap_or_default();
    if last != name {
        return Err(bad(format!("the skill path ends in {last:?}, the front matter names {name:?}")));
    }
    let manifest = match &entry.resources {
        Some(SkillResources::Files(files)) => Some(files.as_slice()),
        Some(SkillResources::Dynamic) | None => None,
    };
    if let Some(files) = manifest {
        let mut seen = HashSet::new();
        for file in files {
            if !seen.insert(file.uri.as_str()) {
                return Err(bad(format!("its manifest lists {} twice", file.uri)));
            }
            if !well_formed_digest(&file.digest) {
                return Err(bad(format!("the digest of {} is not sha256:<64 lowercase hex>", file.uri)));
            }
            let inside = file.uri.strip_prefix(root).is_some_and(|rest| rest.len() > 1 && rest.starts_with('/'));
            if !inside {
                return Err(bad(format!("its manifest lists {}, outside the skill", file.uri)));
            }
        }
        if !seen.contains(entry.uri.as_str()) {
            return Err(bad(format!("its manifest does not list its own {SKILL_FILE}")));
        }
    }
    Ok(Checked { root, name, description, manifest })
}

/// The manifest line of `uri`, or the refusal to read it.
pub(crate) fn manifest_line<'a>(
    skill: &str,
    manifest: &'a [SkillFile],
    uri: &str,
) -> Result<&'a SkillFile, SkillError> {
    manifest
        .iter()
        .find(|f| f.uri == uri)
        .ok_or_else(|| SkillError::Unlisted { skill: skill.to_owned(), uri: uri.to_owned() })
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`.
pub(crate) fn digest_of(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in Sha256::digest(bytes) {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The one content of a read for `uri`, as raw bytes (the UTF-8 of a text, the decoded
/// bytes of a blob), and its MIME type.
pub(crate) fn content_bytes(
    uri: &str,
    contents: Vec<ResourceContents>,
) -> Result<(Vec<u8>, Option<String>), SkillError> {
    let mut mine: Vec<ResourceContents> = contents.into_iter().filter(|c| c.uri() == uri).collect();
    let fail = |check| SkillError::Verification { uri: uri.to_owned(), check };
    if mine.len() != 1 {
        return Err(fail(Check::Contents(mine.len())));
    }
    match mine.remove(0) {
        ResourceContents::Text(t) => Ok((t.text.into_bytes(), t.mime_type)),
        ResourceContents::Blob(b) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b.blob.as_bytes())
                .map_err(|e| fail(Check::Encoding(format!("the blob is not base64: {e}"))))?;
            Ok((bytes, b.mime_type))
        }
    }
}

/// Checks `bytes`, read from `line.uri`, against the line: the size first (a mismatch
/// is a failure whether or not the digest would match), then the digest. Returns the
/// bytes only when both hold.
pub(crate) fn verify(line: &SkillFile, bytes: Vec<u8>) -> Result<Vec<u8>, SkillError> {
    let fail = |check| SkillError::Verification { uri: line.uri.clone(), check };
    let actual = bytes.len() as u64;
    // A manifest line without `size` (the SEP's first draft) is checked by digest alone.
    if let Some(expected) = line.size.filter(|&s| s != actual) {
        return Err(fail(Check::Size { expected, actual }));
    }
    let digest = digest_of(&bytes);
    if digest != line.digest {
        return Err(fail(Check::Digest { expected: line.digest.clone(), actual: digest }));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The conformance fixture's unmodified SKILL.md and its line.
    const SKILL_MD: &str =
        "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
    const SKILL_DIGEST: &str = "sha256:a6d5f1f48af94923633d597c756194482fe5d48f74e49eb54bc9ee7c4902d5ba";

    fn entry(resources: Value) -> SkillEntry {
        serde_json::from_value(json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
            "resources": resources,
        }))
        .unwrap()
    }

    fn line(size: Option<u64>) -> SkillFile {
        let mut line = SkillFile::new("skill://pdf-processing/SKILL.md", SKILL_DIGEST, 0);
        line.size = size;
        line
    }

    #[test]
    fn the_digest_is_sha256_of_the_raw_bytes() {
        assert_eq!(digest_of(SKILL_MD.as_bytes()), SKILL_DIGEST);
        assert_eq!(SKILL_MD.len(), 97);
    }

    #[test]
    fn size_is_checked_before_the_digest_and_both_must_hold() {
        assert_eq!(verify(&line(Some(97)), SKILL_MD.into()).unwrap(), SKILL_MD.as_bytes());
        let longer = format!("{SKILL_MD}extra bytes the entry did not account for\n");
        let err = verify(&line(Some(97)), longer.into()).unwrap_err();
        assert!(matches!(err, SkillError::Verification { check: Check::Size { expected: 97, actual: 139 }, .. }));
        // Same size, other bytes: the digest catches it.
        let evil = SKILL_MD.replace("Skill body.", "Evil body!!");
        let err = verify(&line(Some(97)), evil.clone().into()).unwrap_err();
        let SkillError::Verification { uri, check: Check::Digest { expected, actual } } = err else { panic!() };
        assert_eq!((uri.as_str(), expected.as_str()), ("skill://pdf-processing/SKILL.md", SKILL_DIGEST));
        assert_eq!(actual, "sha256:897139bdff0d993abd81d0ecd89c0bf35bcbcf87c239e85a2dd69a44368f5d09");
        // Without a size (the SEP's first draft), the digest alone decides.
        assert!(verify(&line(None), SKILL_MD.into()).is_ok());
        assert!(verify(&line(None), evil.into()).is_err());
    }

    proptest::proptest! {
        /// Any content passes against its own line, and any other content (one byte
        /// changed, bytes added or removed) fails it, by size or by digest.
        #[test]
        fn only_the_listed_bytes_pass(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512),
            at in proptest::num::usize::ANY,
            flip in 1u8..=255,
            extra in proptest::collection::vec(proptest::num::u8::ANY, 1..8),
        ) {
            let line = SkillFile::new("skill://a/f", digest_of(&bytes), bytes.len() as u64);
            proptest::prop_assert_eq!(verify(&line, bytes.clone()).unwrap(), bytes.clone());
            let mut longer = bytes.clone();
            longer.extend(&extra);
            let is_size = |r: Result<Vec<u8>, SkillError>| matches!(r, Err(SkillError::Verification { check: Check::Size { .. }, .. }));
            proptest::prop_assert!(is_size(verify(&line, longer)));
            if !bytes.is_empty() {
                let mut changed = bytes.clone();
                changed[at % bytes.len()] ^= flip;
                let digest_failed = matches!(verify(&line, changed), Err(SkillError::Verification { check: Check::Digest { .. }, .. }));
                proptest::prop_assert!(digest_failed);
                proptest::prop_assert!(is_size(verify(&line, bytes[..bytes.len() - 1].to_vec())));
            }
        }
    }

    #[test]
    fn blobs_are_decoded_and_other_uris_ignored() {
        let contents: Vec<ResourceContents> = serde_json::from_value(json!([
            {"uri": "skill://pdf-processing/other.md", "text": "not this"},
            {"uri": "skill://pdf-processing/SKILL.md", "blob": "aGk="},
        ]))
        .unwrap();
        let (bytes, _) = content_bytes("skill://pdf-processing/SKILL.md", contents).unwrap();
        assert_eq!(bytes, b"hi");
        let none: Vec<ResourceContents> = serde_json::from_value(json!([{"uri": "skill://x/y", "text": "t"}])).unwrap();
        assert!(matches!(
            content_bytes("skill://pdf-processing/SKILL.md", none),
            Err(SkillError::Verification { check: Check::Contents(0), .. })
        ));
        let bad: Vec<ResourceContents> = serde_json::from_value(json!([{"uri": "u", "blob": "!!"}])).unwrap();
        assert!(matches!(content_bytes("u", bad), Err(SkillError::Verification { check: Check::Encoding(_), .. })));
    }

    #[test]
    fn an_entry_must_be_usable_before_anything_is_read() {
        let own = json!({"uri": "skill://pdf-processing/SKILL.md", "digest": SKILL_DIGEST, "size": 97});
        let forms = json!({"uri": "skill://pdf-processing/references/FORMS.md", "digest": SKILL_DIGEST, "size": 1});
        let ok = entry(json!([own, forms]));
        let checked = check_entry(&ok).unwrap();
        assert_eq!((checked.root, checked.name), ("skill://pdf-processing", "pdf-processing"));
        assert_eq!(checked.manifest.unwrap().len(), 2);
        assert!(check_entry(&entry(json!("dynamic"))).unwrap().manifest.is_none());
        let bad = [
            json!([forms]),
            json!([own, own]),
            json!([own, {"uri": "skill://pdf-processing/x", "digest": "sha256:AB", "size": 1}]),
            json!([own, {"uri": "skill://other/x", "digest": SKILL_DIGEST, "size": 1}]),
            json!([own, {"uri": "skill://pdf-processingx/x", "digest": SKILL_DIGEST, "size": 1}]),
        ];
        for resources in bad {
            assert!(matches!(check_entry(&entry(resources.clone())), Err(SkillError::BadEntry { .. })), "{resources}");
        }
        let mut renamed = ok.clone();
        renamed.frontmatter.insert("name".into(), json!("other"));
        assert!(matches!(check_entry(&renamed), Err(SkillError::BadEntry { .. })));
        let mut no_file = ok;
        no_file.uri = "skill://pdf-processing/README.md".into();
        assert!(matches!(check_entry(&no_file), Err(SkillError::BadEntry { .. })));
    }
}
