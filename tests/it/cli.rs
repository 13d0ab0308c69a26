//! The `accord` command: its subcommands as a user runs them (the built
//! binary), configuration from flags and a TOML file, the `--demo` secret
//! kept across restarts, and the configuration table of
//! `docs/operations.md`.
#![cfg(feature = "cli")]

use std::process::Command;
use std::time::Duration;

use accord::cli::{Cli, Command as Sub, ServeArgs};

const SECRET: &str = "a-fixed-secret-of-at-least-32-bytes!";

fn serve_args(argv: &[&str]) -> ServeArgs {
    let mut full = vec!["accord"];
    full.extend_from_slice(argv);
    let cli = Cli::try_parse_with_config(full).unwrap();
    match cli.command {
        Some(Sub::Serve(args)) => args,
        None => cli.serve,
        Some(other) => panic!("not serve: {other:?}"),
    }
}

/// A server started in-process; stop it by sending on the channel.
async fn start(args: ServeArgs) -> (accord::cli::Started, tokio::sync::oneshot::Sender<()>) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = accord::cli::serve::start(args, async {
        let _ = stopped.await;
    })
    .await
    .unwrap();
    (started, stop)
}

async fn stop(started: accord::cli::Started, stop: tokio::sync::oneshot::Sender<()>) {
    stop.send(()).unwrap();
    started.done.await.unwrap().unwrap();
}

