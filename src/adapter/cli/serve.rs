//! `accord serve`: the HTTP API and the admin console over the store of
//! `--database-url`.
//!
//! With no key configured it generates an HS256 secret and prints it with
//! a development token (every scope, project `demo`). With `--demo` that
//! secret is kept in the database (table `accord_settings`), so a token
//! copied from one run keeps working after a restart. The keys of consent
//! evidence are configured or kept in the database too (`evidence.rs`).
//! At start the server raises its soft open-files limit to the hard limit:
//! every connection is a file descriptor. Ctrl-C or SIGTERM stops it gracefully: requests in
//! flight finish.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::demo::{self, DEMO};
use super::evidence::{with_evidence_keys, EvidenceFlags};
pub use super::open::PoolFlags;
use super::open::{random_secret, Opened};
use super::{init_logging_with, BoxError};
use crate::adapter::admin::{self, Admin};
use crate::adapter::http::{cors_layer, router, serve, Api, Auth, Claims, HttpStore};
use crate::core::clock::SystemClock;

mod flags;
pub use flags::{EdgeFlags, JwtFlags, ServeFlags};

/// The name under which `--demo` keeps its development secret.
pub(super) const DEV_SECRET: &str = "dev_jwt_secret";

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The flags of `accord serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0: any free port).
    #[arg(long, env = "ACCORD_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Database: `sqlite://FILE` (created if missing), `postgres://…`, or
    /// `memory:` (nothing kept).
    #[arg(
        long,
        env = "ACCORD_DATABASE_URL",
        default_value = "sqlite://accord.db"
    )]
    pub database_url: String,
    /// HS256 secret of the bearer tokens (at least 32 bytes).
    #[arg(
        long,
        env = "ACCORD_JWT_SECRET",
        conflicts_with = "jwt_public_key_file",
        hide_env_values = true
    )]
    pub jwt_secret: Option<String>,
    /// PEM public key (RSA for RS256, P-256 for ES256) of the bearer tokens.
    #[arg(long, env = "ACCORD_JWT_PUBLIC_KEY_FILE", conflicts_with = "jwks_file")]
    pub jwt_public_key_file: Option<PathBuf>,
    /// A JWKS of the token issuers' keys, and the issuer and audience required.
    #[command(flatten)]
    pub jwt: JwtFlags,
    /// Load the sample data of the README walkthrough into project `demo`
    /// (idempotent), and keep the generated development secret in the
    /// database.
    #[arg(long, env = "ACCORD_DEMO")]
    pub demo: bool,
    /// Log lines as `text` or `json`.
    #[arg(long, env = "ACCORD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// IANA time zone in which every project's `${day}`, `${month}`,
    /// `${year}` and `${week}` roll over, unless listed in
    /// `--project-time-zones` or set on the campaign.
    #[arg(long, env = "ACCORD_TIME_ZONE", default_value = "UTC", value_parser = crate::core::campaign::parse_zone)]
    pub time_zone: chrono_tz::Tz,
    /// Per-project time zones: `shop=Europe/Berlin,demo=Asia/Bangkok`.
    #[arg(long, env = "ACCORD_PROJECT_TIME_ZONES", default_value = "", value_parser = crate::core::campaign::TimeZones::parse_projects)]
    pub project_time_zones: std::collections::HashMap<String, chrono_tz::Tz>,
    /// What clients may hold (timeouts, open connections).
    #[command(flatten)]
    pub serve: ServeFlags,
    /// The PostgreSQL pool.
    #[command(flatten)]
    pub pool: PoolFlags,
    /// CORS and rate limits.
    #[command(flatten)]
    pub edges: EdgeFlags,
    /// The keys of erasure's pseudonyms and of consent receipts.
    #[command(flatten)]
    pub evidence: EvidenceFlags,
    /// The webhook delivery worker.
    #[cfg(feature = "webhooks")]
    #[command(flatten)]
    pub webhooks: super::webhooks::WebhookFlags,
    /// Where OpenTelemetry traces go.
    #[cfg(feature = "otel")]
    #[command(flatten)]
    pub otel: super::telemetry::OtelFlags,
}

impl Default for ServeArgs {
    /// The defaults of every flag (the environment is not read).
    fn default() -> Self {
        ServeArgs {
            addr: ([127, 0, 0, 1], 8080).into(),
            database_url: "sqlite://accord.db".to_owned(),
            jwt_secret: None,
            jwt_public_key_file: None,
            jwt: JwtFlags::default(),
            demo: false,
            log_format: LogFormat::Text,
            time_zone: chrono_tz::Tz::UTC,
            project_time_zones: std::collections::HashMap::new(),
            serve: ServeFlags::default(),
            pool: PoolFlags::default(),
            edges: EdgeFlags::default(),
            evidence: EvidenceFlags::default(),
            #[cfg(feature = "webhooks")]
            webhooks: super::webhooks::WebhookFlags::default(),
            #[cfg(feature = "otel")]
            otel: super::telemetry::OtelFlags::default(),
        }
    }
}

