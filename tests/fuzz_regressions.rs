//! Replays every input of `tests/data/fuzz-regressions/<target>/` through
//! the harness that cargo-fuzz target runs (`accord::fuzzing::<target>`).
//! A panic fails the test and names the file.
//!
//! Every target of `fuzz/Cargo.toml` must have a folder here with at least
//! one input: a missing or empty folder fails, so a replay can never pass
//! by replaying nothing.
#![cfg(feature = "testkit")]

use std::fs;
use std::path::{Path, PathBuf};

/// A harness: one input, a panic on a finding.
type Harness = fn(&[u8]);

/// Every fuzz target and the harness it runs.
const TARGETS: [(&str, Harness); 6] = [
    ("formula", accord::fuzzing::formula),
    ("condition", accord::fuzzing::condition),
    ("campaign", accord::fuzzing::campaign),
    ("request", accord::fuzzing::request),
    ("quota_key", accord::fuzzing::quota_key),
    ("content_query", accord::fuzzing::content_query),
];

fn regressions() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz-regressions")
}

/// The inputs of `target`, sorted; fails when there are none.
fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = regressions().join(target);
    let entries = fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: every fuzz target needs its regression folder",
            dir.display()
        )
    });
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "{}: no regression input; every fuzz target needs at least one",
        dir.display()
    );
    files
}

fn replay(target: &str) {
    let harness = TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, h)| *h)
        .unwrap();
    for file in inputs(target) {
        let data = fs::read(&file).unwrap();
        let outcome = std::panic::catch_unwind(|| harness(&data));
        assert!(
            outcome.is_ok(),
            "{target}: {} crashes again",
            file.display()
        );
    }
}

#[test]
fn formula() {
    replay("formula");
}

#[test]
fn condition() {
    replay("condition");
}

#[test]
fn campaign() {
    replay("campaign");
}

#[test]
fn request() {
    replay("request");
}

#[test]
fn quota_key() {
    replay("quota_key");
}

#[test]
fn content_query() {
    replay("content_query");
}

/// The targets here are exactly the `[[bin]]`s of `fuzz/Cargo.toml`, and
/// the folders are named after them: a target added there without inputs
/// here, or a folder with a typo, fails.
#[test]
fn every_target_has_a_folder_and_every_folder_a_target() {
    let manifest =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/Cargo.toml")).unwrap();
    let mut bins: Vec<&str> = manifest
        .split("[[bin]]")
        .skip(1)
        .filter_map(|section| {
            let line = section
                .lines()
                .find(|l| l.trim_start().starts_with("name"))?;
            line.split('"').nth(1)
        })
        .collect();
    bins.sort_unstable();
    let mut targets: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    targets.sort_unstable();
    assert_eq!(bins, targets, "fuzz/Cargo.toml targets vs this file");
    for target in &targets {
        inputs(target);
    }
    for entry in fs::read_dir(regressions()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let name = path.file_name().unwrap().to_str().unwrap();
            assert!(targets.contains(&name), "{name} is not a fuzz target");
        }
    }
}
