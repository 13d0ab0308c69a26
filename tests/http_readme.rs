//! The README, the HTTP guide (`docs/http.md`) and the rule language
//! reference (`docs/rules.md`) cannot go stale: this test starts the server
//! (the `accord` command's own code, parsed from the README's walkthrough
//! command: `--demo` and no key, exactly as a newcomer would) and runs every
//! ```sh block between `<!-- BEGIN tested -->` and `<!-- END tested -->`
//! with bash and curl, against it. Each `# → a … b` line states fragments
//! the output must contain, in order.
//!
//! It also checks the README's first lines and size, the snippet of
//! `docs/embedding.md` against `examples/embed_axum.rs`, the formula table
//! of `docs/rules.md` against the formula interpreter, that the server's
//! log at info holds no personal data from the walkthrough, and that
//! `--demo` is idempotent.
#![cfg(feature = "cli")]

use accord::cli::serve as server;

mod support;
use support::log_capture;

use std::process::Command;

use accord::cli::{Cli, Command as Sub};
use log_capture::Captured;

const README: &str = include_str!("../README.md");
/// The HTTP guide, whose route examples continue the README walkthrough.
const HTTP_GUIDE: &str = include_str!("../docs/http.md");
/// The rule language reference, whose worked examples come after.
const RULES_GUIDE: &str = include_str!("../docs/rules.md");

/// The tested shell: every ```sh block of the tested regions of the README,
/// then of the HTTP guide, then of the rule language reference, in order.
fn tested_script() -> String {
    let mut script = String::new();
    for doc in [README, HTTP_GUIDE, RULES_GUIDE] {
        tested_blocks(doc, &mut script);
    }
    script
}

/// Appends the ```sh blocks of `doc`'s tested regions to `script`.
fn tested_blocks(doc: &str, script: &mut String) {
    let mut rest = doc;
    while let Some(start) = rest.find("<!-- BEGIN tested -->") {
        let region_end = rest[start..]
            .find("<!-- END tested -->")
            .expect("an END tested for every BEGIN")
            + start;
        let mut region = &rest[start..region_end];
        while let Some(open) = region.find("```sh\n") {
            let body = &region[open + 6..];
            let close = body.find("\n```").expect("a closed sh block");
            script.push_str(&body[..close]);
            script.push('\n');
            region = &body[close + 4..];
        }
        rest = &rest[region_end..];
    }
}

/// The expectations of the script: for each `# → …` line, the fragments
/// separated by ` … `.
fn expectations(script: &str) -> Vec<Vec<String>> {
    script
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("# → "))
        .map(|e| e.split(" … ").map(str::to_owned).collect())
        .collect()
}

#[test]
fn readme_starts_with_the_two_commands() {
    let lines: Vec<&str> = README.lines().take(6).collect();
    assert_eq!(lines[0], "# Accord");
    assert_eq!(lines[2], "```sh");
    assert!(
        lines[3].starts_with("cargo run --release ") && !lines[3].contains("--example"),
        "{}",
        lines[3]
    );
    assert!(
        lines[4].starts_with("cargo test --all-features "),
        "{}",
        lines[4]
    );
    assert_eq!(lines[5], "```");
}

/// The README stays a short page for users; details belong in docs/.
#[test]
fn readme_is_at_most_15_kb() {
    assert!(
        README.len() <= 15 * 1024,
        "README.md is {} bytes; move details to docs/",
        README.len()
    );
}

