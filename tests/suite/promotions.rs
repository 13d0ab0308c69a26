//! Promotion controls on every store: what the engine decides (caps,
//! allocation, stacking) must be recorded, replayed and read back the same
//! whatever the store underneath.

use std::sync::Arc;

use accord::campaign::{CampaignInput, RedeemRequest};
use accord::store::Store;
use accord::{CampaignService, SystemClock};
use serde_json::{json, Value};

/// Runs each behaviour of this module as a test, on `$fixture`'s store.
macro_rules! promotions_tests {
    ($fixture:path) => {
        $crate::suite::promotions::promotions_tests!(@each $fixture;
            capped_allocation_is_recorded_and_replayed,
        );
    };
    (@each $fixture:path; $($behaviour:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread")]
            async fn $behaviour() {
                let Some((store, _guard)) = $fixture().await else {
                    return;
                };
                $crate::suite::promotions::$behaviour(store).await;
            }
        )+
    };
}

pub(crate) use promotions_tests;

/// A campaign fixture of `tests/data/campaigns/<name>.json`.
pub fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/data/campaigns/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn input(v: Value) -> CampaignInput {
    serde_json::from_value(v).unwrap()
}

fn redeem(v: Value) -> RedeemRequest {
    serde_json::from_value(v).unwrap()
}

/// A capped, allocated discount: the redemption keeps the capped amount,
/// the reason and each line's share; a replay and a read give them back
/// unchanged; the quota counts the capped amount.
pub async fn capped_allocation_is_recorded_and_replayed<S: Store>(store: Arc<S>) {
    let project = uuid::Uuid::new_v4().to_string();
    let service = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock));
    let mut campaign = fixture("cart_cap");
    campaign["endDate"] = json!("2100-01-01T00:00:00Z");
    let created = service
        .create_campaign(&project, input(campaign), "admin")
        .await
        .unwrap();
    let request = redeem(json!({
        "campaignCode": "CART20", "idempotencyKey": "order-1",
        "cart": {"totalPrice": "2001", "currency": "JPY", "items": [
            {"sku": "A", "price": "1000"}, {"sku": "B", "price": "1000"}, {"sku": "C", "price": "1"}]}
    }));
    let first = service.redeem(&project, &request).await.unwrap();
    let then = &first.redemption.action_txs[0].then;
    assert_eq!(then.data[0].value, "300");
    let shares: Vec<&str> = then
        .allocation
        .as_ref()
        .unwrap()
        .iter()
        .map(|s| s.amount.as_str())
        .collect();
    assert_eq!(shares, ["150", "150", "0"], "yen have no minor unit");
    assert_eq!(then.capped.as_ref().unwrap().by.as_str(), "MAX");

    let again = service.redeem(&project, &request).await.unwrap();
    assert!(again.replayed);
    assert_eq!(again.redemption, first.redemption);
    let read = service
        .redemption(&project, first.redemption.id)
        .await
        .unwrap();
    assert_eq!(read.action_txs, first.redemption.action_txs);
    let usage = service.quota_usage(&project, created.id).await.unwrap();
    assert_eq!(usage[0].used.to_string(), "300");
}
