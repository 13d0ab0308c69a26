//! The Accord HTTP service as an example: the same program as the `accord`
//! command (`cargo run --release`), kept so that programs and tests that
//! start the server in-process (`examples/load`, the reliability tests)
//! can name it as `server::start(server::Args { … })`.
//!
//! ```sh
//! cargo run --release --example server -- --demo   # = cargo run --release -- --demo
//! ```
//!
//! Every flag, its environment variable and its TOML key:
//! `docs/operations.md`.

pub use accord::cli::serve::start;
#[allow(unused_imports)]
pub use accord::cli::{BoxError, ServeArgs as Args, ServeFlags, Started};

fn main() -> std::process::ExitCode {
    accord::cli::main()
}