/// The status of GET `path` with `token`.
async fn get(addr: std::net::SocketAddr, path: &str, token: &str) -> u16 {
    reqwest::Client::new()
        .get(format!("http://{addr}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Runs the built `accord` binary; (status code, stdout, stderr).
fn accord(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_accord"))
        .args(args)
        .env_remove("ACCORD_DATABASE_URL")
        .env_remove("ACCORD_JWT_SECRET")
        .env_remove("ACCORD_CONFIG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn demo_keeps_its_secret_and_data_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("accord.db").display());
    let flags = ["--demo", "--addr", "127.0.0.1:0", "--database-url", &db];
    let (first, stop1) = start(serve_args(&flags)).await;
    let generated = first.generated.clone().unwrap();
    assert!(generated.kept);
    assert!(
        first.banner().contains("kept in the database"),
        "{}",
        first.banner()
    );
    let copied = generated.token;
    assert_eq!(
        get(first.addr, "/campaign/api/projects/demo/campaigns", &copied).await,
        200
    );
    stop(first, stop1).await;

    // After a restart, the token copied from the first run still works,
    // and so does one minted by `accord token` from the kept secret.
    let (second, stop2) = start(serve_args(&flags)).await;
    assert_eq!(second.generated.as_ref().unwrap().secret, generated.secret);
    assert_eq!(
        get(
            second.addr,
            "/campaign/api/projects/demo/campaigns",
            &copied
        )
        .await,
        200
    );
    let (code, minted, err) = accord(&[
        "token",
        "--project",
        "demo",
        "--scope",
        "campaign.admin",
        "--database-url",
        &db,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        get(
            second.addr,
            "/campaign/api/projects/demo/campaigns",
            minted.trim()
        )
        .await,
        200
    );
    stop(second, stop2).await;

    // Without --demo the generated secret is not kept (nor printed as kept).
    let (third, stop3) = start(serve_args(&[
        "--addr",
        "127.0.0.1:0",
        "--database-url",
        &db,
    ]))
    .await;
    let g = third.generated.clone().unwrap();
    assert!(!g.kept);
    assert_ne!(g.secret, generated.secret);
    stop(third, stop3).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_from_the_token_command_is_accepted_by_serve() {
    let (started, stopper) = start(serve_args(&[
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--database-url",
        "memory:",
        "--jwt-secret",
        SECRET,
    ]))
    .await;
    let (code, out, err) = accord(&[
        "token",
        "--project",
        "shop",
        "--scope",
        "campaign.admin",
        "--sub",
        "ci",
        "--ttl",
        "5m",
        "--jwt-secret",
        SECRET,
    ]);
    assert_eq!(code, 0, "{err}");
    let token = out.trim();
    assert_eq!(
        get(started.addr, "/campaign/api/projects/shop/campaigns", token).await,
        200
    );
    // Its project and scopes are what was asked, no more.
    assert_eq!(
        get(
            started.addr,
            "/campaign/api/projects/other/campaigns",
            token
        )
        .await,
        403
    );
    assert_eq!(
        get(
            started.addr,
            "/campaign/api/projects/shop/redemptions",
            token
        )
        .await,
        403
    );
    stop(started, stopper).await;

    // Refusals: an unknown scope, a short secret, no secret anywhere.
    let (code, _, err) = accord(&[
        "token",
        "--project",
        "shop",
        "--scope",
        "everything",
        "--jwt-secret",
        SECRET,
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("unknown scope"), "{err}");
    let (code, _, err) = accord(&["token", "--project", "shop", "--jwt-secret", "short"]);
    assert_ne!(code, 0);
    assert!(err.contains("32 bytes"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("none.db").display());
    let (code, _, err) = accord(&["token", "--project", "shop", "--database-url", &db]);
    assert_ne!(code, 0);
    assert!(err.contains("no development secret"), "{err}");
}

#[test]
fn migrate_checks_then_applies_then_is_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("m.db").display());
    let (code, out, err) = accord(&["migrate", "--check", "--database-url", &db]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("pending: 1, 2"), "{out}");
    let (code, out, err) = accord(&["migrate", "--database-url", &db]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("applied: 1, 2"), "{out}");
    let (code, out, _) = accord(&["migrate", "--check", "--database-url", &db]);
    assert_eq!((code, out.as_str()), (0, "up to date\n"));
}

#[test]
fn settings_come_from_flags_then_the_environment_then_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("accord.toml");
    std::fs::write(
        &file,
        r#"
addr = "127.0.0.1:9999"
database-url = "memory:"
jwt-secret = "a-secret-from-the-file-of-32-bytes-or-more"
demo = true
max-connections = 12
pg-acquire-timeout = "5s"
# a setting of another subcommand is allowed
check = true
"#,
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let args = serve_args(&["--config", path]);
    assert_eq!(args.addr.to_string(), "127.0.0.1:9999");
    assert_eq!(args.database_url, "memory:");
    assert!(args.demo);
    assert_eq!(args.serve.max_connections, Some(12));
    assert_eq!(args.pool.pg_acquire_timeout, Some(Duration::from_secs(5)));
    // The command line wins.
    let args = serve_args(&["serve", "--config", path, "--addr", "127.0.0.1:1"]);
    assert_eq!(args.addr.to_string(), "127.0.0.1:1");
    assert_eq!(args.database_url, "memory:");

    // A key no subcommand knows is refused, naming it.
    std::fs::write(&file, "adress = \"127.0.0.1:1\"\n").unwrap();
    let err = Cli::try_parse_with_config(["accord", "--config", path]).unwrap_err();
    assert!(err.to_string().contains("\"adress\""), "{err}");
    // So is a value of the wrong kind.
    std::fs::write(&file, "max-connections = \"many\"\n").unwrap();
    assert!(Cli::try_parse_with_config(["accord", "--config", path]).is_err());
}

/// Every flag of every subcommand is in the configuration table of
/// `docs/operations.md`, with its environment variable.
#[test]
fn the_operations_guide_lists_every_flag() {
    use clap::CommandFactory as _;
    let guide = include_str!("../../docs/operations.md");
    let command = Cli::command();
    for sub in command.get_subcommands() {
        for arg in sub.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if long == "help" || long == "version" {
                continue;
            }
            let row = guide
                .lines()
                .find(|l| l.starts_with(&format!("| `--{long}`")))
                .unwrap_or_else(|| panic!("docs/operations.md has no row for --{long}"));
            if let Some(env) = arg.get_env() {
                assert!(
                    row.contains(&format!("`{}`", env.to_string_lossy())),
                    "the row of --{long} lacks its environment variable: {row}"
                );
            }
        }
    }
}

/// `--log-format json`: every log line is one JSON object, and a request's
/// line carries its request id.
#[test]
fn json_logs_carry_the_request_id() {
    use std::io::{BufRead as _, BufReader, Read as _};
    let mut child = Command::new(env!("CARGO_BIN_EXE_accord"))
        .args([
            "serve",
            "--log-format",
            "json",
            "--addr",
            "127.0.0.1:0",
            "--database-url",
            "memory:",
            "--jwt-secret",
            SECRET,
        ])
        .env_remove("ACCORD_CONFIG")
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut addr = String::new();
    let mut line = String::new();
    while stdout.read_line(&mut line).unwrap() > 0 {
        if let Some(rest) = line.split("listening on http://").nth(1) {
            addr = rest.split_whitespace().next().unwrap().to_owned();
            break;
        }
        line.clear();
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let status = runtime.block_on(async {
        reqwest::Client::new()
            .get(format!(
                "http://{addr}/campaign/api/projects/shop/campaigns"
            ))
            .header("x-request-id", "json-7")
            .send()
            .await
            .unwrap()
            .status()
    });
    assert_eq!(status, 401);
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap();
    child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let request = lines
        .iter()
        .find(|l| l["status"] == 401)
        .unwrap_or_else(|| panic!("no request line in {stderr}"));
    assert_eq!(request["span"]["request_id"], "json-7", "{request}");
    assert_eq!(
        request["route"],
        "/campaign/api/projects/{projId}/campaigns"
    );
}

/// CORS is off by default; with `--cors-origin` a preflight from that
/// origin is allowed and one from another is not.
#[tokio::test(flavor = "multi_thread")]
async fn cors_is_off_by_default_and_follows_the_configured_origins() {
    let preflight = |addr: std::net::SocketAddr, origin: &'static str| async move {
        reqwest::Client::new()
            .request(
                reqwest::Method::OPTIONS,
                format!("http://{addr}/campaign/api/projects/shop/search"),
            )
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization, content-type",
            )
            .send()
            .await
            .unwrap()
    };
    let base = [
        "--addr",
        "127.0.0.1:0",
        "--database-url",
        "memory:",
        "--jwt-secret",
        SECRET,
    ];
    let (off, stop_off) = start(serve_args(&base)).await;
    let res = preflight(off.addr, "https://shop.example").await;
    assert!(!res.headers().contains_key("access-control-allow-origin"));
    stop(off, stop_off).await;

    let mut flags = base.to_vec();
    flags.extend([
        "--cors-origin",
        "https://shop.example,https://admin.example",
    ]);
    let (on, stop_on) = start(serve_args(&flags)).await;
    let res = preflight(on.addr, "https://shop.example").await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["access-control-allow-origin"],
        "https://shop.example"
    );
    let allowed = res.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    assert!(allowed.contains("authorization"), "{allowed}");
    let res = preflight(on.addr, "https://evil.example").await;
    assert!(!res.headers().contains_key("access-control-allow-origin"));
    // A real request from the origin gets the header and sees x-request-id.
    let res = reqwest::Client::new()
        .get(format!("http://{}/healthz", on.addr))
        .header("origin", "https://shop.example")
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.headers()["access-control-allow-origin"],
        "https://shop.example"
    );
    let exposed = res.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    assert!(
        exposed.contains("x-request-id") && exposed.contains("location"),
        "{exposed}"
    );
    stop(on, stop_on).await;

    // A malformed origin stops the server from starting.
    let mut flags = base.to_vec();
    flags.extend(["--cors-origin", "shop.example"]);
    let err = accord::cli::serve::start(serve_args(&flags), std::future::pending())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not an origin"), "{err}");
}

/// `--jwks-file` with `--jwt-issuer`: an EdDSA token of the set's key and
/// the issuer is accepted, one without the issuer is not.
#[tokio::test(flavor = "multi_thread")]
async fn serve_verifies_tokens_against_a_jwks_file() {
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, include_str!("../data/jwt/jwks_before.json")).unwrap();
    let (started, stopper) = start(serve_args(&[
        "--addr",
        "127.0.0.1:0",
        "--database-url",
        "memory:",
        "--jwks-file",
        path.to_str().unwrap(),
        "--jwt-issuer",
        "https://id.example",
    ]))
    .await;
    assert!(started.generated.is_none());
    let key = EncodingKey::from_ed_pem(include_bytes!("../data/jwt/ed25519_private.pem")).unwrap();
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some("ed-1".to_owned());
    let mut claims = serde_json::json!({
        "sub": "svc", "exp": chrono::Utc::now().timestamp() + 600,
        "scope": "campaign.admin", "projects": ["shop"],
    });
    let without = jsonwebtoken::encode(&header, &claims, &key).unwrap();
    claims["iss"] = "https://id.example".into();
    let with = jsonwebtoken::encode(&header, &claims, &key).unwrap();
    let path = "/campaign/api/projects/shop/campaigns";
    assert_eq!(get(started.addr, path, &with).await, 200);
    assert_eq!(get(started.addr, path, &without).await, 401);
    stop(started, stopper).await;
}

/// `--jwks-url`: the set is fetched at start from the identity provider's
/// URL (here a local one) and verifies its keys' tokens; a URL that cannot
/// be fetched stops the start with the reason.
#[tokio::test(flavor = "multi_thread")]
async fn serve_verifies_tokens_against_a_jwks_url() {
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(|| async { include_str!("../data/jwt/jwks_before.json") }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    let idp = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let base = ["--addr", "127.0.0.1:0", "--database-url", "memory:"];
    let mut flags = base.to_vec();
    flags.extend(["--jwks-url", &url, "--jwks-refresh", "1m"]);
    let (started, stopper) = start(serve_args(&flags)).await;
    assert!(started.generated.is_none());
    let key = EncodingKey::from_ed_pem(include_bytes!("../data/jwt/ed25519_private.pem")).unwrap();
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some("ed-1".to_owned());
    let claims = serde_json::json!({
        "sub": "svc", "exp": chrono::Utc::now().timestamp() + 600,
        "scope": "campaign.admin", "projects": ["shop"],
    });
    let token = jsonwebtoken::encode(&header, &claims, &key).unwrap();
    assert_eq!(
        get(
            started.addr,
            "/campaign/api/projects/shop/campaigns",
            &token
        )
        .await,
        200
    );
    stop(started, stopper).await;

    idp.abort();
    let _ = idp.await;
    let err = accord::cli::serve::start(serve_args(&flags), std::future::pending())
        .await
        .unwrap_err();
    assert!(err.to_string().contains(&url), "{err}");
    // Keys come from one place: a URL with another key source is refused.
    let mut both = flags.clone();
    both.extend(["--jwt-secret", SECRET]);
    let mut full = vec!["accord"];
    full.extend_from_slice(&both);
    assert!(Cli::try_parse_with_config(full).is_err());
}
