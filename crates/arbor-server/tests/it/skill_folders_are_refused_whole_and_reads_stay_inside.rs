//! Bad skill folders are refused at registration with an error naming the file (no front
//! matter, a name that is not the folder's, a file over the bound, too many files, a
//! symlink out of the skill, a skill path served twice), and no request reaches a file
//! that was not scanned: traversal and absolute URIs are -32602 in both eras, and the
//! file beside the skills folder is never in an answer.

use std::fs;
use std::path::Path;

use arbor_server::skills::{FrontmatterError, SkillError, SkillSource, SkillsRefused};
use arbor_server::{Router, RouterError};
use serde_json::json;

use crate::skills_are_served_from_snapshots_in_both_eras::{connect, Era};

const SECRET: &str = "the secret beside the skills folder";

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn skill_md(name: &str) -> String {
    format!("---\nname: {name}\ndescription: A test skill\n---\n\nBody.\n")
}

/// The refusal of `source`, whose message must name the file or folder at fault.
fn refused(source: SkillSource) -> SkillsRefused {
    match Router::new("skills", "1.0.0").try_skills(source) {
        Err(RouterError::Skills(refusal)) => {
            let message = refusal.to_string();
            let named = match refusal.error() {
                SkillError::Frontmatter { path, .. }
                | SkillError::NameMismatch { path, .. }
                | SkillError::FileTooLarge { path, .. }
                | SkillError::TooManyFiles { path, .. }
                | SkillError::Escapes { path } => Some(path.display().to_string()),
                _ => None,
            };
            if let Some(path) = named {
                assert!(message.contains(&path), "{message} names {path}");
            }
            refusal
        }
        Err(other) => panic!("refused with {other}"),
        Ok(_) => panic!("the source was accepted"),
    }
}

#[test]
fn a_skill_md_without_front_matter_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("good/SKILL.md"), &skill_md("good"));
    write(&dir.path().join("plain/SKILL.md"), "# No front matter here\n");
    match refused(SkillSource::dir(dir.path())).error() {
        SkillError::Frontmatter { path, source: FrontmatterError::Missing } => {
            assert_eq!(path, &dir.path().join("plain/SKILL.md"))
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_name_that_is_not_the_folders_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("pdf-tools/SKILL.md"), &skill_md("pdf-processing"));
    match refused(SkillSource::dir(dir.path())).error() {
        SkillError::NameMismatch { name, folder, .. } => {
            assert_eq!((name.as_str(), folder.as_str()), ("pdf-processing", "pdf-tools"))
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_file_over_the_bound_or_too_many_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("big/SKILL.md"), &skill_md("big"));
    write(&dir.path().join("big/data/blob.txt"), &"x".repeat(2048));
    match refused(SkillSource::dir(dir.path()).max_file_bytes(1024)).error() {
        SkillError::FileTooLarge { path, size, max } => {
            assert_eq!((path, *size, *max), (&dir.path().join("big/data/blob.txt"), 2048, 1024))
        }
        other => panic!("{other}"),
    }
    assert!(matches!(
        refused(SkillSource::dir(dir.path()).max_files(1)).error(),
        SkillError::TooManyFiles { max: 1, .. }
    ));
    // Within the bounds, the same folder is served.
    assert!(Router::new("skills", "1.0.0").try_skills(SkillSource::dir(dir.path()).max_file_bytes(4096)).is_ok());
}

#[cfg(unix)]
#[test]
fn a_symlink_out_of_the_skill_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("secret.txt"), SECRET);
    write(&dir.path().join("skills/leaky/SKILL.md"), &skill_md("leaky"));
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), dir.path().join("skills/leaky/notes.txt")).unwrap();
    match refused(SkillSource::dir(dir.path().join("skills"))).error() {
        SkillError::Escapes { path } => assert_eq!(path, &dir.path().join("skills/leaky/notes.txt")),
        other => panic!("{other}"),
    }
}

#[test]
fn a_skill_path_served_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("twice/SKILL.md"), &skill_md("twice"));
    let router = Router::new("skills", "1.0.0").skills_dir(dir.path());
    match router.try_skill(dir.path().join("twice")) {
        Err(RouterError::Skills(refusal)) => {
            assert!(matches!(refusal.error(), SkillError::Duplicate { skill_path } if skill_path == "twice"))
        }
        other => panic!("{other:?}"),
    }
}

async fn traversal_is_invalid_params(era: Era) {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("secret.txt"), SECRET);
    write(&dir.path().join("skills/x/SKILL.md"), &skill_md("x"));
    let router = Router::new("skills", "1.0.0").skills_dir(dir.path().join("skills"));
    let (served, mut peer, _) = connect(router, era).await;
    for uri in [
        "skill://x/../../secret.txt",
        "skill://x/../../etc/passwd",
        "skill://x/%2e%2e/%2e%2e/secret.txt",
        "skill://x/./SKILL.md",
        "skill:///etc/passwd",
        "skill://x//SKILL.md",
        "skill://x\\..\\..\\secret.txt",
    ] {
        for (method, id) in [("resources/read", 1), ("resources/directory/read", 2), ("skills/get", 3)] {
            let answer = peer.call(id, method, era.params(json!({"uri": uri}))).await;
            assert_eq!(answer["error"]["code"], -32602, "{method} {uri}: {answer}");
            assert!(!answer.to_string().contains(SECRET), "{answer}");
        }
    }
    // The skill itself is still served.
    let read = peer.call(4, "resources/read", era.params(json!({"uri": "skill://x/SKILL.md"}))).await;
    assert_eq!(read["result"]["contents"][0]["text"], skill_md("x"));
    served.finish(peer).await;
}

#[tokio::test]
async fn traversal_uris_are_refused_in_a_2025_11_25_session() {
    traversal_is_invalid_params(Era::Legacy).await;
}

#[tokio::test]
async fn traversal_uris_are_refused_in_2026_07_28_requests() {
    traversal_is_invalid_params(Era::Modern).await;
}
