//! Replays every committed fuzz corpus (`fuzz/corpus/<target>/`) through its target's
//! body on the stable toolchain, so CI re-checks every input the fuzzer ever kept,
//! crashers included, without nightly or libFuzzer.
//!
//! It does not fuzz: it runs the saved inputs once each. Invariant: every target of
//! `arbor_fuzz::TARGETS` has a non-empty corpus directory, and every directory under
//! `fuzz/corpus/` names a target (a renamed target cannot leave its corpus unreplayed).

use std::path::{Path, PathBuf};

/// `fuzz/corpus`, or the directory `ARBOR_FUZZ_CORPUS` names (to replay a working corpus,
/// `fuzz/work`, on stable by hand).
fn corpus_root() -> PathBuf {
    match std::env::var_os("ARBOR_FUZZ_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus"),
    }
}

#[test]
fn every_corpus_directory_names_a_target_and_every_target_has_seeds() {
    let root = corpus_root();
    for entry in std::fs::read_dir(&root).expect("fuzz/corpus exists") {
        let name = entry.expect("a directory entry").file_name().into_string().expect("a UTF-8 name");
        assert!(arbor_fuzz::TARGETS.iter().any(|(t, _)| *t == name), "fuzz/corpus/{name} names no target");
    }
    for (name, _) in arbor_fuzz::TARGETS {
        let files = std::fs::read_dir(root.join(name)).map(|d| d.count()).unwrap_or(0);
        assert!(files > 0, "fuzz/corpus/{name} is missing or empty");
    }
}

#[test]
fn every_corpus_file_passes_its_target() {
    let root = corpus_root();
    let mut total = 0;
    for (name, body) in arbor_fuzz::TARGETS {
        let Ok(dir) = std::fs::read_dir(root.join(name)) else { continue };
        let mut files: Vec<PathBuf> = dir.map(|e| e.expect("a directory entry").path()).collect();
        files.sort();
        for file in files {
            let data = std::fs::read(&file).expect("a corpus file reads");
            // The file's name is in the failure, so the input can be found and replayed.
            if let Err(panic) = std::panic::catch_unwind(|| body(&data)) {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                panic!("{name}: {} fails: {why}", file.display());
            }
            total += 1;
        }
    }
    println!("replayed {total} corpus files");
    assert!(total > 0);
}
