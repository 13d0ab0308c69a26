//! Replays every input of `tests/data/fuzz-regressions/<target>/` through
//! the harness that cargo-fuzz target runs (`accord::fuzzing::<target>`):
//! each once crashed it. A panic fails the test and names the file.
#![cfg(feature = "memory")]

use std::fs;
use std::path::Path;

fn replay(target: &str, harness: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz-regressions")
        .join(target);
    let Ok(entries) = fs::read_dir(&dir) else {
        return; // no regression for this target yet
    };
    let mut files: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
    files.sort();
    for file in files {
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
    replay("formula", accord::fuzzing::formula);
}

#[test]
fn condition() {
    replay("condition", accord::fuzzing::condition);
}

#[test]
fn campaign() {
    replay("campaign", accord::fuzzing::campaign);
}

#[test]
fn request() {
    replay("request", accord::fuzzing::request);
}

#[test]
fn quota_key() {
    replay("quota_key", accord::fuzzing::quota_key);
}

#[test]
fn content_query() {
    replay("content_query", accord::fuzzing::content_query);
}

/// The folders are named after the targets: a typo would skip a folder.
#[test]
fn every_folder_is_a_target() {
    let targets = [
        "formula",
        "condition",
        "campaign",
        "request",
        "quota_key",
        "content_query",
    ];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz-regressions");
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let name = path.file_name().unwrap().to_str().unwrap();
            assert!(targets.contains(&name), "{name} is not a fuzz target");
        }
    }
}
