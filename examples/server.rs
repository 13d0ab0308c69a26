//! The Accord HTTP service.
//!
//! ```sh
//! cargo run --release --example server                # SQLite file accord.db on 127.0.0.1:8080
//! cargo run --release --example server -- --demo      # … with the walkthrough's sample data
//! ACCORD_DATABASE_URL=postgres://user:pw@host/db cargo run --release --example server
//! ```
//!
//! Flags (each with an environment fallback): `--addr` (`ACCORD_ADDR`),
//! `--database-url` (`ACCORD_DATABASE_URL`: `sqlite://FILE`, `postgres://…`
//! or `memory:`), `--jwt-secret` (`ACCORD_JWT_SECRET`, HS256) or
//! `--jwt-public-key-file` (`ACCORD_JWT_PUBLIC_KEY_FILE`, RS256/ES256 PEM),
//! `--pseudonym-key` (`ACCORD_PSEUDONYM_KEY`, erasure's pseudonyms),
//! `--receipt-key` (`ACCORD_RECEIPT_KEY`, the seed of the receipt signer),
//! `--demo`, and the connection bounds of `accord::http::ServeConfig`:
//! `--max-connections` (`ACCORD_MAX_CONNECTIONS`), `--header-read-timeout`,
//! `--body-read-timeout`, `--idle-timeout`, `--request-timeout` (seconds;
//! `ACCORD_HEADER_READ_TIMEOUT`, …). With no key it generates a secret and
//! prints it with a development token (every scope, project `demo`). Logs
//! go to stderr, filtered by `RUST_LOG` (default `info`). Ctrl-C or SIGTERM
//! stops it gracefully: requests in flight finish. The admin console is at
//! `/admin/`; with `--demo` the server also prints a one-time sign-in link
//! to it. At start it raises its
//! soft open-files limit to the hard limit: every connection is a file
//! descriptor.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use accord::admin::{self, Admin};
use accord::campaign::CampaignInput;
use accord::consent::erasure::PseudonymKey;
use accord::consent::receipt::Controller;
use accord::consent::ContentQuery;
use accord::http::receipt::ReceiptSigner;
use accord::http::{router, serve, Api, Auth, Claims, HttpStore, ServeConfig};
use accord::store::memory::MemoryStore;
use accord::store::postgres::PostgresStore;
use accord::store::sqlite::SqliteStore;
use accord::SystemClock;
use clap::Parser;
use rand::RngCore;
use serde_json::Value;

/// The Accord consent-and-promotions HTTP service.
#[derive(Debug, Parser)]
#[command(version, about)]
pub struct Args {
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
    #[arg(long, env = "ACCORD_JWT_PUBLIC_KEY_FILE")]
    pub jwt_public_key_file: Option<PathBuf>,
    /// Key of the pseudonyms that replace an erased data subject (at least
    /// 32 bytes; keep it secret and stable). Without it a random key is
    /// generated at each start: erasure works, but the same person erased
    /// twice across restarts gets two pseudonyms.
    #[arg(long, env = "ACCORD_PSEUDONYM_KEY", hide_env_values = true)]
    pub pseudonym_key: Option<String>,
    /// The Ed25519 key that signs consent receipts: its 32-byte seed in hex.
    /// Without it a random key is used until the server stops (receipts
    /// issued before a restart then no longer verify against
    /// `/.well-known/jwks.json`).
    #[arg(long, env = "ACCORD_RECEIPT_KEY", hide_env_values = true)]
    pub receipt_key: Option<String>,
    /// Load the sample data of the README walkthrough into project `demo`
    /// (idempotent: what is there already is left alone).
    #[arg(long)]
    pub demo: bool,
    /// What clients may hold (timeouts, open connections).
    #[command(flatten)]
    pub serve: ServeFlags,
}

/// The flags of `accord::http::ServeConfig`; each defaults to its default.
#[derive(Debug, Default, clap::Args)]
pub struct ServeFlags {
    /// Most connections open at once; newer ones get a 503 (default 4096).
    #[arg(long, env = "ACCORD_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Seconds a client may take to send a request head (default 10).
    #[arg(long, env = "ACCORD_HEADER_READ_TIMEOUT")]
    pub header_read_timeout: Option<u64>,
    /// Seconds a client may take to send a request body (default 30).
    #[arg(long, env = "ACCORD_BODY_READ_TIMEOUT")]
    pub body_read_timeout: Option<u64>,
    /// Seconds a kept-alive connection may wait between requests (default 60).
    #[arg(long, env = "ACCORD_IDLE_TIMEOUT")]
    pub idle_timeout: Option<u64>,
    /// Seconds one request may take, head to end of response (default 60).
    #[arg(long, env = "ACCORD_REQUEST_TIMEOUT")]
    pub request_timeout: Option<u64>,
}

