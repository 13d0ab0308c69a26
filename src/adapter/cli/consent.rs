//! `accord consent check`: the integrity check of a project's stored
//! consent records (`ConsentService::check_records`), for an operator or
//! an auditor with the database at hand. It reads and reports; it never
//! rewrites a record.
//!
//! Prints the report as JSON on stdout and exits with 0 when no record
//! breaks a rule, 1 when some do (each listed), 2 on a usage or database
//! error.

use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};
use serde_json::json;

use super::open::{Opened, PoolFlags};
use super::BoxError;
use crate::core::clock::{Clock, SystemClock};
use crate::core::consent::check::Finding;
use crate::service::consent::ConsentService;
use crate::store::ConsentStore;

/// What `accord consent` does.
#[derive(Debug, Subcommand)]
pub enum ConsentCommand {
    /// Report every stored version of a project's privacy notices,
    /// consents and acceptances that breaks a consent rule (a forged
    /// revision, a never-expiring acceptance, a revival, nulled evidence, a
    /// revision that went down, …); exits 1 when there is one.
    Check(ConsentCheckArgs),
}

/// `accord consent check`.
#[derive(Debug, Clone, Args)]
pub struct ConsentCheckArgs {
    /// The project to check.
    #[arg(long)]
    pub project: String,
    /// The database to check (not migrated: the check writes nothing).
    #[arg(
        long,
        env = "ACCORD_DATABASE_URL",
        default_value = "sqlite://accord.db"
    )]
    pub database_url: String,
    /// The PostgreSQL pool.
    #[command(flatten)]
    pub pool: PoolFlags,
}

async fn check_in<S: ConsentStore + 'static>(
    store: Arc<S>,
    project: &str,
) -> crate::Result<Vec<Finding>> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    ConsentService::new(store, clock)
        .check_records(project)
        .await
}

/// Runs `accord consent check`: 0 clean, 1 findings, 2 when the check
/// could not run (so that 1 always means records break a rule).
pub(super) async fn run(command: &ConsentCommand) -> Result<ExitCode, BoxError> {
    let ConsentCommand::Check(args) = command;
    match check(args).await {
        Ok(code) => Ok(code),
        Err(e) => {
            eprintln!("accord: {e}");
            Ok(ExitCode::from(2))
        }
    }
}

async fn check(args: &ConsentCheckArgs) -> Result<ExitCode, BoxError> {
    let opened = Opened::open(&args.database_url, &args.pool, false).await?;
    let findings = match &opened {
        Opened::Memory(s) => check_in(Arc::clone(s), &args.project).await,
        Opened::Sqlite(s) => check_in(Arc::clone(s), &args.project).await,
        Opened::Postgres(s) => check_in(Arc::clone(s), &args.project).await,
    }?;
    let report = json!({
        "project": args.project,
        "valid": findings.is_empty(),
        "findings": findings,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(if findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
