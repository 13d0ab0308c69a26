//! The `accord` command: see `accord --help` and `docs/operations.md`.

fn main() -> std::process::ExitCode {
    accord::cli::main()
}
