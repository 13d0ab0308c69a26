//! The `accord` command (feature `cli`, on by default): `serve` (the
//! default), `migrate`, `token`, `export`, `import`, `purge`, `codes`,
//! `consent check` (the integrity check of stored consent records), and
//! the offline verifiers `ledger verify` and `receipt verify`.
//!
//! Every flag is also read from an environment variable (`ACCORD_` and the
//! flag's name in capitals, `--database-url` → `ACCORD_DATABASE_URL`) and
//! from an optional TOML file (`--config FILE` or `ACCORD_CONFIG`) whose
//! keys are the flags' names (`database-url = "sqlite://accord.db"`). A
//! flag on the command line wins over the environment, which wins over the
//! file, which wins over the default. `docs/operations.md` lists them all.
//!
//! This is the outermost adapter: it builds stores, the HTTP router and the
//! admin console from configuration; nothing in the library depends on it.

mod codes;
mod config;
mod consent;
mod demo;
mod evidence;
mod migrate;
mod open;
mod purge;
pub mod serve;
#[cfg(feature = "otel")]
mod telemetry;
mod token;
mod transfer;
mod verify;
#[cfg(feature = "webhooks")]
pub mod webhooks;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use codes::{CodesCommand, PoolArgs};
pub use consent::{ConsentCheckArgs, ConsentCommand};
pub use evidence::EvidenceFlags;
pub use migrate::{migrate, MigrateArgs};
pub use purge::PurgeArgs;
pub use serve::{ServeArgs, ServeFlags, Started};
pub use token::{token, TokenArgs};
pub use transfer::{ExportArgs, ImportArgs};
pub use verify::{HeadArgs, LedgerCommand, LedgerVerifyArgs, ReceiptCommand, ReceiptVerifyArgs};

/// Any error of a command.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Accord: consent and promotions over HTTP.
#[derive(Debug, Parser)]
#[command(
    name = "accord",
    version,
    about,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// A TOML file of settings, keyed by flag name (`addr = "0.0.0.0:8080"`).
    #[arg(long, env = "ACCORD_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// What to do (default: `serve`).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The flags of `serve`, when no subcommand is given.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process; boxing buys nothing
pub enum Command {
    /// Serve the HTTP API and the admin console (the default).
    Serve(ServeArgs),
    /// Apply the pending database migrations (or, with `--check`, list
    /// them and fail if there are any), then exit.
    Migrate(MigrateArgs),
    /// Print a signed bearer token for the given projects and scopes.
    Token(TokenArgs),
    /// Write a project's campaigns and consent content (notices, consents,
    /// purposes) as JSON Lines.
    Export(ExportArgs),
    /// Read an export into a project: records keep their ids, so importing
    /// again changes nothing.
    Import(ImportArgs),
    /// Purge the personal data of a project's consent acceptances that
    /// ended longer ago than the retention (the proof is kept), print what
    /// was purged as JSON.
    Purge(purge::PurgeArgs),
    /// A campaign's code pool: `generate`, `import` or `export` codes.
    #[command(subcommand)]
    Codes(CodesCommand),
    /// Stored consent records: `check` reports every version that breaks
    /// a consent rule (exit status 1 when one does), and changes nothing.
    #[command(subcommand)]
    Consent(ConsentCommand),
    /// The consent ledger, offline: `verify` an exported file.
    #[command(subcommand)]
    Ledger(LedgerCommand),
    /// Consent receipts, offline: `verify` a signed receipt against a JWK
    /// set and a ledger export.
    #[command(subcommand)]
    Receipt(ReceiptCommand),
}

impl Cli {
    /// Parses `argv` (the program name first), filling what the command
    /// line and the environment leave unset from the `--config` file.
    pub fn try_parse_with_config<I, T>(argv: I) -> Result<Cli, BoxError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        config::parse(argv.into_iter().map(Into::into).collect())
    }
}