/// Every row of the formula table of docs/rules.md: the formula, the names
/// it uses (`` `price` 399.50, `amount` 2 ``) and its result as written.
#[test]
fn the_formula_table_of_the_rules_reference_holds() {
    use accord::formula::{Formula, Lookup};
    let start = RULES_GUIDE.find("<!-- BEGIN formula table -->").unwrap();
    let end = RULES_GUIDE.find("<!-- END formula table -->").unwrap();
    let code = |cell: &str| cell.trim().trim_matches('`').to_owned();
    let mut rows = 0;
    for line in RULES_GUIDE[start..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
    {
        let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
        let (source, with, expected) = (code(cells[0]), cells[1].trim(), code(cells[2]));
        let names: Vec<(String, String)> = with
            .split(", ")
            .filter(|w| !w.is_empty())
            .map(|w| {
                let (name, value) = w.rsplit_once(' ').unwrap();
                (code(name), value.to_owned())
            })
            .collect();
        let formula = Formula::parse(&source).unwrap_or_else(|e| panic!("{source}: {e}"));
        let result = formula
            .eval(&|name| {
                names
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(Lookup::Missing, |(_, v)| Lookup::parse(v))
            })
            .unwrap_or_else(|e| panic!("{source}: {e}"));
        assert_eq!(result.normalize().to_string(), expected, "{source}");
        rows += 1;
    }
    assert!(rows >= 15, "only {rows} rows");
}

#[test]
fn embedding_guide_snippet_is_the_example() {
    let guide = include_str!("../docs/embedding.md");
    let example = include_str!("../examples/embed_axum.rs");
    let begin = example.find("// README:begin\n").unwrap() + "// README:begin\n".len();
    let end = example.find("// README:end").unwrap();
    let snippet = format!("```rust\n{}```", &example[begin..end]);
    assert!(
        guide.contains(&snippet),
        "docs/embedding.md's snippet differs from examples/embed_axum.rs"
    );
}

/// The method and path of a curl command line: `GET /campaign/api/…`.
fn curl_request(line: &str) -> Option<(String, Vec<String>)> {
    if !line.contains("curl ") {
        return None;
    }
    let url = line.split("$BASE").nth(1)?;
    let path: String = url
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '?')
        .collect();
    let method = line
        .split("-X ")
        .nth(1)
        .and_then(|m| m.split_whitespace().next())
        .unwrap_or("GET")
        .to_owned();
    Some((method, path.split('/').skip(1).map(str::to_owned).collect()))
}

fn matches_template(template: &str, segments: &[String]) -> bool {
    let parts: Vec<&str> = template.split('/').skip(1).collect();
    parts.len() == segments.len()
        && parts.iter().zip(segments).all(|(t, s)| match *t {
            "{projId}" => s == "demo",
            "{type}" => s.starts_with("svc-"),
            t if t.starts_with('{') => !s.is_empty(),
            t => t == s,
        })
}

#[test]
fn every_route_of_the_router_has_a_tested_readme_example() {
    let script = tested_script();
    let requests: Vec<(String, Vec<String>)> = script.lines().filter_map(curl_request).collect();
    assert!(requests.len() >= 23, "{requests:?}");
    for r in accord::http::ROUTES {
        assert!(
            requests
                .iter()
                .any(|(m, segs)| m == r.method && matches_template(r.path, segs)),
            "no tested README example for {} {}",
            r.method,
            r.path
        );
    }
}

/// Starts the `accord` server in-process with `flags`; stop it by sending
/// on the channel.
fn start(
    runtime: &tokio::runtime::Runtime,
    flags: &[&str],
) -> (server::Started, tokio::sync::oneshot::Sender<()>) {
    let mut argv = vec!["accord"];
    argv.extend_from_slice(flags);
    let cli = Cli::try_parse_with_config(argv).unwrap();
    let args = match cli.command {
        Some(Sub::Serve(args)) => args,
        None => cli.serve,
        Some(other) => panic!("not serve: {other:?}"),
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = runtime
        .block_on(server::start(args, async {
            let _ = stopped.await;
        }))
        .unwrap();
    (started, stop)
}

/// Runs `script` with bash (`set -euo pipefail`); its stdout.
fn run_script(
    runtime: &tokio::runtime::Runtime,
    script: &str,
    base: String,
    token: String,
) -> String {
    let script = format!("set -euo pipefail\n{script}");
    let output = runtime.block_on(async move {
        tokio::task::spawn_blocking(move || {
            Command::new("bash")
                .arg("-c")
                .arg(script)
                .env("BASE", base)
                .env("TOKEN", token)
                .output()
                .unwrap()
        })
        .await
        .unwrap()
    });
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the walkthrough failed ({}):\n{stderr}\n--- stdout ---\n{stdout}",
        output.status
    );
    stdout
}

