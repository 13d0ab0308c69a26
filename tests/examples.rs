//! The embedding examples run to completion (each checks its own story and
//! fails with an error if a step does not hold).

#[path = "../examples/embed_memory.rs"]
mod embed_memory;

#[test]
fn embed_memory_runs() {
    embed_memory::main().unwrap();
}
