//! `accord purge`: the retention purge of a project's consent
//! acceptances (`ConsentService::purge_retention`), for a scheduler that
//! runs it without going through HTTP. Prints what was purged as JSON.

use std::process::ExitCode;
use std::sync::Arc;

use super::evidence::pseudonym_key;
use super::open::{Opened, PoolFlags};
use super::BoxError;
use crate::core::clock::{Clock, SystemClock};
use crate::core::consent::erasure::PseudonymKey;
use crate::core::consent::history::PurgeReport;
use crate::service::consent::ConsentService;
use crate::store::ConsentStore;

/// The flags of `accord purge`.
#[derive(Debug, Clone, clap::Args)]
pub struct PurgeArgs {
    /// The project to purge.
    #[arg(long)]
    pub project: String,
    /// Days an acceptance's personal data is kept after it ended
    /// (withdrawn or expired), as `serve` takes it.
    #[arg(long, env = "ACCORD_CONSENT_RETENTION_DAYS", value_parser = clap::value_parser!(u32).range(1..=36500))]
    pub consent_retention_days: u32,
    /// Secret key of erasure's pseudonyms (at least 32 bytes); default: the
    /// one the server keeps in the database.
    #[arg(long, env = "ACCORD_PSEUDONYM_KEY", hide_env_values = true)]
    pub pseudonym_key: Option<String>,
    /// The database to purge (migrated first).
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

async fn purge_in<S: ConsentStore + 'static>(
    store: Arc<S>,
    key: PseudonymKey,
    args: &PurgeArgs,
) -> crate::Result<PurgeReport> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    ConsentService::new(store, clock)
        .with_pseudonym_key(key)
        .with_retention(chrono::Duration::days(i64::from(
            args.consent_retention_days,
        )))
        .purge_retention(&args.project)
        .await
}

/// Runs `accord purge`.
pub(super) async fn purge(args: &PurgeArgs) -> Result<ExitCode, BoxError> {
    let opened = Opened::open(&args.database_url, &args.pool, true).await?;
    let key = pseudonym_key(args.pseudonym_key.as_ref(), &opened).await?;
    let report = match &opened {
        Opened::Memory(s) => purge_in(Arc::clone(s), key, args).await,
        Opened::Sqlite(s) => purge_in(Arc::clone(s), key, args).await,
        Opened::Postgres(s) => purge_in(Arc::clone(s), key, args).await,
    }?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}