/// Every `# →` expectation of `script` is in `stdout`, in order.
fn check_expectations(script: &str, stdout: &str) {
    let mut at = 0;
    let expected = expectations(script);
    assert!(expected.len() >= 25, "only {} expectations", expected.len());
    for fragments in expected {
        for f in &fragments {
            match stdout[at..].find(f.as_str()) {
                Some(i) => at += i + f.len(),
                None => panic!(
                    "expected {f:?} (of {fragments:?}) after:\n{}",
                    &stdout[at..]
                ),
            }
        }
    }
}

#[test]
fn the_readme_walkthrough_runs_against_the_demo_server() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_env_filter("info")
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("accord.db").display());
    let runtime = tokio::runtime::Runtime::new().unwrap();

    // A newcomer's start: the README's command (--demo, no key).
    let command = README
        .lines()
        .find(|l| l.starts_with("cargo run --release -- "))
        .expect("the walkthrough starts the server with cargo run --release -- …");
    let mut flags: Vec<&str> = command["cargo run --release -- ".len()..]
        .split_whitespace()
        .collect();
    assert_eq!(flags, ["--demo"], "{command}");
    flags.extend(["--addr", "127.0.0.1:0", "--database-url", &db]);
    let (started, stop) = start(&runtime, &flags);
    let banner = started.banner();
    let token = banner
        .lines()
        .find_map(|l| l.trim().strip_prefix("export TOKEN="))
        .expect("the banner prints an export TOKEN= line")
        .to_owned();
    assert!(banner.contains("ACCORD_JWT_SECRET="), "{banner}");
    assert!(
        banner.contains(&format!("listening on http://{}", started.addr)),
        "{banner}"
    );
    // The admin console's one-time sign-in link opens its page.
    let link = banner
        .split_whitespace()
        .find(|w| w.contains("/admin/signin/link?code="))
        .expect("the banner prints the admin console's sign-in link");
    let page = runtime.block_on(async { reqwest::get(link).await.unwrap().text().await.unwrap() });
    assert!(page.contains("This one-time link signs you in"), "{page}");

    let script = tested_script();
    let stdout = run_script(&runtime, &script, format!("http://{}", started.addr), token);
    check_expectations(&script, &stdout);

    // Graceful stop.
    stop.send(()).unwrap();
    runtime.block_on(started.done).unwrap().unwrap();

    // The log at info: routes, no personal data of the walkthrough.
    let log = captured.text();
    assert!(
        log.contains("route=/bff/api/consent/projects/{projId}/consent-acceptance status=201"),
        "{log}"
    );
    for personal in [
        "u1",
        "u2",
        "fp-demo-1",
        "fp-u2",
        "192.168.1.20",
        "10.0.0.8",
        "Pixel 8",
        "order-1001",
    ] {
        assert!(
            !log.contains(personal),
            "{personal:?} in the server log:\n{log}"
        );
    }

    demo_is_idempotent(&runtime, &db);
}

/// `--demo` again on the same database: nothing is duplicated.
fn demo_is_idempotent(runtime: &tokio::runtime::Runtime, db: &str) {
    const SECRET: &str = "a-fixed-secret-of-at-least-32-bytes!";
    let (again, stop) = start(
        runtime,
        &[
            "--demo",
            "--addr",
            "127.0.0.1:0",
            "--database-url",
            db,
            "--jwt-secret",
            SECRET,
        ],
    );
    assert!(again.generated.is_none());
    let token =
        accord::http::Claims::all_scopes("t", &["demo"], std::time::Duration::from_secs(60))
            .sign_hs256(SECRET.as_bytes())
            .unwrap();
    let total = |path: &str| {
        let url = format!("http://{}{path}", again.addr);
        let token = token.clone();
        runtime.block_on(async move {
            let res = reqwest::Client::new()
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
            res.headers()["x-total-count"].to_str().unwrap().to_owned()
        })
    };
    assert_eq!(total("/campaign/api/projects/demo/campaigns?q=demo"), "3");
    assert_eq!(total("/cms/api/projects/demo/c/svc-consent-v1"), "1");
    assert_eq!(total("/cms/api/projects/demo/c/svc-purpose-v1"), "2");
    stop.send(()).unwrap();
    runtime.block_on(again.done).unwrap().unwrap();
}
