//! Many redeems at once — from tasks of one process here, and from several
//! processes through the helpers that the SQL runners' worker processes
//! call — and durability across a reopen.

use std::sync::Arc;

use accord::campaign::Campaign;
use accord::store::{RedeemOutcome, RedemptionQuery};
use tokio::task::JoinSet;

use super::data::{campaign, d, keyed, plan, project, t};
use super::redemptions::recorded;
use super::Store;

/// The key every redeem of [`redeem_concurrently`] charges.
pub const SHARED_KEY: &str = "shared-quota";

/// What a batch of concurrent redeems did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Recorded redemptions.
    pub recorded: usize,
    /// Redeems refused by the quota.
    pub exceeded: usize,
    /// Idempotent replays.
    pub replayed: usize,
}

/// Runs `n` redeems of `c` at once, each charging 1 to [`SHARED_KEY`]
/// within `limit`, each with its own idempotency key `{tag}-{i}`.
pub async fn redeem_concurrently<S: Store>(
    store: Arc<S>,
    c: &Campaign,
    n: usize,
    limit: &str,
    tag: &str,
) -> Tally {
    let mut tasks = JoinSet::new();
    for i in 0..n {
        let store = Arc::clone(&store);
        let p = keyed(
            plan(
                c,
                &[(SHARED_KEY, "1", limit)],
                t(i64::try_from(i).unwrap(), 0),
            ),
            &format!("{tag}-{i}"),
        );
        tasks.spawn(async move { store.redeem(&p).await });
    }
    let mut tally = Tally::default();
    while let Some(joined) = tasks.join_next().await {
        match joined
            .expect("redeem task panicked")
            .expect("redeem failed")
        {
            RedeemOutcome::Recorded(_) => tally.recorded += 1,
            RedeemOutcome::QuotaExceeded { .. } => tally.exceeded += 1,
            RedeemOutcome::Replayed(_) => tally.replayed += 1,
            other @ (RedeemOutcome::CodeRefused(_) | RedeemOutcome::CampaignChanged) => {
                panic!("unexpected {other:?}")
            }
        }
    }
    tally
}

/// Checks that the campaign's shared quota reads `used` and that exactly
/// `used` redemptions were recorded.
pub async fn assert_shared_quota<S: Store>(store: &S, c: &Campaign, used: u64) {
    let usage = store
        .quota_usage(&c.project_id, &[SHARED_KEY.to_owned()])
        .await
        .unwrap();
    assert_eq!(
        usage.get(SHARED_KEY).copied().unwrap_or_default(),
        d(&used.to_string())
    );
    let query = RedemptionQuery {
        size: 1000,
        ..RedemptionQuery::default()
    };
    let page = store.list_redemptions(&c.project_id, &query).await.unwrap();
    assert_eq!(page.total, used);
    assert_eq!(page.items.len() as u64, used);
}

/// A stored campaign in a project of its own, for a shared-quota run.
pub async fn shared_quota_campaign<S: Store>(store: &S) -> Campaign {
    let c = campaign(&project(), "SHARED");
    store.insert_campaign(&c).await.unwrap();
    c
}

pub async fn concurrent_redeems_never_oversell<S: Store>(store: Arc<S>) {
    let c = shared_quota_campaign(&*store).await;
    let tally = redeem_concurrently(Arc::clone(&store), &c, 64, "50", "task").await;
    assert_eq!(
        tally,
        Tally {
            recorded: 50,
            exceeded: 14,
            replayed: 0
        }
    );
    assert_shared_quota(&*store, &c, 50).await;
}

pub async fn concurrent_same_key_records_once<S: Store>(store: Arc<S>) {
    let c = shared_quota_campaign(&*store).await;
    let mut tasks = JoinSet::new();
    for i in 0..16 {
        let store = Arc::clone(&store);
        // Different bodies, one idempotency key.
        let p = keyed(plan(&c, &[(SHARED_KEY, "1", "100")], t(i, 0)), "same-key");
        tasks.spawn(async move { store.redeem(&p).await });
    }
    let mut recorded = Vec::new();
    let mut replayed = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined.unwrap().unwrap() {
            RedeemOutcome::Recorded(r) => recorded.push(r),
            RedeemOutcome::Replayed(r) => replayed.push(r),
            other @ (RedeemOutcome::QuotaExceeded { .. }
            | RedeemOutcome::CodeRefused(_)
            | RedeemOutcome::CampaignChanged) => {
                panic!("unexpected {other:?}")
            }
        }
    }
    assert_eq!(recorded.len(), 1, "exactly one redeem records");
    assert_eq!(replayed.len(), 15);
    assert!(replayed.iter().all(|r| *r == recorded[0]));
    assert_shared_quota(&*store, &c, 1).await;
}

pub async fn concurrent_cancels_give_back_once<S: Store>(store: Arc<S>) {
    let c = shared_quota_campaign(&*store).await;
    let p = plan(&c, &[(SHARED_KEY, "1", "10")], t(0, 0));
    recorded(&*store, &p).await;
    recorded(&*store, &plan(&c, &[(SHARED_KEY, "1", "10")], t(1, 0))).await;
    let mut tasks = JoinSet::new();
    for i in 0..8 {
        let store = Arc::clone(&store);
        let (project, id) = (c.project_id.clone(), p.redemption.id);
        tasks.spawn(async move { store.cancel_redemption(&project, id, t(10 + i, 0)).await });
    }
    let mut dates = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        dates.push(joined.unwrap().unwrap().unwrap().cancelled_date);
    }
    // One cancel won; every caller saw its date; the quota went back by 1.
    assert!(dates.iter().all(|d| *d == dates[0] && d.is_some()));
    let usage = store
        .quota_usage(&c.project_id, &[SHARED_KEY.to_owned()])
        .await
        .unwrap();
    assert_eq!(usage[SHARED_KEY], d("1"));
}

