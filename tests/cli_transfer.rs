//! `accord export` and `accord import` as a user runs them (the built
//! binary): a project's campaigns and consent content move to a fresh
//! database unchanged, and importing again changes nothing.
#![cfg(feature = "cli")]

use std::process::Command;

use accord::cli::{Cli, Command as Sub};

/// Runs the built `accord` binary; (status code, stdout, stderr).
fn accord(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_accord"))
        .args(args)
        .env_remove("ACCORD_DATABASE_URL")
        .env_remove("ACCORD_CONFIG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The records of an export file (every line but the header).
fn records(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    assert!(lines[0].contains("\"accordExport\":1"), "{}", lines[0]);
    lines.remove(0);
    lines
}

/// Loads the `--demo` data (three campaigns, a notice, a consent, two
/// purposes) into `db` and records one acceptance there.
async fn demo_database(db: &str) {
    let argv = [
        "accord",
        "serve",
        "--demo",
        "--addr",
        "127.0.0.1:0",
        "--database-url",
        db,
    ];
    let Some(Sub::Serve(args)) = Cli::try_parse_with_config(argv).unwrap().command else {
        panic!("serve")
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = accord::cli::serve::start(args, async {
        let _ = stopped.await;
    })
    .await
    .unwrap();
    let token = started.generated.clone().unwrap().token;
    let base = format!("http://{}/bff/api/consent/projects/demo", started.addr);
    let client = reqwest::Client::new();
    let offered: serde_json::Value = client
        .get(format!("{base}/to-accept?app=demo-app&dataSubject=u1"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let accepted = client
        .post(format!("{base}/consent-acceptance"))
        .bearer_auth(&token)
        .json(&serde_json::json!({
            "app": "demo-app", "dataSubject": "u1", "consentId": offered[0]["id"],
            "userAgent": "test", "country": "TH", "localIp": "10.0.0.1",
            "osVersion": "Linux", "model": "laptop", "deviceFingerprintId": "fp-1",
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(accepted.status(), 201);
    stop.send(()).unwrap();
    started.done.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
#[allow(clippy::too_many_lines)] // one story, told in order
async fn export_then_import_into_a_fresh_database_and_again() {
    let dir = tempfile::tempdir().unwrap();
    let source = format!("sqlite://{}", dir.path().join("source.db").display());
    let target = format!("sqlite://{}", dir.path().join("target.db").display());
    demo_database(&source).await;
    let file = dir.path().join("demo.jsonl");
    let file = file.to_str().unwrap();

    let (code, _, err) = accord(&[
        "export",
        "--project",
        "demo",
        "--database-url",
        &source,
        "-o",
        file,
    ]);
    assert_eq!(code, 0, "{err}");
    // Not a terminal: plain progress lines.
    assert!(
        err.contains("exported 7/7 records: 3 campaigns, 4 content records"),
        "{err}"
    );
    let exported = records(std::path::Path::new(file));
    assert!(
        !exported.iter().any(|l| l.contains("u1")),
        "acceptances stay where they were recorded"
    );

    let (code, out, err) = accord(&["import", "-i", file, "--database-url", &target]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "imported into project \"demo\": 7 created, 0 updated, 0 unchanged\n"
    );

    // The fresh database now exports the same records, ids included.
    let again = dir.path().join("again.jsonl");
    let (code, _, err) = accord(&[
        "export",
        "--project",
        "demo",
        "--database-url",
        &target,
        "-o",
        again.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(records(&again), exported);

    // Importing again changes nothing.
    let (code, out, err) = accord(&["import", "-i", file, "--database-url", &target]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "imported into project \"demo\": 0 created, 0 updated, 7 unchanged\n"
    );
    let (_, _, _) = accord(&[
        "export",
        "--project",
        "demo",
        "--database-url",
        &target,
        "-o",
        again.to_str().unwrap(),
    ]);
    assert_eq!(records(&again), exported);

    // A changed campaign is updated in place; standard input works too; a
    // project can be renamed on the way.
    let text = std::fs::read_to_string(file).unwrap();
    let changed = text.replacen("\"name\":\"", "\"name\":\"Renamed ", 1);
    assert_ne!(changed, text);
    let mut child = Command::new(env!("CARGO_BIN_EXE_accord"))
        .args(["import", "--database-url", &target])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), changed.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "imported into project \"demo\": 0 created, 1 updated, 6 unchanged\n"
    );
    let (code, out, err) = accord(&[
        "import",
        "-i",
        file,
        "--project",
        "copy",
        "--database-url",
        &target,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("imported into project \"copy\": 7 created"),
        "{out}"
    );

    // A damaged file writes nothing and names its line.
    let damaged = dir.path().join("damaged.jsonl");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(3, "{\"kind\":\"campaign\"}");
    std::fs::write(&damaged, lines.join("\n")).unwrap();
    let fresh = format!("sqlite://{}", dir.path().join("fresh.db").display());
    let (code, _, err) = accord(&[
        "import",
        "-i",
        damaged.to_str().unwrap(),
        "--database-url",
        &fresh,
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("line 4"), "{err}");
    let (code, _, err) = accord(&["export", "--project", "demo", "--database-url", &fresh]);
    assert_ne!(code, 0, "nothing was written, not even the tables");
    assert!(err.contains("accord migrate"), "{err}");
    // A record the target refuses stops the import at its line.
    let invalid = text.replacen("\"refCode\":\"", "\"refCode\":\"\\u0000", 1);
    std::fs::write(&damaged, invalid).unwrap();
    let (code, _, err) = accord(&[
        "import",
        "-i",
        damaged.to_str().unwrap(),
        "--database-url",
        &fresh,
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("refCode"), "{err}");
}
