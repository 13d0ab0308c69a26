//! `accord codes`: a campaign's code pool from the command line —
//! `generate` (up to 10,000,000 codes in one transaction, with a progress
//! bar on a terminal and plain progress lines otherwise), `import` and
//! `export` as CSV.

use std::io::{IsTerminal as _, Read as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use uuid::Uuid;

use super::open::{Opened, PoolFlags};
use super::BoxError;
use crate::adapter::http::HttpStore;
use crate::core::campaign::codes::{GenerateCodes, MAX_GENERATE};
use crate::core::clock::SystemClock;
use crate::service::campaign::CampaignService;
use crate::store::CampaignQuery;

/// Where the pool is.
#[derive(Debug, Clone, clap::Args)]
pub struct PoolArgs {
    /// The project.
    #[arg(long)]
    pub project: String,
    /// The campaign: its id or its refCode.
    #[arg(long)]
    pub campaign: String,
    /// The database (migrated first).
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

/// The subcommands of `accord codes`.
#[derive(Debug, clap::Subcommand)]
pub enum CodesCommand {
    /// Generate codes into a campaign's pool, all or none.
    Generate {
        /// Where.
        #[command(flatten)]
        at: PoolArgs,
        /// How many codes (at most 10,000,000).
        #[arg(long)]
        count: u64,
        /// Characters of the random part (4 to 32).
        #[arg(long, default_value_t = 8)]
        length: usize,
        /// The characters drawn from (default: digits and letters without
        /// 0, O, 1, I and L).
        #[arg(long)]
        charset: Option<String>,
        /// Text before the random part.
        #[arg(long)]
        prefix: Option<String>,
        /// Text after the random part.
        #[arg(long)]
        suffix: Option<String>,
        /// How many redemptions may use each code.
        #[arg(long, default_value_t = 1)]
        usage_limit: i64,
    },
    /// Import a CSV file of codes (`code[,usageLimit]`), all or none.
    Import {
        /// Where.
        #[command(flatten)]
        at: PoolArgs,
        /// The file (default: standard input).
        #[arg(long, short)]
        input: Option<PathBuf>,
        /// The usage limit of lines without one.
        #[arg(long)]
        usage_limit: Option<i64>,
    },
    /// Write a campaign's codes as CSV.
    Export {
        /// Where.
        #[command(flatten)]
        at: PoolArgs,
        /// The file (default: standard output).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
}

/// `accord codes …` as a program.
pub(super) async fn run(command: &CodesCommand) -> Result<ExitCode, BoxError> {
    let at = match command {
        CodesCommand::Generate { at, .. }
        | CodesCommand::Import { at, .. }
        | CodesCommand::Export { at, .. } => at,
    };
    let opened = Opened::open(&at.database_url, &at.pool, true).await?;
    match &opened {
        Opened::Memory(s) => on(Arc::clone(s), command, at).await,
        Opened::Sqlite(s) => on(Arc::clone(s), command, at).await,
        Opened::Postgres(s) => on(Arc::clone(s), command, at).await,
    }
}

async fn on<S: HttpStore>(
    store: Arc<S>,
    command: &CodesCommand,
    at: &PoolArgs,
) -> Result<ExitCode, BoxError> {
    let service = CampaignService::new(store, Arc::new(SystemClock));
    let campaign = campaign_id(&service, &at.project, &at.campaign).await?;
    let started = Instant::now();
    match command {
        CodesCommand::Generate {
            count,
            length,
            charset,
            prefix,
            suffix,
            usage_limit,
            ..
        } => {
            let request = GenerateCodes {
                count: *count,
                length: Some(*length),
                charset: charset.clone(),
                prefix: prefix.clone(),
                suffix: suffix.clone(),
                usage_limit: Some(*usage_limit),
            };
            let progress = Progress::new("generated", *count);
            let n = service
                .generate_codes(
                    &at.project,
                    campaign,
                    &request,
                    MAX_GENERATE,
                    Some(progress.callback()),
                )
                .await
                .map_err(|e| progress.fail(&e))?;
            progress.finish(n, started);
        }
        CodesCommand::Import {
            input, usage_limit, ..
        } => {
            let mut text = String::new();
            match input {
                Some(path) => {
                    text = std::fs::read_to_string(path)
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                }
                None => {
                    std::io::stdin().read_to_string(&mut text)?;
                }
            }
            let total = text.lines().filter(|l| !l.trim().is_empty()).count() as u64;
            let progress = Progress::new("imported", total);
            let n = service
                .import_codes(
                    &at.project,
                    campaign,
                    &text,
                    *usage_limit,
                    Some(progress.callback()),
                )
                .await
                .map_err(|e| progress.fail(&e))?;
            progress.finish(n, started);
        }
        CodesCommand::Export { output, .. } => {
            let mut out: Box<dyn std::io::Write> = match output {
                Some(path) => Box::new(std::io::BufWriter::new(
                    std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?,
                )),
                None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
            };
            let n = service
                .export_codes(&at.project, campaign, |chunk| {
                    out.write_all(chunk.as_bytes())
                        .map_err(crate::Error::internal)
                })
                .await?;
            out.flush()?;
            eprintln!("exported {n} codes");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The campaign `given` names: an id, else a refCode.
async fn campaign_id<S: HttpStore>(
    service: &CampaignService<S>,
    project: &str,
    given: &str,
) -> Result<Uuid, BoxError> {
    if let Ok(id) = Uuid::parse_str(given) {
        return Ok(service.campaign(project, id).await?.id);
    }
    let query = CampaignQuery {
        q: Some(given.to_owned()),
        size: crate::store::MAX_PAGE_SIZE,
        ..CampaignQuery::default()
    };
    service
        .list_campaigns(project, &query)
        .await?
        .items
        .into_iter()
        .find(|c| c.ref_code == given)
        .map(|c| c.id)
        .ok_or_else(|| {
            format!("no campaign with id or refCode {given:?} in project {project:?}").into()
        })
}

/// Progress on stderr, told by the store as rows are written: a bar on a
/// terminal, otherwise a line every tenth of the way.
enum Progress {
    Bar(indicatif::ProgressBar),
    Lines {
        verb: &'static str,
        total: u64,
        printed: Arc<AtomicU64>,
    },
}

impl Progress {
    fn new(verb: &'static str, total: u64) -> Self {
        if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(total);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{msg} [{bar:40}] {pos}/{len} codes ({eta})",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(verb);
            Progress::Bar(bar)
        } else {
            Progress::Lines {
                verb,
                total,
                printed: Arc::new(AtomicU64::new(0)),
            }
        }
    }

    fn callback(&self) -> Arc<dyn Fn(u64) + Send + Sync> {
        match self {
            Progress::Bar(bar) => {
                let bar = bar.clone();
                Arc::new(move |n| bar.set_position(n))
            }
            Progress::Lines {
                verb,
                total,
                printed,
            } => {
                let (verb, total, printed) = (*verb, *total, Arc::clone(printed));
                let step = (total / 10).max(1);
                Arc::new(move |n| {
                    let tenth = n / step;
                    if n < total && printed.fetch_max(tenth, Ordering::SeqCst) < tenth {
                        eprintln!("{verb} {n}/{total} codes");
                    }
                })
            }
        }
    }

    fn fail(&self, e: &crate::Error) -> BoxError {
        if let Progress::Bar(bar) = self {
            bar.abandon();
        }
        let fields: Vec<String> = e
            .fields()
            .iter()
            .map(|f| format!("{}: {}", f.field, f.message))
            .collect();
        if fields.is_empty() {
            e.message().to_owned().into()
        } else {
            format!("{} ({})", e.message(), fields.join("; ")).into()
        }
    }

    fn finish(&self, n: u64, started: Instant) {
        let secs = started.elapsed().as_secs_f64();
        let summary = format!("{n} codes in {secs:.1} s");
        match self {
            Progress::Bar(bar) => bar.finish_with_message(format!("done: {summary}")),
            Progress::Lines { verb, .. } => eprintln!("{verb} {summary}"),
        }
    }
}