impl ServeFlags {
    /// The serving bounds: the flags given, defaults for the others.
    pub fn config(&self) -> ServeConfig {
        let mut config = ServeConfig::default();
        let secs = Duration::from_secs;
        if let Some(n) = self.max_connections {
            config.max_connections = n;
        }
        if let Some(s) = self.header_read_timeout {
            config.header_read_timeout = secs(s);
        }
        if let Some(s) = self.body_read_timeout {
            config.body_read_timeout = secs(s);
        }
        if let Some(s) = self.idle_timeout {
            config.idle_timeout = secs(s);
        }
        if let Some(s) = self.request_timeout {
            config.request_timeout = secs(s);
        }
        config
    }
}

/// Any error, for `main`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    #[cfg(unix)]
    raise_open_files_limit();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let started = start(args, shutdown_signal()).await?;
        print!("{}", started.banner());
        started.done.await?
    })
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
pub struct Generated {
    /// The HS256 secret.
    pub secret: String,
    /// A token with every scope for project `demo`, valid 30 days.
    pub token: String,
}

/// A running server.
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
            let _ = writeln!(out, "No JWT key configured: generated a development secret (not kept; set ACCORD_JWT_SECRET to keep one):");
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
    args: Args,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Started, BoxError> {
    let (auth, generated) = auth(&args)?;
    let link_token = args
        .demo
        .then(|| demo_link_token(&args, generated.as_ref()));
    let url = args.database_url.as_str();
    let (addr, done, admin_link) = if url.starts_with("memory:") {
        launch(
            Arc::new(MemoryStore::new()),
            auth,
            &args,
            link_token,
            shutdown,
        )
        .await?
    } else if url.starts_with("sqlite:") {
        // Opens (creating the file if missing) and migrates.
        let store = SqliteStore::open(url).await?;
        launch(Arc::new(store), auth, &args, link_token, shutdown).await?
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        // Connects and migrates (safe from several instances at once).
        let store = PostgresStore::connect(url).await?;
        launch(Arc::new(store), auth, &args, link_token, shutdown).await?
    } else {
        return Err(format!(
            "unsupported --database-url {url:?}: use sqlite://FILE, postgres://… or memory:"
        )
        .into());
    };
    Ok(Started {
        addr,
        generated,
        demo: args.demo,
        admin_link,
        done,
    })
}

/// The receipt signer from the flags, or one with a random key (logged as
/// such).
fn receipt_signer(args: &Args) -> Result<ReceiptSigner, BoxError> {
    let mut seed = [0u8; 32];
    if let Some(hex) = &args.receipt_key {
        let bytes: Option<Vec<u8>> = (hex.len() == 64)
            .then(|| {
                (0..32)
                    .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
                    .collect()
            })
            .flatten();
        let bytes = bytes.ok_or("--receipt-key must be 64 hex digits (a 32-byte Ed25519 seed)")?;
        seed.copy_from_slice(&bytes);
    } else {
        tracing::warn!(
            "no --receipt-key: receipts are signed with a random key until the server stops"
        );
        rand::thread_rng().fill_bytes(&mut seed);
    }
    Ok(ReceiptSigner::from_seed(&seed)?)
}

/// The pseudonym key from the flags, or a random one (logged as such).
fn pseudonym_key(args: &Args) -> Result<PseudonymKey, BoxError> {
    if let Some(key) = &args.pseudonym_key {
        return PseudonymKey::new(key.as_bytes()).ok_or_else(|| {
            format!(
                "--pseudonym-key must be at least {} bytes",
                accord::consent::erasure::MIN_KEY_BYTES
            )
            .into()
        });
    }
    tracing::warn!("no --pseudonym-key: erasure uses a random key until the server stops");
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    Ok(PseudonymKey::new(&bytes).unwrap_or_else(|| unreachable!("32 bytes")))
}

