//! A plain synchronous program embedding Accord on the in-memory store: it
//! creates a campaign and a consent, searches, redeems, and records a
//! consent acceptance. Evaluation is sync; only the store calls are async,
//! and this program blocks on them at that edge (`pollster::block_on`) and
//! nowhere else — no runtime needed.
//!
//! ```sh
//! cargo run --example embed_memory
//! ```

use std::sync::Arc;

use accord::campaign::{CampaignInput, RedeemRequest, SearchOptions, SearchRequest};
use accord::consent::AcceptConsentRequest;
use accord::store::memory::MemoryStore;
use accord::{CampaignService, Clock, ConsentService, SystemClock};
use pollster::block_on;
use serde_json::json;

const PROJECT: &str = "shop";

/// The whole story; an error if a step does not hold.
pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = Arc::new(MemoryStore::new());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let campaigns = CampaignService::new(Arc::clone(&store), Arc::clone(&clock));
    let consent = ConsentService::new(store, clock);

    // A campaign: 100 THB off carts of 1,000 THB or more, once per customer.
    let input: CampaignInput = serde_json::from_value(json!({
        "name": "100 off 1,000", "refCode": "OFF100",
        "startDate": "2025-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "quotas": [{"key": "${campaignCode}-${userId}", "value": 1}],
        "rules": [{
            "name": "Big carts",
            "when": [{"match": "ALL", "conditions": [
                {"type": "cart", "attribute": "totalPrice", "op": "gte", "value": "1000", "valueType": "NUMBER"}
            ]}],
            "thenOperator": "AND",
            "then": [{"action": "CART_DISCOUNT", "data": [{"attribute": "amount", "value": "100"}]}]
        }]
    }))?;
    let campaign = block_on(campaigns.create_campaign(PROJECT, input, "admin"))?;
    println!("created campaign {} ({})", campaign.ref_code, campaign.id);

    // Search: which benefits apply to this cart?
    let cart =
        json!({"attribute": {"userId": "u1"}, "cart": {"totalPrice": "1500", "currency": "THB"}});
    let search: SearchRequest = serde_json::from_value(cart.clone())?;
    let found = block_on(campaigns.search(PROJECT, &search, &SearchOptions::default()))?;
    for a in &found.actions {
        println!(
            "search: {} {:?} {}",
            a.campaign.ref_code,
            a.action.action,
            serde_json::to_string(&a.action.data)?
        );
    }

    // Redeem it; the second time the per-user quota says no.
    let mut body = cart;
    body["campaignCode"] = json!("OFF100");
    let redeem: RedeemRequest = serde_json::from_value(body)?;
    let redemption = block_on(campaigns.redeem(PROJECT, &redeem))?.redemption;
    println!(
        "redeemed: {} transaction(s), status {}",
        redemption.action_txs.len(),
        redemption.status
    );
    match block_on(campaigns.redeem(PROJECT, &redeem)) {
        Err(e) => println!("redeemed again: refused, {} ({})", e.code(), e),
        Ok(_) => return Err("the per-user quota let a second redemption through".into()),
    }

    // Consent: a privacy notice, a consent with two purposes, an acceptance.
    let notice = block_on(consent.create_content(
        PROJECT,
        "svc-privacy-notice-v1",
        json!({"name": "Privacy notice", "revision": 1, "status": "PUBLISHED"}),
        "admin",
    ))?;
    let marketing = block_on(consent.create_content(
        PROJECT,
        "svc-consent-v1",
        json!({"name": "Marketing", "application": "web", "purposes": ["email", "sms"],
               "lifespan": 365, "privacyNoticeRef": notice.id, "revision": 1, "status": "PUBLISHED"}),
        "admin",
    ))?;
    let pending = block_on(consent.to_accept(PROJECT, "web", "u1"))?;
    println!("u1 has {} consent(s) to accept", pending.len());
    let accepted = block_on(consent.accept_consent(
        PROJECT,
        AcceptConsentRequest {
            app: Some("web".into()),
            data_subject: Some("u1".into()),
            consent_id: Some(marketing.id.clone()),
            purposes: Some(vec!["email".into()]),
            user_agent: Some("embed_memory".into()),
            country: Some("TH".into()),
            local_ip: Some("127.0.0.1".into()),
            os_version: Some(std::env::consts::OS.into()),
            model: Some("example".into()),
            device_fingerprint_id: Some("fp-example".into()),
            note: None,
            ..Default::default()
        },
        "u1",
    ))?;
    println!(
        "u1 accepted {:?}: {} until {:?}",
        accepted.purposes, accepted.status, accepted.expired_date
    );
    for option in block_on(consent.purpose_options(PROJECT, "web", "u1"))? {
        println!("purpose {}: accepted = {}", option.code, option.accepted);
    }
    Ok(())
}
