//! `accord migrate`: apply the pending migrations (or list them with
//! `--check`), then exit. For deployments that migrate in a step of their
//! own; `serve` migrates at start too.

use std::process::ExitCode;

use super::open::{Opened, PoolFlags};
use super::BoxError;

/// The flags of `accord migrate`.
#[derive(Debug, Clone, clap::Args)]
pub struct MigrateArgs {
    /// Database: `sqlite://FILE` or `postgres://…`.
    #[arg(
        long,
        env = "ACCORD_DATABASE_URL",
        default_value = "sqlite://accord.db"
    )]
    pub database_url: String,
    /// Apply nothing: list the pending migrations and exit with status 1 if
    /// there are any.
    #[arg(long)]
    pub check: bool,
    /// The PostgreSQL pool.
    #[command(flatten)]
    pub pool: PoolFlags,
}

/// Runs the command; what it prints goes to stdout.
pub(super) async fn run(args: &MigrateArgs) -> Result<ExitCode, BoxError> {
    let (code, out) = migrate(args).await?;
    print!("{out}");
    Ok(code)
}

/// `accord migrate` without printing: its exit status and its output.
pub async fn migrate(args: &MigrateArgs) -> Result<(ExitCode, String), BoxError> {
    let opened = Opened::open(&args.database_url, &args.pool, false).await?;
    let pending = match &opened {
        Opened::Memory(_) => return Err("memory: has nothing to migrate".into()),
        Opened::Sqlite(s) => s.pending_migrations().await?,
        Opened::Postgres(s) => s.pending_migrations().await?,
    };
    let list = pending
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if args.check {
        return Ok(if pending.is_empty() {
            (ExitCode::SUCCESS, "up to date\n".to_owned())
        } else {
            (ExitCode::from(1), format!("pending: {list}\n"))
        });
    }
    match &opened {
        Opened::Memory(_) => {}
        Opened::Sqlite(s) => s.migrate().await?,
        Opened::Postgres(s) => s.migrate().await?,
    }
    Ok(if pending.is_empty() {
        (ExitCode::SUCCESS, "up to date\n".to_owned())
    } else {
        (ExitCode::SUCCESS, format!("applied: {list}\n"))
    })
}
