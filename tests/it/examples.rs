//! The embedding examples run to completion (each checks its own story and
//! fails with an error if a step does not hold).

#[path = "../../examples/embed_memory.rs"]
mod embed_memory;

#[test]
fn embed_memory_runs() {
    embed_memory::main().unwrap();
}

#[cfg(feature = "sqlite")]
#[path = "../../examples/embed_sqlite.rs"]
#[allow(dead_code)] // its main is for `cargo run`; the test calls run()
mod embed_sqlite;

/// Run twice on one file, the second run finds what the first stored.
#[cfg(feature = "sqlite")]
#[test]
fn embed_sqlite_persists_across_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("embed.db");
    let path = path.to_str().unwrap();
    let first = embed_sqlite::run(path).unwrap();
    assert!(first.created_campaign);
    assert_eq!((first.redemptions, first.acceptances), (1, 1));
    let second = embed_sqlite::run(path).unwrap();
    assert!(!second.created_campaign, "the campaign did not persist");
    assert_eq!((second.redemptions, second.acceptances), (2, 2));
}
