//! `accord export` and `accord import`: a project's campaigns and consent
//! content (privacy notices, consents, the purpose catalogue) as JSON
//! Lines, to move them between databases or environments.
//!
//! The first line is a header (`{"accordExport":1,"project":…}`); each
//! other line is one record with its id: `{"kind":"content","contentType":
//! "svc-consent-v1","id":…,"data":{…}}` or `{"kind":"campaign","id":…,
//! "campaign":{…}}`. Content comes first, notices before the consents that
//! name them. Import keeps the ids, so importing a file again changes
//! nothing; a record that differs is replaced (a new version). Acceptances
//! are not exported: they are evidence of what a person did, and stay
//! where they were recorded.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::open::{Opened, PoolFlags};
use super::BoxError;
use crate::adapter::http::HttpStore;
use crate::core::campaign::CampaignInput;
use crate::core::clock::SystemClock;
use crate::core::consent::{ContentQuery, ContentType};
use crate::service::campaign::{CampaignService, Imported};
use crate::service::consent::ConsentService;
use crate::store::{CampaignQuery, MAX_PAGE_SIZE};

/// The format's version, in the header line.
const FORMAT: u32 = 1;
/// The `sub` recorded as the author of what an import writes.
const IMPORT_ACTOR: &str = "accord-import";
/// The content types exported, in the order they are imported.
const CONTENT: [ContentType; 3] = [
    ContentType::PrivacyNotice,
    ContentType::Consent,
    ContentType::Purpose,
];

/// The flags of `accord export`.
#[derive(Debug, Clone, clap::Args)]
pub struct ExportArgs {
    /// The project to export.
    #[arg(long)]
    pub project: String,
    /// The file to write (default: standard output).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// The database to read.
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

/// The flags of `accord import`.
#[derive(Debug, Clone, clap::Args)]
pub struct ImportArgs {
    /// The file to read (default: standard input).
    #[arg(long, short)]
    pub input: Option<PathBuf>,
    /// The project to import into (default: the exported one).
    #[arg(long)]
    pub project: Option<String>,
    /// The database to write (migrated first).
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

/// One line of an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Line {
    /// A content record's current data.
    #[serde(rename_all = "camelCase")]
    Content {
        content_type: String,
        id: String,
        data: Map<String, Value>,
    },
    /// A campaign, as it would be sent to create it.
    Campaign {
        id: Uuid,
        campaign: Box<CampaignInput>,
    },
}

/// The first line of an export.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    accord_export: u32,
    project: String,
    exported_at: chrono::DateTime<chrono::Utc>,
}

/// `accord export` as a program.
pub(super) async fn export(args: &ExportArgs) -> Result<ExitCode, BoxError> {
    let opened = Opened::open(&args.database_url, &args.pool, false).await?;
    let pending = match &opened {
        Opened::Memory(_) => return Err("memory: keeps nothing to export".into()),
        Opened::Sqlite(s) => s.pending_migrations().await?,
        Opened::Postgres(s) => s.pending_migrations().await?,
    };
    if !pending.is_empty() {
        return Err(format!(
            "{} is not migrated (or was by an older version): run `accord migrate` first",
            args.database_url
        )
        .into());
    }
    let lines = match &opened {
        Opened::Memory(s) => export_lines(Arc::clone(s), &args.project).await?,
        Opened::Sqlite(s) => export_lines(Arc::clone(s), &args.project).await?,
        Opened::Postgres(s) => export_lines(Arc::clone(s), &args.project).await?,
    };
    let mut out: Box<dyn std::io::Write> = match &args.output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let header = Header {
        accord_export: FORMAT,
        project: args.project.clone(),
        exported_at: chrono::Utc::now(),
    };
    writeln!(out, "{}", serde_json::to_string(&header)?)?;
    let progress = Progress::new("exported", lines.len() as u64);
    for line in &lines {
        writeln!(out, "{}", serde_json::to_string(line)?)?;
        progress.inc();
    }
    out.flush()?;
    progress.finish(&summary(&lines));
    Ok(ExitCode::SUCCESS)
}

