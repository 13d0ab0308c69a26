//! The offline verifiers of the `accord` binary: `ledger verify` on an
//! exported ledger (with and without the head), `receipt verify` on a
//! receipt against the JWK set and the ledger; a changed byte fails.
#![cfg(feature = "cli")]
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use accord::store::memory::MemoryStore;
use serde_json::{json, Value};

use crate::http_receipts::{acceptance, serve};

/// Runs the built `accord` binary; (status code, stdout as JSON or null, stderr).
fn accord(args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_accord"))
        .args(args)
        .env_remove("ACCORD_CONFIG")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_str(&stdout).unwrap_or(Value::Null),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

#[tokio::test]
async fn ledger_and_receipts_verify_offline() {
    let w = serve(Arc::new(MemoryStore::new()), "cli-verify").await;
    let consent = w.consent("English text", "").await;
    let accepted = w
        .ok(
            "POST",
            &w.bff("consent-acceptance"),
            Some(&acceptance(&consent, None)),
        )
        .await;
    let purpose = w
        .ok(
            "POST",
            &w.bff("purpose-acceptance"),
            Some(&json!({"app": "shop", "dataSubject": "u1", "purposeCode": "sms"})),
        )
        .await;
    let res = w.send("GET", &w.c("/ledger"), None).await;
    let head = |name: &str| res.headers()[name].to_str().unwrap().to_owned();
    let (position, hash) = (head("x-ledger-head-position"), head("x-ledger-head-hash"));
    let ledger = res.text().await.unwrap();
    assert_eq!(ledger.lines().count(), 2);
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "ledger.jsonl", &ledger);

    // The ledger, with and without the head.
    let (code, report, err) = accord(&["ledger", "verify", &file]);
    assert_eq!(code, 0, "{report} {err}");
    assert_eq!(report["valid"], true);
    assert_eq!(report["entries"], 2);
    let with_head = [
        "ledger",
        "verify",
        &file,
        "--head-position",
        &position,
        "--head-hash",
        &hash,
    ];
    assert_eq!(accord(&with_head).0, 0);
    // The last entry removed: only the head shows it.
    let first = write(dir.path(), "first.jsonl", ledger.lines().next().unwrap());
    assert_eq!(accord(&["ledger", "verify", &first]).0, 0);
    let (code, report, _) = accord(&[
        "ledger",
        "verify",
        &first,
        "--head-position",
        &position,
        "--head-hash",
        &hash,
    ]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["problem"]["kind"], "REMOVED");
    assert_eq!(report["problem"]["position"], 2);
    // A changed entry is named.
    let changed = ledger.replacen("\"shop\"", "\"shoq\"", 1);
    let changed = write(dir.path(), "changed.jsonl", &changed);
    let (code, report, _) = accord(&["ledger", "verify", &changed]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["problem"]["kind"], "CHANGED");
    assert_eq!(report["problem"]["position"], 1);
    // Usage and read errors.
    assert_eq!(
        accord(&["ledger", "verify", "/nonexistent/ledger.jsonl"]).0,
        2
    );
    assert_eq!(
        accord(&["ledger", "verify", &file, "--head-position", "2"]).0,
        2
    );

    // Receipts of the acceptance and of the purpose event.
    let jwks = write(dir.path(), "jwks.json", &w.jwks().await.to_string());
    for id in [&accepted["id"], &purpose["id"]] {
        let id = id.as_str().unwrap();
        let signed = w.ok("GET", &w.c(&format!("/receipts/{id}")), None).await;
        let receipt = write(dir.path(), "receipt.json", &signed.to_string());
        let (code, report, err) = accord(&["receipt", "verify", &receipt, "--jwks", &jwks]);
        assert_eq!(code, 0, "{report} {err}");
        assert_eq!(report["signature"], true);
        assert_eq!(report["inLedger"], Value::Null);
        assert_eq!(report["receipt"], signed["receipt"]);
        let jws = signed["jws"].as_str().unwrap();
        let bare = write(dir.path(), "receipt.jws", jws);
        let in_ledger = [
            "receipt",
            "verify",
            &bare,
            "--jwks",
            &jwks,
            "--ledger",
            &file,
            "--head-position",
            &position,
            "--head-hash",
            &hash,
        ];
        let (code, report, err) = accord(&in_ledger);
        assert_eq!(code, 0, "{report} {err}");
        assert_eq!(report["inLedger"], true);
        // Not in a changed ledger.
        let (code, report, _) = accord(&[
            "receipt", "verify", &bare, "--jwks", &jwks, "--ledger", &changed,
        ]);
        assert_eq!(code, 1, "{report}");
        assert_eq!(report["inLedger"], false);
        // One changed byte of the JWS: refused.
        let i = jws.len() / 3;
        let mut bytes = jws.as_bytes().to_vec();
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let forged = write(dir.path(), "forged.jws", &String::from_utf8(bytes).unwrap());
        let (code, report, _) = accord(&["receipt", "verify", &forged, "--jwks", &jwks]);
        assert_eq!(code, 1, "{report}");
        assert_eq!(report["valid"], false);
    }
    // Another key set: refused; a missing file: 2.
    let other = write(dir.path(), "other.json", r#"{"keys": []}"#);
    let receipt = write(
        dir.path(),
        "receipt.json",
        &w.ok(
            "GET",
            &w.c(&format!("/receipts/{}", accepted["id"].as_str().unwrap())),
            None,
        )
        .await
        .to_string(),
    );
    assert_eq!(
        accord(&["receipt", "verify", &receipt, "--jwks", &other]).0,
        1
    );
    assert_eq!(
        accord(&["receipt", "verify", "/nonexistent", "--jwks", &jwks]).0,
        2
    );
}
