//! Property: after any sequence of purpose accepts, purpose withdrawals,
//! consent acceptances and content-store withdrawals of acceptances, each
//! purpose flag equals the kind of the latest event concerning it, and is
//! false once that grant has expired.

use std::sync::Arc;

use accord::store::ConsentStore;
use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::json;

use super::Fx;

const CODES: [&str; 3] = ["a", "b", "c"];

#[derive(Debug, Clone)]
enum Op {
    AcceptPurpose(usize),
    WithdrawPurpose(usize),
    /// `None`: all purposes; else those whose flag is set.
    AcceptConsent(Option<[bool; 3]>),
    /// Withdraws the latest acceptance not yet withdrawn, through a
    /// content-store PUT.
    WithdrawAcceptance,
    Wait {
        hours: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..3usize).prop_map(Op::AcceptPurpose),
        3 => (0..3usize).prop_map(Op::WithdrawPurpose),
        2 => prop::option::of(any::<[bool; 3]>()).prop_map(Op::AcceptConsent),
        1 => Just(Op::WithdrawAcceptance),
        3 => (0..40i64).prop_map(|hours| Op::Wait { hours }),
    ]
}

/// Runs the property against a store (each case in its own project).
pub fn purpose_flag_is_latest_event<S: ConsentStore + 'static>(
    rt: &tokio::runtime::Runtime,
    store: &Arc<S>,
) {
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (0..3i64, prop::collection::vec(op(), 1..30));
    let result = runner.run(&strategy, |(lifespan, ops)| {
        rt.block_on(check(Arc::clone(store), lifespan, ops))
            .map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

async fn check<S: ConsentStore + 'static>(
    store: Arc<S>,
    lifespan: i64,
    ops: Vec<Op>,
) -> Result<(), String> {
    let fx = Fx::new(store);
    let consent = fx.consent("app", &CODES, Some(lifespan)).await;
    let expiry = |now: DateTime<Utc>| (lifespan > 0).then(|| now + Duration::days(lifespan));
    // Model: per code, the latest event as (accepted, expiry).
    let mut latest: [Option<(bool, Option<DateTime<Utc>>)>; 3] = [None; 3];
    // Acceptances not yet withdrawn: (id, acceptance date, purposes).
    let mut open: Vec<(String, DateTime<Utc>, Vec<usize>)> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        let now = fx.now();
        match op {
            Op::AcceptPurpose(i) => {
                let r = fx
                    .svc
                    .accept_purpose(&fx.project, Fx::<S>::purpose("app", "u", CODES[*i]))
                    .await;
                r.map_err(|e| format!("accept purpose: {e}"))?;
                latest[*i] = Some((true, expiry(now)));
            }
            Op::WithdrawPurpose(i) => {
                let r = fx
                    .svc
                    .withdraw_purpose(&fx.project, Fx::<S>::purpose("app", "u", CODES[*i]))
                    .await;
                r.map_err(|e| format!("withdraw purpose: {e}"))?;
                latest[*i] = Some((false, None));
            }
            Op::AcceptConsent(mask) => {
                let chosen: Vec<usize> = (0..3).filter(|i| mask.is_none_or(|m| m[*i])).collect();
                let codes: Vec<&str> = chosen.iter().map(|i| CODES[*i]).collect();
                let purposes = mask.map(|_| codes.as_slice());
                let acc = fx.accept("app", "u", &consent.id, purposes).await;
                for i in &chosen {
                    latest[*i] = Some((true, expiry(now)));
                }
                open.push((acc.id, acc.acceptance_date, chosen));
            }
            Op::WithdrawAcceptance => {
                if let Some((id, accepted, chosen)) = open.pop() {
                    let body = json!({"dataSubject": "u", "consentId": consent.id, "application": "app",
                        "acceptanceDate": accepted, "status": "WITHDRAWN", "withdrawalDate": now, "note": ""});
                    let r = fx
                        .svc
                        .replace_content(&fx.project, "svc-consent-acceptance-v1", &id, body, "cms")
                        .await;
                    r.map_err(|e| format!("withdraw acceptance: {e}"))?;
                    for i in chosen {
                        latest[i] = Some((false, None));
                    }
                }
            }
            Op::Wait { hours } => fx.advance(Duration::hours(*hours)),
        }
        let now = fx.now();
        let expected: Vec<(String, bool)> = CODES
            .iter()
            .zip(latest)
            .map(|(code, l)| {
                (
                    (*code).to_owned(),
                    l.is_some_and(|(ok, e)| ok && e.is_none_or(|e| now < e)),
                )
            })
            .collect();
        let got = fx.flags("app", "u").await;
        if got != expected {
            return Err(format!(
                "after step {step} ({op:?}): flags {got:?}, expected {expected:?}"
            ));
        }
    }
    Ok(())
}