/// Every record of `project` to export, content first.
async fn export_lines<S: HttpStore>(store: Arc<S>, project: &str) -> Result<Vec<Line>, BoxError> {
    crate::core::limits::check_project_id(project)?;
    let clock: Arc<dyn crate::core::clock::Clock> = Arc::new(SystemClock);
    let consent = ConsentService::new(Arc::clone(&store), Arc::clone(&clock));
    let campaigns = CampaignService::new(store, clock);
    let mut lines = Vec::new();
    for t in CONTENT {
        for page in 0.. {
            let query = ContentQuery {
                page,
                size: MAX_PAGE_SIZE,
                ..ContentQuery::default()
            };
            let found = consent.list_content(project, t.as_str(), &query).await?;
            let last = found.items.len() < MAX_PAGE_SIZE as usize;
            lines.extend(found.items.into_iter().map(|r| Line::Content {
                content_type: t.as_str().to_owned(),
                id: r.id,
                data: r.data,
            }));
            if last {
                break;
            }
        }
    }
    for page in 0.. {
        let query = CampaignQuery {
            page,
            size: MAX_PAGE_SIZE,
            ..CampaignQuery::default()
        };
        let found = campaigns.list_campaigns(project, &query).await?;
        let last = found.items.len() < MAX_PAGE_SIZE as usize;
        lines.extend(found.items.into_iter().map(|c| {
            let mut campaign = c.to_input();
            campaign.version = None;
            Line::Campaign {
                id: c.id,
                campaign: Box::new(campaign),
            }
        }));
        if last {
            break;
        }
    }
    Ok(lines)
}

/// `accord import` as a program.
pub(super) async fn import(args: &ImportArgs) -> Result<ExitCode, BoxError> {
    let text = if let Some(path) = &args.input {
        std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?
    } else {
        let mut text = String::new();
        for line in std::io::stdin().lock().lines() {
            text.push_str(&line?);
            text.push('\n');
        }
        text
    };
    let name = args
        .input
        .as_ref()
        .map_or_else(|| "<stdin>".to_owned(), |p| p.display().to_string());
    // Every line is read before anything is written: a damaged file
    // writes nothing.
    let (header, lines) = parse(&text).map_err(|e| format!("{name}: {e}"))?;
    let project = args.project.clone().unwrap_or(header.project);
    let opened = Opened::open(&args.database_url, &args.pool, true).await?;
    let counts = match &opened {
        Opened::Memory(s) => import_lines(Arc::clone(s), &project, &lines).await,
        Opened::Sqlite(s) => import_lines(Arc::clone(s), &project, &lines).await,
        Opened::Postgres(s) => import_lines(Arc::clone(s), &project, &lines).await,
    }
    .map_err(|e| format!("{name}: {e}"))?;
    println!(
        "imported into project {project:?}: {} created, {} updated, {} unchanged",
        counts[0], counts[1], counts[2]
    );
    Ok(ExitCode::SUCCESS)
}