/// `accord serve` as a program: logging, the open-files limit, the server
/// until Ctrl-C or SIGTERM.
pub(super) fn main(
    runtime: &tokio::runtime::Runtime,
    args: ServeArgs,
) -> Result<ExitCode, BoxError> {
    #[cfg(feature = "otel")]
    let traces = super::telemetry::provider(&args.otel)?;
    let exports: Vec<super::BoxLayer> = {
        #[cfg(feature = "otel")]
        {
            traces.iter().map(super::telemetry::layer).collect()
        }
        #[cfg(not(feature = "otel"))]
        {
            Vec::new()
        }
    };
    init_logging_with(args.log_format, exports);
    #[cfg(unix)]
    raise_open_files_limit();
    let served = runtime.block_on(async {
        let started = start(args, shutdown_signal()).await?;
        print!("{}", started.banner());
        started.done.await??;
        Ok(ExitCode::SUCCESS)
    });
    // The spans still queued are sent before the process ends.
    #[cfg(feature = "otel")]
    if let Some(traces) = traces {
        if let Err(e) = traces.shutdown() {
            tracing::warn!(error = %e, "cannot send the last traces");
        }
    }
    served
}

/// Raises the soft limit on open files to the hard limit (as Go's runtime
/// does): each connection is a file descriptor, and the usual soft limit
/// of 1,024 would stop the server far below `--max-connections`.
#[cfg(unix)]
fn raise_open_files_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    // An unlimited hard limit cannot be the soft one on every system.
    const ENOUGH: u64 = 1 << 20;
    let limit = getrlimit(Resource::Nofile);
    let target = limit.maximum.map_or(ENOUGH, |max| max.min(ENOUGH));
    if limit.current.is_some_and(|current| current < target) {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(target),
                maximum: limit.maximum,
            },
        );
    }
}

/// A development secret generated because no key was configured, and a
/// token signed with it.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The HS256 secret.
    pub secret: String,
    /// Whether it is kept in the database (`--demo` on a SQL store): then
    /// the next start with `--demo` uses it again.
    pub kept: bool,
    /// A token with every scope for project `demo`, valid 30 days.
    pub token: String,
}

/// A running server.
#[derive(Debug)]
pub struct Started {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The generated key, when none was configured.
    pub generated: Option<Generated>,
    /// Whether the sample data was loaded.
    pub demo: bool,
    /// With `--demo`: a one-time sign-in link to the admin console, or why
    /// there is none.
    pub admin_link: Option<Result<String, String>>,
    /// Ends when the server has stopped (after the shutdown signal, once
    /// the requests in flight are answered).
    pub done: tokio::task::JoinHandle<Result<(), BoxError>>,
}

impl Started {
    /// What the server prints at start: where it listens, and the generated
    /// secret and development token if any.
    pub fn banner(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        if let Some(g) = &self.generated {
            if g.kept {
                let _ = writeln!(out, "No JWT key configured: using the development secret kept in the database (--demo):");
            } else {
                let _ = writeln!(out, "No JWT key configured: generated a development secret (not kept; set ACCORD_JWT_SECRET to keep one):");
            }
            let _ = writeln!(out, "  ACCORD_JWT_SECRET={}", g.secret);
            let _ = writeln!(
                out,
                "Development token (sub \"dev\", every scope, project \"demo\", valid 30 days):"
            );
            let _ = writeln!(out, "  export TOKEN={}", g.token);
        }
        if self.demo {
            let _ = writeln!(out, "Demo data in project \"demo\": campaigns CART10, WELCOME50, FREEGIFT; consent \"Marketing and analytics\" of app \"demo-app\".");
        }
        match &self.admin_link {
            Some(Ok(path)) => {
                let _ = writeln!(
                    out,
                    "Admin console sign-in link (works once, for 10 minutes):"
                );
                let _ = writeln!(out, "  http://{}{path}", self.addr);
            }
            Some(Err(why)) => {
                let _ = writeln!(out, "Admin console: http://{}/admin/ ({why})", self.addr);
            }
            None => {}
        }
        let _ = writeln!(
            out,
            "Accord listening on http://{0} (OpenAPI: http://{0}/openapi.json)",
            self.addr
        );
        out
    }
}