/// The `accord` program: parses the arguments, sets up logging and runs
/// the command.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse_with_config(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => {
            if let Some(clap) = e.downcast_ref::<clap::Error>() {
                clap.exit();
            }
            eprintln!("accord: {e}");
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("accord: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, BoxError> {
    // The offline verifiers need no runtime, database or logging.
    match &cli.command {
        Some(Command::Ledger(command)) => return Ok(verify::ledger(command)),
        Some(Command::Receipt(command)) => return Ok(verify::receipt(command)),
        _ => {}
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cli.command {
        Some(Command::Migrate(args)) => {
            init_logging(serve::LogFormat::Text);
            runtime.block_on(migrate::run(&args))
        }
        Some(Command::Token(args)) => {
            let token = runtime.block_on(token::token(&args))?;
            println!("{token}");
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Export(args)) => {
            init_logging(serve::LogFormat::Text);
            runtime.block_on(transfer::export(&args))
        }
        Some(Command::Import(args)) => {
            init_logging(serve::LogFormat::Text);
            runtime.block_on(transfer::import(&args))
        }
        Some(Command::Purge(args)) => {
            init_logging(serve::LogFormat::Text);
            runtime.block_on(purge::purge(&args))
        }
        Some(Command::Codes(command)) => {
            init_logging(serve::LogFormat::Text);
            runtime.block_on(codes::run(&command))
        }
        Some(Command::Consent(command)) => {
            init_logging(serve::LogFormat::Text);
            runtime.block_on(consent::run(&command))
        }
        Some(Command::Serve(args)) => serve::main(&runtime, args),
        Some(Command::Ledger(_) | Command::Receipt(_)) => Ok(ExitCode::SUCCESS),
        None => serve::main(&runtime, cli.serve),
    }
}

/// A layer of the process's `tracing` subscriber.
type BoxLayer = Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Logs to stderr, filtered by `RUST_LOG` (default `info`), as text or
/// one JSON object per line.
fn init_logging(format: serve::LogFormat) {
    init_logging_with(format, Vec::new());
}

/// [`init_logging`], and `more` layers beside the log, each with its own
/// filter (the OpenTelemetry export).
fn init_logging_with(format: serve::LogFormat, more: Vec<BoxLayer>) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let log = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let log: BoxLayer = match format {
        serve::LogFormat::Json => log.json().flatten_event(true).with_filter(filter).boxed(),
        serve::LogFormat::Text => log
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_filter(filter)
            .boxed(),
    };
    let mut layers = vec![log];
    layers.extend(more);
    let _ = tracing_subscriber::registry().with(layers).try_init();
}

/// A duration flag: seconds (`90`), or a number with `ms`, `s`, `m`, `h`
/// or `d`.
pub(crate) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (seconds, or 30s, 15m, 8h, 30d)"))?;
    let secs = match unit.trim() {
        "ms" => return Ok(std::time::Duration::from_millis(n)),
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        other => return Err(format!("unknown duration unit {other:?} (s, m, h or d)")),
    };
    Ok(std::time::Duration::from_secs(n.saturating_mul(secs)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("8h"), Ok(Duration::from_secs(28_800)));
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(2_592_000)));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("5y").is_err());
        assert!(parse_duration("-5").is_err());
    }

    #[test]
    fn time_zones_are_parsed_and_checked() {
        use clap::Parser as _;
        let cli = Cli::try_parse_from([
            "accord",
            "serve",
            "--time-zone",
            "Asia/Bangkok",
            "--project-time-zones",
            "shop=Europe/Berlin, demo=UTC",
        ])
        .unwrap();
        let Some(Command::Serve(args)) = cli.command else {
            panic!("serve")
        };
        assert_eq!(args.time_zone, chrono_tz::Tz::Asia__Bangkok);
        assert_eq!(
            args.project_time_zones.get("shop"),
            Some(&chrono_tz::Tz::Europe__Berlin)
        );
        assert_eq!(args.project_time_zones.len(), 2);
        assert!(Cli::try_parse_from(["accord", "serve", "--time-zone", "Mars/Base"]).is_err());
        assert!(Cli::try_parse_from(["accord", "serve", "--project-time-zones", "shop"]).is_err());
    }

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }
}