/// The token verifier from the flags; with none, a generated secret and a
/// development token.
fn auth(args: &Args) -> Result<(Auth, Option<Generated>), BoxError> {
    if let Some(secret) = &args.jwt_secret {
        return Ok((Auth::hs256(secret)?, None));
    }
    if let Some(path) = &args.jwt_public_key_file {
        let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok((Auth::public_key_pem(&pem)?, None));
    }
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    let secret = bytes.iter().fold(String::new(), |mut hex, b| {
        use std::fmt::Write;
        let _ = write!(hex, "{b:02x}");
        hex
    });
    let token = Claims::all_scopes("dev", &[DEMO], Duration::from_secs(30 * 24 * 3600))
        .sign_hs256(secret.as_bytes())?;
    Ok((Auth::hs256(&secret)?, Some(Generated { secret, token })))
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
    auth: Auth,
    args: &Args,
    link_token: Option<Result<String, String>>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Launched, BoxError> {
    let api = Api::new(store, Arc::new(SystemClock), auth.clone())
        .with_pseudonym_key(pseudonym_key(args)?)
        .with_receipt_signer(receipt_signer(args)?, Controller::default());
    if args.demo {
        load_demo(&api).await?;
    }
    let console = Admin::new(Arc::clone(api.campaigns()), Arc::clone(api.consent()), auth);
    let admin_link = link_token.map(|t| t.and_then(|t| console.one_time_link(&t)));
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    let addr = listener.local_addr()?;
    let config = args.serve.config();
    tracing::info!(%addr, ?config, "listening");
    let done = tokio::spawn(async move {
        serve(
            listener,
            router(api).merge(admin::router(console)),
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
fn demo_link_token(args: &Args, generated: Option<&Generated>) -> Result<String, String> {
    if let Some(g) = generated {
        return Ok(g.token.clone());
    }
    let secret = args.jwt_secret.as_ref().ok_or(
        "no sign-in link: the server verifies tokens with a public key; sign in with a token",
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

const DEMO: &str = "demo";
const DEMO_ACTOR: &str = "demo-loader";

/// The walkthrough's sample data: a privacy notice, a consent with two
/// purposes (and their names), three campaigns. Each piece is created only
/// if absent (by name, code or refCode), so loading twice changes nothing.
///
/// Servers that start together on one database do not both load it: the
/// first campaign is the claim (a refCode is unique per project in every
/// store, so exactly one server creates it); the server that made it loads
/// the rest, the others wait until the last piece is there (30 s at most)
/// and then only check. (If the claimant died halfway, the wait ends and
/// the check completes what is missing.)
async fn load_demo<S: HttpStore>(api: &Api<S>) -> Result<(), BoxError> {
    let mut campaigns = Vec::new();
    for doc in [
        include_str!("demo/cart_discount.json"),
        include_str!("demo/promo_code.json"),
        include_str!("demo/freebie.json"),
    ] {
        campaigns.push(serde_json::from_str::<CampaignInput>(doc)?);
    }
    let (claim, last) = (&campaigns[0], &campaigns[campaigns.len() - 1]);
    let claimed = ensure_campaign(api, claim.clone()).await?;
    if !claimed {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !demo_campaign_exists(api, &last.ref_code).await?
            && std::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let consent_doc: Value = serde_json::from_str(include_str!("demo/consent.json"))?;
    let notice_id = ensure_content(
        api,
        "svc-privacy-notice-v1",
        "name",
        &consent_doc["privacyNotice"],
    )
    .await?;
    let mut consent = consent_doc["consent"].clone();
    consent["privacyNoticeRef"] = Value::String(notice_id);
    ensure_content(api, "svc-consent-v1", "name", &consent).await?;
    for purpose in consent_doc["purposes"].as_array().into_iter().flatten() {
        ensure_content(api, "svc-purpose-v1", "code", purpose).await?;
    }
    // The last campaign last: its presence says the load is complete.
    for input in campaigns.into_iter().skip(1) {
        ensure_campaign(api, input).await?;
    }
    Ok(())
}

/// Whether the demo project has a campaign with `ref_code`.
async fn demo_campaign_exists<S: HttpStore>(
    api: &Api<S>,
    ref_code: &str,
) -> Result<bool, BoxError> {
    Ok(api
        .campaigns()
        .store()
        .campaign_by_code(DEMO, ref_code)
        .await?
        .is_some())
}

/// Creates the campaign unless its refCode exists; whether this call
/// created it.
async fn ensure_campaign<S: HttpStore>(
    api: &Api<S>,
    input: CampaignInput,
) -> Result<bool, BoxError> {
    if demo_campaign_exists(api, &input.ref_code).await? {
        return Ok(false);
    }
    match api
        .campaigns()
        .create_campaign(DEMO, input, DEMO_ACTOR)
        .await
    {
        Ok(_) => Ok(true),
        // Another server created it first.
        Err(e) if e.code() == "duplicate_ref_code" => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The id of the record of `content_type` whose `key` attribute equals
/// that of `data`, created from `data` if there is none.
async fn ensure_content<S: HttpStore>(
    api: &Api<S>,
    content_type: &str,
    key: &str,
    data: &Value,
) -> Result<String, BoxError> {
    let value = data[key].as_str().ok_or("demo data without its key")?;
    let query = ContentQuery::from_pairs([(format!("data.{key}"), value.to_owned())])?;
    let found = api
        .consent()
        .list_content(DEMO, content_type, &query)
        .await?;
    if let Some(existing) = found.items.into_iter().next() {
        return Ok(existing.id);
    }
    let record = api
        .consent()
        .create_content(DEMO, content_type, data.clone(), DEMO_ACTOR)
        .await?;
    Ok(record.id)
}
