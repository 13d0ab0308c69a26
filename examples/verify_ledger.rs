//! Checks an exported consent ledger offline: the JSON Lines of
//! `GET /consent/api/projects/{projId}/ledger` saved to a file.
//!
//! ```sh
//! curl -s -D headers.txt "$BASE/consent/api/projects/demo/ledger?limit=10000" -H "$AUTH" > ledger.jsonl
//! cargo run --example verify_ledger -- ledger.jsonl
//! # With the head the server reported (X-Ledger-Head-Position, X-Ledger-Head-Hash),
//! # entries removed from the end show too:
//! cargo run --example verify_ledger -- ledger.jsonl 42 3f5a…
//! ```
//!
//! Prints the result as JSON; exits with 1 when the ledger is broken (the
//! first entry changed, removed or reordered is named), 2 on a usage or
//! read error.

use std::fs::File;
use std::io::BufReader;
use std::process::ExitCode;

use accord::consent::ledger::{verify_jsonl, LedgerHead};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, head) = match args.as_slice() {
        [path] => (path, None),
        [path, position, hash] => match position.parse::<i64>() {
            Ok(position) => (
                path,
                Some(LedgerHead {
                    position,
                    hash: hash.clone(),
                }),
            ),
            Err(_) => return usage(),
        },
        _ => return usage(),
    };
    let report = match File::open(path).and_then(|f| verify_jsonl(BufReader::new(f), head.as_ref()))
    {
        Ok(report) => report,
        Err(e) => {
            eprintln!("verify_ledger: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
    if report.valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: verify_ledger <ledger.jsonl> [<head position> <head hash>]");
    ExitCode::from(2)
}
