//! `accord codes` as a user runs it (the built binary): generate into a
//! campaign named by its refCode, export, import, and a refused import.
#![cfg(feature = "cli")]

use std::process::Command;
use std::sync::Arc;

use accord::store::sqlite::SqliteStore;

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

async fn campaign(db: &str, code: &str) -> uuid::Uuid {
    let store = Arc::new(SqliteStore::open(db).await.unwrap());
    let service = accord::CampaignService::new(store, Arc::new(accord::SystemClock));
    let input = serde_json::from_value(serde_json::json!({
        "name": code, "refCode": code,
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "rules": [{"name": "all", "when": [], "then": [{"action": "DISCOUNT", "data": []}]}]
    }))
    .unwrap();
    service
        .create_campaign("shop", input, "t")
        .await
        .unwrap()
        .id
}

#[tokio::test(flavor = "multi_thread")]
async fn generate_export_and_import_codes() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("accord.db").display());
    campaign(&db, "SPRING").await;
    let other = campaign(&db, "OTHER").await.to_string();
    let at = |campaign: &str| -> Vec<String> {
        [
            "--project",
            "shop",
            "--campaign",
            campaign,
            "--database-url",
            &db,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    };
    let run = |sub: &[&str], campaign: &str, extra: &[&str]| {
        let mut args: Vec<String> = ["codes"]
            .iter()
            .chain(sub)
            .map(|s| (*s).to_owned())
            .collect();
        args.extend(at(campaign));
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        accord(&refs)
    };
    // Not a terminal: plain progress lines, then the total.
    let (status, _, err) = run(
        &["generate"],
        "SPRING",
        &["--count", "2000", "--prefix", "SPR-"],
    );
    assert_eq!(status, 0, "{err}");
    assert!(err.contains("generated 1000/2000 codes"), "{err}");
    assert!(err.contains("generated 2000 codes in"), "{err}");
    let file = dir.path().join("codes.csv");
    let (status, _, err) = run(&["export"], "SPRING", &["--output", file.to_str().unwrap()]);
    assert_eq!(status, 0, "{err}");
    let csv = std::fs::read_to_string(&file).unwrap();
    assert_eq!(csv.lines().count(), 2001);
    assert!(csv
        .lines()
        .skip(1)
        .all(|l| l.starts_with("SPR-") && l.contains(",1,0,true,")));
    // The same codes into another campaign of the project: refused whole.
    let (status, _, err) = run(&["import"], &other, &["--input", file.to_str().unwrap()]);
    assert_ne!(status, 0);
    assert!(err.contains("already in the project"), "{err}");
    let fresh = dir.path().join("fresh.csv");
    std::fs::write(&fresh, "code\nNEW-1\nNEW-2,4\n").unwrap();
    let (status, _, err) = run(&["import"], &other, &["--input", fresh.to_str().unwrap()]);
    assert_eq!(status, 0, "{err}");
    assert!(err.contains("imported 2 codes"), "{err}");
    // An unknown campaign.
    let (status, _, err) = run(&["generate"], "NOPE", &["--count", "1"]);
    assert_ne!(status, 0);
    assert!(
        err.contains("no campaign with id or refCode \"NOPE\""),
        "{err}"
    );
}