/// Concurrent redeems of three kinds, however a store groups them into
/// transactions: each is all-or-nothing on its own. 32 good redeems; 16
/// that charge the same key and then a second key past its limit (refused
/// at the second: the first key's charge must go too); 16 with one
/// idempotency key (one records, 15 replay it). Several rounds, so that
/// a grouping store sees groups of every mix.
pub async fn mixed_concurrent_redeems_each_all_or_nothing<S: Store>(store: Arc<S>) {
    const ROUNDS: usize = 4;
    let c = shared_quota_campaign(&*store).await;
    let mut want_used = 0u64;
    for round in 0..ROUNDS {
        let mut tasks = JoinSet::new();
        for i in 0..64_i64 {
            let at = t(i64::try_from(round).unwrap() * 100 + i, 0);
            let p = match i % 4 {
                0 | 2 => keyed(
                    plan(&c, &[(SHARED_KEY, "1", "100000")], at),
                    &format!("good-{round}-{i}"),
                ),
                1 => keyed(
                    plan(&c, &[(SHARED_KEY, "1", "100000"), ("tight", "2", "1")], at),
                    &format!("bad-{round}-{i}"),
                ),
                _ => keyed(
                    plan(&c, &[(SHARED_KEY, "1", "100000")], at),
                    &format!("dup-{round}"),
                ),
            };
            let store = Arc::clone(&store);
            tasks.spawn(async move { (i % 4, store.redeem(&p).await.unwrap()) });
        }
        let (mut recorded, mut dup_recorded, mut replayed) = (0, Vec::new(), Vec::new());
        let mut exceeded = 0;
        while let Some(joined) = tasks.join_next().await {
            match joined.unwrap() {
                (0 | 2, RedeemOutcome::Recorded(_)) => recorded += 1,
                (1, RedeemOutcome::QuotaExceeded { key, .. }) => {
                    assert_eq!(key, "tight");
                    exceeded += 1;
                }
                (3, RedeemOutcome::Recorded(r)) => dup_recorded.push(r),
                (3, RedeemOutcome::Replayed(r)) => replayed.push(r),
                (kind, other) => panic!("kind {kind}: unexpected {other:?}"),
            }
        }
        assert_eq!((recorded, exceeded), (32, 16), "round {round}");
        assert_eq!(dup_recorded.len(), 1, "round {round}: one of a key records");
        assert_eq!(replayed.len(), 15, "round {round}");
        assert!(replayed.iter().all(|r| *r == dup_recorded[0]));
        want_used += 33;
    }
    // Nothing of a refused redeem stayed: the shared key counts exactly the
    // recorded ones, and the tight key nothing.
    assert_shared_quota(&*store, &c, want_used).await;
    let usage = store
        .quota_usage(&c.project_id, &["tight".to_owned()])
        .await
        .unwrap();
    assert_eq!(usage.get("tight").copied().unwrap_or_default(), d("0"));
}

/// What [`durability_write`] acknowledged.
pub struct Written {
    campaign: Campaign,
    redemptions: Vec<accord::campaign::Redemption>,
    catalog_version: i64,
}

/// Writes a campaign (inserted, then updated), redemptions (one cancelled)
/// and usage; every call is acknowledged before this returns.
pub async fn durability_write<S: Store>(store: &S) -> Written {
    let c = campaign(&project(), "DURABLE");
    store.insert_campaign(&c).await.unwrap();
    let mut v2 = c.clone();
    v2.version = 2;
    v2.name = "Durable, updated".into();
    store.update_campaign(&v2, 1).await.unwrap();
    let first = keyed(
        plan(&v2, &[("d-a", "1.25", "10"), ("d-b", "1", "5")], t(0, 1)),
        "k1",
    );
    let second = plan(&v2, &[("d-a", "2", "10")], t(1, 2));
    recorded(store, &first).await;
    recorded(store, &second).await;
    let cancelled = store
        .cancel_redemption(&v2.project_id, first.redemption.id, t(2, 3))
        .await
        .unwrap()
        .unwrap();
    Written {
        catalog_version: store.catalog_version(&v2.project_id).await.unwrap(),
        campaign: v2,
        redemptions: vec![second.redemption, cancelled],
    }
}

/// Checks, on a reopened store, that everything [`durability_write`]
/// acknowledged is there.
pub async fn durability_check<S: Store>(store: &S, w: &Written) {
    let p = &w.campaign.project_id;
    assert_eq!(
        store.campaign(p, w.campaign.id).await.unwrap(),
        Some(w.campaign.clone())
    );
    assert_eq!(store.catalog_version(p).await.unwrap(), w.catalog_version);
    let page = store
        .list_redemptions(p, &RedemptionQuery::default())
        .await
        .unwrap();
    assert_eq!(page.items, w.redemptions);
    let usage = store
        .quota_usage(p, &["d-a".to_owned(), "d-b".to_owned()])
        .await
        .unwrap();
    assert_eq!(usage["d-a"], d("2"));
    assert_eq!(usage["d-b"], d("0"));
    // The idempotency key survived too.
    let replay = keyed(plan(&w.campaign, &[("d-a", "1", "10")], t(5, 0)), "k1");
    assert_eq!(
        store.redeem(&replay).await.unwrap(),
        RedeemOutcome::Replayed(w.redemptions[1].clone())
    );
}
