//! Writes whose callers go away midway, and cancels racing redeems on one
//! quota key.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use accord::campaign::{Campaign, TxStatus};
use accord::store::{RedeemOutcome, RedemptionQuery};
use rand::Rng;
use tokio::task::JoinSet;

use super::concurrency::{shared_quota_campaign, SHARED_KEY};
use super::data::{d, keyed, plan, t};
use super::Store;

/// Polls `future` `polls` times at most, yielding to the runtime (and so
/// to the database's threads) between polls, then drops it wherever it
/// stands. Whether it finished.
async fn drop_after<F: Future>(future: F, polls: usize) -> bool {
    let mut future = pin!(future);
    for _ in 0..polls {
        let step = std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await;
        if step.is_ready() {
            return true;
        }
        if rand::thread_rng().gen_bool(0.5) {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(Duration::from_micros(rand::thread_rng().gen_range(0..300))).await;
        }
    }
    false
}

/// The usage of the shared key.
async fn shared_usage<S: Store>(store: &S, c: &Campaign) -> rust_decimal::Decimal {
    store
        .quota_usage(&c.project_id, &[SHARED_KEY.to_owned()])
        .await
        .unwrap()
        .get(SHARED_KEY)
        .copied()
        .unwrap_or_default()
}

/// The COMPLETE redemptions of the campaign's project.
async fn complete<S: Store>(store: &S, c: &Campaign) -> Vec<accord::campaign::Redemption> {
    let query = RedemptionQuery {
        size: 1000,
        ..RedemptionQuery::default()
    };
    let page = store.list_redemptions(&c.project_id, &query).await.unwrap();
    assert!(page.total < 1000, "more redemptions than one page");
    page.items
        .into_iter()
        .filter(|r| r.status == TxStatus::Complete)
        .collect()
}

/// Waits until the shared usage stops changing (writes whose callers went
/// away finish on their own), 10 s at most.
async fn settled<S: Store>(store: &S, c: &Campaign) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = shared_usage(store, c).await;
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = shared_usage(store, c).await;
        if now == last {
            return;
        }
        assert!(Instant::now() < deadline, "the store never settled");
        last = now;
    }
}

/// Redeems and cancels dropped by their callers at every point of their
/// run — before their transaction, inside it, around its commit — leave
/// the store whole: each redemption is recorded whole or not at all, the
/// usage equals the recorded charges, a retry with a dropped redeem's key
/// gets that redemption (replayed) or records it now, and later writes
/// succeed at once (no connection left inside a transaction, no lock held).
pub async fn writes_dropped_midway_leave_the_store_whole<S: Store>(store: Arc<S>) {
    const DROPPED: usize = 300;
    let c = shared_quota_campaign(&*store).await;
    let charge = [(SHARED_KEY, "1", "1000000")];
    for i in 0..DROPPED {
        let p = keyed(
            plan(&c, &charge, t(i64::try_from(i).unwrap(), 0)),
            &format!("dropped-{i}"),
        );
        let polls = rand::thread_rng().gen_range(0..40);
        drop_after(store.redeem(&p), polls).await;
        if i % 10 == 0 {
            // A cancel of an earlier one, dropped midway too.
            if let Some(r) = store
                .redemption_by_key(&c.project_id, &format!("dropped-{}", i / 2))
                .await
                .unwrap()
            {
                let polls = rand::thread_rng().gen_range(0..40);
                drop_after(
                    store.cancel_redemption(&c.project_id, r.id, t(100_000, 0)),
                    polls,
                )
                .await;
            }
        }
    }
    settled(&*store, &c).await;

    // Later writes succeed, each at once.
    for i in 0..20 {
        let began = Instant::now();
        let p = plan(&c, &charge, t(200_000 + i, 0));
        assert!(matches!(
            store.redeem(&p).await.unwrap(),
            RedeemOutcome::Recorded(_)
        ));
        let took = began.elapsed();
        assert!(took < Duration::from_secs(2), "a redeem took {took:?}");
    }
    let recorded = complete(&*store, &c).await;
    assert_eq!(
        shared_usage(&*store, &c).await,
        d(&recorded.len().to_string())
    );
    // Every dropped redeem's key: its redemption, or a new one now.
    for i in 0..DROPPED {
        let key = format!("dropped-{i}");
        let before = store.redemption_by_key(&c.project_id, &key).await.unwrap();
        let p = keyed(plan(&c, &charge, t(300_000, 0)), &key);
        match (before, store.redeem(&p).await.unwrap()) {
            (Some(stored), RedeemOutcome::Replayed(replayed)) => assert_eq!(stored, replayed),
            (None, RedeemOutcome::Recorded(_)) => {}
            (before, outcome) => panic!("{key}: stored {before:?}, then {outcome:?}"),
        }
    }
    let recorded = complete(&*store, &c).await;
    assert_eq!(
        shared_usage(&*store, &c).await,
        d(&recorded.len().to_string())
    );
}

/// Many tasks redeem on one quota key and cancel what they redeemed (twice
/// at once, as a retried refund would) while others redeem: the usage,
/// watched throughout, never goes below zero or above the limit, and ends
/// equal to the COMPLETE redemptions.
pub async fn cancels_racing_redeems_keep_usage_within_bounds<S: Store>(store: Arc<S>) {
    const TASKS: usize = 24;
    const ROUNDS: usize = 6;
    const LIMIT: &str = "8";
    let c = Arc::new(shared_quota_campaign(&*store).await);
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (store, c, done) = (Arc::clone(&store), Arc::clone(&c), Arc::clone(&done));
        tokio::spawn(async move {
            let mut reads = 0;
            while !done.load(Ordering::SeqCst) {
                let used = shared_usage(&*store, &c).await;
                assert!(
                    used >= d("0") && used <= d(LIMIT),
                    "usage {used} outside 0..={LIMIT}"
                );
                reads += 1;
                tokio::task::yield_now().await;
            }
            reads
        })
    };
    let mut tasks = JoinSet::new();
    for task in 0..TASKS {
        let (store, c) = (Arc::clone(&store), Arc::clone(&c));
        tasks.spawn(async move {
            let mut kept = 0;
            for round in 0..ROUNDS {
                let at = t(i64::try_from(task * 100 + round).unwrap(), 0);
                let p = keyed(
                    plan(&c, &[(SHARED_KEY, "1", LIMIT)], at),
                    &format!("race-{task}-{round}"),
                );
                let RedeemOutcome::Recorded(r) = store.redeem(&p).await.unwrap() else {
                    continue;
                };
                if (task + round) % 3 == 0 {
                    kept += 1;
                    continue;
                }
                let (a, b) = tokio::join!(
                    store.cancel_redemption(&c.project_id, r.id, at),
                    store.cancel_redemption(&c.project_id, r.id, at),
                );
                assert_eq!(a.unwrap().unwrap().status, TxStatus::Cancelled);
                assert_eq!(b.unwrap().unwrap().status, TxStatus::Cancelled);
            }
            kept
        });
    }
    let mut kept = 0;
    while let Some(joined) = tasks.join_next().await {
        kept += joined.unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let reads = watcher.await.unwrap();
    assert!(reads > 0);
    let recorded = complete(&*store, &c).await;
    assert_eq!(recorded.len(), kept);
    assert_eq!(shared_usage(&*store, &c).await, d(&kept.to_string()));
    assert!(kept <= 8);
}