/// The header and the records of an export; a line that is not one names
/// its number.
fn parse(text: &str) -> Result<(Header, Vec<(usize, Line)>), BoxError> {
    let mut numbered = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, first) = numbered.next().ok_or("empty: not an Accord export")?;
    let header: Header = serde_json::from_str(first)
        .map_err(|_| "line 1: not the header of an Accord export (`accordExport`)")?;
    if header.accord_export != FORMAT {
        return Err(format!(
            "line 1: export format {} (this version reads {FORMAT})",
            header.accord_export
        )
        .into());
    }
    let lines = numbered
        .map(|(n, l)| {
            serde_json::from_str::<Line>(l)
                .map(|line| (n, line))
                .map_err(|e| format!("line {n}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((header, lines))
}

/// Saves every record; how many were created, updated, unchanged.
async fn import_lines<S: HttpStore>(
    store: Arc<S>,
    project: &str,
    lines: &[(usize, Line)],
) -> Result<[u64; 3], BoxError> {
    let clock: Arc<dyn crate::core::clock::Clock> = Arc::new(SystemClock);
    let consent = ConsentService::new(Arc::clone(&store), Arc::clone(&clock));
    let campaigns = CampaignService::new(store, clock);
    let progress = Progress::new("imported", lines.len() as u64);
    let mut counts = [0u64; 3];
    for (n, line) in lines {
        let done = match line.clone() {
            Line::Content {
                content_type,
                id,
                data,
            } => {
                consent
                    .import_content(
                        project,
                        &content_type,
                        &id,
                        Value::Object(data),
                        IMPORT_ACTOR,
                    )
                    .await
            }
            Line::Campaign { id, campaign } => {
                campaigns
                    .import_campaign(project, id, *campaign, IMPORT_ACTOR)
                    .await
            }
        }
        .map_err(|e| {
            progress.abandon();
            format!("line {n}: {e}{}", field_errors(&e))
        })?;
        counts[match done {
            Imported::Created => 0,
            Imported::Updated => 1,
            Imported::Unchanged => 2,
        }] += 1;
        progress.inc();
    }
    progress.finish(&format!(
        "{} created, {} updated, {} unchanged",
        counts[0], counts[1], counts[2]
    ));
    Ok(counts)
}

/// ` (field: message; …)` for a validation error, else nothing.
fn field_errors(e: &crate::Error) -> String {
    let fields: Vec<String> = e
        .fields()
        .iter()
        .map(|f| format!("{}: {}", f.field, f.message))
        .collect();
    if fields.is_empty() {
        String::new()
    } else {
        format!(" ({})", fields.join("; "))
    }
}

/// `N campaigns, M content records`.
fn summary(lines: &[Line]) -> String {
    let campaigns = lines
        .iter()
        .filter(|l| matches!(l, Line::Campaign { .. }))
        .count();
    format!(
        "{campaigns} campaigns, {} content records",
        lines.len() - campaigns
    )
}

/// Progress on stderr: a bar on a terminal, otherwise a plain line every
/// tenth of the way (at most every 100 records) and at the end, so logs
/// of scripted runs stay readable.
enum Progress {
    Bar(indicatif::ProgressBar),
    Lines {
        verb: &'static str,
        total: u64,
        done: std::cell::Cell<u64>,
    },
}

impl Progress {
    fn new(verb: &'static str, total: u64) -> Self {
        if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(total);
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} records")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(verb);
            Progress::Bar(bar)
        } else {
            Progress::Lines {
                verb,
                total,
                done: std::cell::Cell::new(0),
            }
        }
    }

    fn inc(&self) {
        match self {
            Progress::Bar(bar) => bar.inc(1),
            Progress::Lines { verb, total, done } => {
                let n = done.get() + 1;
                done.set(n);
                let step = (total / 10).max(100);
                if n % step == 0 && n < *total {
                    eprintln!("{verb} {n}/{total} records");
                }
            }
        }
    }

    fn abandon(&self) {
        if let Progress::Bar(bar) = self {
            bar.abandon();
        }
    }

    fn finish(&self, summary: &str) {
        match self {
            Progress::Bar(bar) => bar.finish_with_message(format!("done: {summary}")),
            Progress::Lines { verb, total, .. } => {
                eprintln!("{verb} {total}/{total} records: {summary}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damaged_files_are_refused_naming_the_line() {
        let header = r#"{"accordExport":1,"project":"p","exportedAt":"2026-01-01T00:00:00Z"}"#;
        assert!(parse("").unwrap_err().to_string().contains("empty"));
        assert!(parse("{}\n").unwrap_err().to_string().contains("line 1"));
        let newer = header.replace(":1,", ":2,");
        assert!(parse(&newer).unwrap_err().to_string().contains("format 2"));
        let bad = format!("{header}\n\n{{\"kind\":\"nothing\"}}\n");
        assert!(parse(&bad).unwrap_err().to_string().starts_with("line 3"));
        let good = format!(
            "{header}\n{}\n",
            r#"{"kind":"content","contentType":"svc-purpose-v1","id":"x","data":{"code":"c"}}"#
        );
        let (h, lines) = parse(&good).unwrap();
        assert_eq!(h.project, "p");
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].0, 2);
    }
}
