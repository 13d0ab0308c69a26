//! The `accord` command: see `accord --help` and `docs/operations.md`.

/// The server allocates and frees small blocks on every request (parsed
/// bodies, responses, a search's hits); mimalloc serves them from
/// per-thread pages. With the system allocator (glibc) redeems over HTTP
/// ran about a quarter slower: see docs/benchmarks.md, "The server's
/// allocator".
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    accord::cli::main()
}