/// Starts the server of `args`; it stops gracefully when `shutdown`
/// completes.
pub async fn start(
    args: ServeArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Started, BoxError> {
    let opened = Opened::open(&args.database_url, &args.pool, true).await?;
    let (auth, generated) = auth(&args, &opened).await?;
    let link_token = args
        .demo
        .then(|| demo_link_token(&args, generated.as_ref()));
    let (addr, done, admin_link) = match &opened {
        Opened::Memory(store) => {
            launch(
                Arc::clone(store),
                &opened,
                auth,
                &args,
                link_token,
                shutdown,
            )
            .await?
        }
        Opened::Sqlite(store) => {
            launch(
                Arc::clone(store),
                &opened,
                auth,
                &args,
                link_token,
                shutdown,
            )
            .await?
        }
        Opened::Postgres(store) => {
            launch(
                Arc::clone(store),
                &opened,
                auth,
                &args,
                link_token,
                shutdown,
            )
            .await?
        }
    };
    Ok(Started {
        addr,
        generated,
        demo: args.demo,
        admin_link,
        done,
    })
}

/// The token verifier from the flags; with none, a generated secret (kept
/// in the database with `--demo`) and a development token.
async fn auth(args: &ServeArgs, opened: &Opened) -> Result<(Auth, Option<Generated>), BoxError> {
    if let Some(secret) = &args.jwt_secret {
        return Ok((args.jwt.require(Auth::hs256(secret)?), None));
    }
    if let Some(path) = &args.jwt_public_key_file {
        let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok((args.jwt.require(Auth::public_key_pem(&pem)?), None));
    }
    if let Some(path) = &args.jwt.jwks_file {
        let auth = args.jwt.require(Auth::jwks_file(path)?);
        let every = args.jwt.jwks_refresh.unwrap_or(Duration::from_secs(60));
        crate::adapter::http::auth::jwks::watch_file(
            &auth,
            path.clone(),
            every.max(Duration::from_secs(1)),
        );
        return Ok((auth, None));
    }
    if let Some(url) = &args.jwt.jwks_url {
        let mut source = crate::adapter::http::auth::jwks::JwksUrl::new(url);
        if let Some(every) = args.jwt.jwks_refresh {
            source = source.refresh_every(every);
        }
        if let Some(interval) = args.jwt.jwks_unknown_kid_interval {
            source = source.unknown_kid_interval(interval);
        }
        return Ok((args.jwt.require(source.start().await?), None));
    }
    let fresh = random_secret()?;
    let kept = if args.demo {
        opened.setting_or_insert(DEV_SECRET, &fresh).await?
    } else {
        None
    };
    let (secret, kept) = match kept {
        Some(secret) => (secret, true),
        None => (fresh, false),
    };
    let token = Claims::all_scopes("dev", &[DEMO], Duration::from_secs(30 * 24 * 3600))
        .sign_hs256(secret.as_bytes())?;
    Ok((
        Auth::hs256(&secret)?,
        Some(Generated {
            secret,
            kept,
            token,
        }),
    ))
}

/// What `launch` gives back: the address, the server task, the admin link.
type Launched = (
    SocketAddr,
    tokio::task::JoinHandle<Result<(), BoxError>>,
    Option<Result<String, String>>,
);

/// Serves the API and the admin console over `store` in a task until
/// `shutdown`.
async fn launch<S: HttpStore>(
    store: Arc<S>,
    opened: &Opened,
    auth: Auth,
    args: &ServeArgs,
    link_token: Option<Result<String, String>>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Launched, BoxError> {
    let clock: Arc<dyn crate::core::clock::Clock> = Arc::new(SystemClock);
    let zones = crate::core::campaign::TimeZones {
        default: args.time_zone,
        projects: args.project_time_zones.clone(),
    };
    let campaigns =
        crate::service::campaign::CampaignService::new(Arc::clone(&store), Arc::clone(&clock))
            .with_time_zones(zones);
    #[cfg(feature = "webhooks")]
    let worker = super::webhooks::start(Arc::clone(&store), Arc::clone(&clock), &args.webhooks)?;
    let consent = crate::service::consent::ConsentService::new(store, clock);
    let api = with_evidence_keys(
        Api::from_services(Arc::new(campaigns), Arc::new(consent), auth.clone())
            .with_rate_limits(args.edges.rate_limits()),
        &args.evidence,
        opened,
    )
    .await?;
    let cors = if args.edges.cors_origins.is_empty() {
        None
    } else {
        Some(cors_layer(&args.edges.cors_origins)?)
    };
    if args.demo {
        demo::load_demo(&api).await?;
    }
    let console = Admin::new(Arc::clone(api.campaigns()), Arc::clone(api.consent()), auth)
        .with_metrics(Arc::clone(api.metrics()));
    let admin_link = link_token.map(|t| t.and_then(|t| console.one_time_link(&t)));
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    let addr = listener.local_addr()?;
    let config = args.serve.config();
    tracing::info!(%addr, ?config, "listening");
    let mut app = router(api);
    if let Some(cors) = cors {
        app = app.layer(cors);
    }
    let done = tokio::spawn(async move {
        // The worker runs as long as the server (dropped, it stops).
        #[cfg(feature = "webhooks")]
        let _worker = worker;
        serve(
            listener,
            app.merge(admin::router(console)),
            config,
            shutdown,
        )
        .await?;
        tracing::info!("stopped");
        Ok(())
    });
    Ok((addr, done, admin_link))
}

/// The token behind the `--demo` sign-in link: the development token, or
/// one signed with the configured HS256 secret (every scope, project
/// `demo`, 8 hours). A server that only has a public key cannot sign one.
fn demo_link_token(args: &ServeArgs, generated: Option<&Generated>) -> Result<String, String> {
    if let Some(g) = generated {
        return Ok(g.token.clone());
    }
    let secret = args.jwt_secret.as_ref().ok_or(
        "no sign-in link: the server verifies tokens with public keys; sign in with a token",
    )?;
    Claims::all_scopes("admin", &[DEMO], Duration::from_secs(8 * 3600))
        .sign_hs256(secret.as_bytes())
        .map_err(|e| e.to_string())
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}
