//! Redeems whose plan asks the store to check the campaign
//! (`RedemptionPlan::verify_campaign`): planned from a compiled snapshot,
//! recorded only against the version still stored.

use std::sync::Arc;

use accord::campaign::Campaign;
use accord::store::{RedeemOutcome, RedemptionPlan, RedemptionStore};
use tokio::task::JoinSet;

use super::data::{campaign, d, plan, project, t};
use super::redemptions::{recorded, usage};
use super::Store;

/// A plan of `c` charging `key` (limit 1,000), checked by the store.
fn checked(c: &Campaign, key: &str) -> RedemptionPlan {
    let mut p = plan(c, &[(key, "1", "1000")], t(100, 0));
    p.verify_campaign = true;
    p
}

/// `plan` was answered `CampaignChanged` and wrote nothing.
async fn refused_as_changed<S: Store>(store: &S, plan: &RedemptionPlan) {
    assert_eq!(
        store.redeem(plan).await.unwrap(),
        RedeemOutcome::CampaignChanged
    );
    let r = &plan.redemption;
    assert_eq!(store.redemption(&r.project_id, r.id).await.unwrap(), None);
    let keys: Vec<&str> = r.quotas.iter().map(|q| q.key.as_str()).collect();
    assert!(usage(store, &r.project_id, &keys).await.is_empty());
}

pub async fn checked_redeem_records_only_the_stored_version<S: Store>(store: Arc<S>) {
    let p = project();
    let c = campaign(&p, "CHK");
    store.insert_campaign(&c).await.unwrap();
    recorded(&*store, &checked(&c, "CHK-1")).await;

    let mut v2 = c.clone();
    v2.version = 2;
    v2.name = "Edited".into();
    store.update_campaign(&v2, 1).await.unwrap();
    // Planned from version 1, which is no longer stored.
    refused_as_changed(&*store, &checked(&c, "CHK-2")).await;
    recorded(&*store, &checked(&v2, "CHK-3")).await;
    // Unchecked, as a plan made from a read of the campaign: recorded.
    let mut unchecked = checked(&c, "CHK-4");
    unchecked.verify_campaign = false;
    recorded(&*store, &unchecked).await;

    // A campaign never stored, and one deleted since.
    refused_as_changed(&*store, &checked(&campaign(&p, "NEVER"), "N-1")).await;
    assert!(store.delete_campaign(&p, c.id).await.unwrap());
    refused_as_changed(&*store, &checked(&v2, "CHK-5")).await;
}

/// Concurrent redeems, half planned from the stored version and half from
/// the one before it, share groups on SQL stores: each is answered alone.
pub async fn concurrent_checked_redeems_answer_each_member<S: Store>(store: Arc<S>) {
    let p = project();
    let c = campaign(&p, "MIX");
    store.insert_campaign(&c).await.unwrap();
    let mut v2 = c.clone();
    v2.version = 2;
    store.update_campaign(&v2, 1).await.unwrap();
    let mut tasks = JoinSet::new();
    for i in 0..40 {
        let store = Arc::clone(&store);
        let plan = checked(if i % 2 == 0 { &v2 } else { &c }, "MIX-ALL");
        tasks.spawn(async move { (i, store.redeem(&plan).await.unwrap()) });
    }
    while let Some(joined) = tasks.join_next().await {
        let (i, outcome) = joined.unwrap();
        match outcome {
            RedeemOutcome::Recorded(r) if i % 2 == 0 => assert_eq!(r.campaign_version, 2),
            RedeemOutcome::CampaignChanged if i % 2 == 1 => {}
            other => panic!("redeem {i}: {other:?}"),
        }
    }
    let usage = store
        .quota_usage(&p, &["MIX-ALL".to_owned()])
        .await
        .unwrap();
    assert_eq!(usage.get("MIX-ALL"), Some(&d("20")));
}
