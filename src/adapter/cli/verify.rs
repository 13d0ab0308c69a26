//! Offline verifiers: `accord ledger verify` checks an exported consent
//! ledger, `accord receipt verify` a signed consent receipt against a JWK
//! set and, optionally, a ledger export. Neither opens a database or the
//! network: an auditor runs them on files the operator handed over.
//!
//! Both print their report as JSON on stdout and exit with 0 when it
//! holds, 1 when it does not (the first problem is named), 2 on a usage or
//! read error.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use crate::adapter::http::receipt::{receipt_in_ledger, verify_receipt_with_jwks};
use crate::core::consent::ledger::{verify_jsonl, LedgerHead};

/// What `accord ledger` does.
#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Check an exported ledger (the JSON Lines of
    /// `GET /consent/api/projects/{projId}/ledger`, pages saved one after
    /// the other): prints the report, exits 1 naming the first entry
    /// changed, removed or reordered.
    Verify(LedgerVerifyArgs),
}

/// The ledger head the server reported (`X-Ledger-Head-Position`,
/// `X-Ledger-Head-Hash`): with it, entries removed from the end show too.
#[derive(Debug, Clone, Args)]
pub struct HeadArgs {
    /// Position of the ledger's last entry, as the server reported it.
    #[arg(long, requires = "head_hash")]
    pub head_position: Option<i64>,
    /// Hash of the ledger's last entry, as the server reported it.
    #[arg(long, requires = "head_position")]
    pub head_hash: Option<String>,
}

impl HeadArgs {
    fn head(&self) -> Option<LedgerHead> {
        Some(LedgerHead {
            position: self.head_position?,
            hash: self.head_hash.clone()?,
        })
    }
}

/// `accord ledger verify`.
#[derive(Debug, Clone, Args)]
pub struct LedgerVerifyArgs {
    /// The ledger file (JSON Lines).
    pub file: PathBuf,
    /// The head, when known.
    #[command(flatten)]
    pub head: HeadArgs,
}

/// What `accord receipt` does.
#[derive(Debug, Subcommand)]
pub enum ReceiptCommand {
    /// Check a signed consent receipt: its signature with the key of a JWK
    /// set (`/.well-known/jwks.json` saved to a file) and, with `--ledger`,
    /// that its event is in the exported ledger.
    Verify(ReceiptVerifyArgs),
}

/// `accord receipt verify`.
#[derive(Debug, Clone, Args)]
pub struct ReceiptVerifyArgs {
    /// The receipt: the compact JWS, or the JSON the receipt route answers
    /// (its `jws` is checked).
    pub file: PathBuf,
    /// The JWK set of the signing keys (a JSON file).
    #[arg(long)]
    pub jwks: PathBuf,
    /// An exported ledger (JSON Lines) that must contain the receipt's
    /// event, and verify.
    #[arg(long)]
    pub ledger: Option<PathBuf>,
    /// The ledger's head, when known (with `--ledger`).
    #[command(flatten)]
    pub head: HeadArgs,
}

fn read(path: &Path) -> Result<String, ExitCode> {
    std::fs::read_to_string(path).map_err(|e| {
        eprintln!("accord: {}: {e}", path.display());
        ExitCode::from(2)
    })
}

fn print(report: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(report).unwrap_or_default()
    );
}

/// Runs `accord ledger verify`.
pub fn ledger(command: &LedgerCommand) -> ExitCode {
    let LedgerCommand::Verify(args) = command;
    let report = match File::open(&args.file)
        .and_then(|f| verify_jsonl(BufReader::new(f), args.head.head().as_ref()))
    {
        Ok(report) => report,
        Err(e) => {
            eprintln!("accord: {}: {e}", args.file.display());
            return ExitCode::from(2);
        }
    };
    print(&serde_json::to_value(&report).unwrap_or_default());
    if report.valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The JWS of a receipt file: the text itself, or the `jws` of the JSON
/// the receipt route answers.
fn jws_of(text: &str) -> Option<String> {
    let text = text.trim();
    if text.starts_with('{') {
        let v: Value = serde_json::from_str(text).ok()?;
        return v.get("jws")?.as_str().map(str::to_owned);
    }
    Some(text.to_owned())
}

/// Runs `accord receipt verify`.
pub fn receipt(command: &ReceiptCommand) -> ExitCode {
    let ReceiptCommand::Verify(args) = command;
    let text = match read(&args.file) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let jwks = match read(&args.jwks) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let Ok(jwks) = serde_json::from_str::<Value>(&jwks) else {
        eprintln!("accord: {}: not a JWK set (JSON)", args.jwks.display());
        return ExitCode::from(2);
    };
    let ledger = match &args.ledger {
        Some(path) => match read(path) {
            Ok(t) => Some(t),
            Err(code) => return code,
        },
        None => None,
    };
    let Some(jws) = jws_of(&text) else {
        print(&json!({"valid": false, "problem": "the file holds no receipt JWS"}));
        return ExitCode::from(1);
    };
    let receipt = match verify_receipt_with_jwks(&jws, &jwks) {
        Ok(r) => r,
        Err(e) => {
            print(&json!({"valid": false, "signature": false, "problem": e.to_string()}));
            return ExitCode::from(1);
        }
    };
    let in_ledger = ledger.as_deref().map(|l| {
        receipt_in_ledger(
            &receipt,
            l.lines().filter(|t| !t.trim().is_empty()),
            args.head.head().as_ref(),
        )
    });
    let problem = match &in_ledger {
        Some(Err(e)) => Some(e.to_string()),
        _ => None,
    };
    print(&json!({
        "valid": problem.is_none(),
        "signature": true,
        "inLedger": in_ledger.as_ref().map(Result::is_ok),
        "problem": problem,
        "receipt": receipt,
    }));
    if problem.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receipt_file_is_a_jws_or_the_route_answer() {
        assert_eq!(jws_of(" a.b.c\n").as_deref(), Some("a.b.c"));
        assert_eq!(
            jws_of(r#"{"receiptId": "x.1", "jws": "a.b.c"}"#).as_deref(),
            Some("a.b.c")
        );
        assert_eq!(jws_of(r#"{"receiptId": "x.1"}"#), None);
    }
}
