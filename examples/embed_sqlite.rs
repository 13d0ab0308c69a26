//! A plain synchronous program embedding Accord on a SQLite file: the same
//! story as `embed_memory`, and run twice it shows that everything persists
//! (the second run finds the campaign and the consent, and counts the first
//! run's redemption and acceptance).
//!
//! ```sh
//! cargo run --example embed_sqlite -- /tmp/accord-embed.db   # twice
//! ```
//!
//! The SQLite store runs on tokio (sqlx), so this program keeps a small
//! current-thread runtime and blocks on it at the storage edge — the only
//! place it waits. Evaluation itself is sync.

use std::sync::Arc;

use accord::campaign::{CampaignInput, RedeemRequest, SearchOptions, SearchRequest};
use accord::consent::{AcceptConsentRequest, ContentQuery};
use accord::store::sqlite::SqliteStore;
use accord::store::{CampaignStore, RedemptionQuery};
use accord::{CampaignService, Clock, ConsentService, SystemClock};
use serde_json::json;

const PROJECT: &str = "shop";

/// What one run found and did.
#[derive(Debug)]
pub struct Summary {
    /// Whether the campaign was created by this run (false: found).
    pub created_campaign: bool,
    /// Redemptions of the campaign after this run.
    pub redemptions: u64,
    /// Acceptances of subject u1 after this run.
    pub acceptances: u64,
}

/// One run on the database at `path`.
pub fn run(path: &str) -> Result<Summary, Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let store = Arc::new(rt.block_on(SqliteStore::open(path))?);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let campaigns = CampaignService::new(Arc::clone(&store), Arc::clone(&clock));
    let consent = ConsentService::new(Arc::clone(&store), clock);

    // The campaign, unless an earlier run created it.
    let created_campaign = rt
        .block_on(store.campaign_by_code(PROJECT, "BIG100"))?
        .is_none();
    if created_campaign {
        let input: CampaignInput = serde_json::from_value(json!({
            "name": "100 off 1,000", "refCode": "BIG100",
            "startDate": "2025-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
            "quotas": [{"key": "${campaignCode}", "value": 1000}],
            "rules": [{
                "name": "Big carts",
                "when": [{"match": "ALL", "conditions": [
                    {"type": "cart", "attribute": "totalPrice", "op": "gte", "value": "1000", "valueType": "NUMBER"}
                ]}],
                "then": [{"action": "CART_DISCOUNT", "data": [{"attribute": "amount", "value": "100"}]}]
            }]
        }))?;
        rt.block_on(campaigns.create_campaign(PROJECT, input, "admin"))?;
    }

    // Search, then redeem.
    let cart =
        json!({"attribute": {"userId": "u1"}, "cart": {"totalPrice": "1500", "currency": "THB"}});
    let search: SearchRequest = serde_json::from_value(cart.clone())?;
    let found = rt.block_on(campaigns.search(PROJECT, &search, &SearchOptions::default()))?;
    println!("search: {} action(s)", found.actions.len());
    let mut body = cart;
    body["campaignCode"] = json!("BIG100");
    let redeem: RedeemRequest = serde_json::from_value(body)?;
    rt.block_on(campaigns.redeem(PROJECT, &redeem))?;
    let redemptions = rt
        .block_on(campaigns.list_redemptions(
            PROJECT,
            &RedemptionQuery {
                campaign_code: Some("BIG100".into()),
                ..RedemptionQuery::default()
            },
        ))?
        .total;

    // The consent, unless an earlier run created it; then an acceptance.
    let by_name = ContentQuery::from_pairs([("data.name", "Marketing")])?;
    let existing = rt.block_on(consent.list_content(PROJECT, "svc-consent-v1", &by_name))?;
    let consent_id = if let Some(c) = existing.items.into_iter().next() {
        c.id
    } else {
        let notice = rt.block_on(consent.create_content(
            PROJECT,
            "svc-privacy-notice-v1",
            json!({"name": "Privacy notice", "revision": 1, "status": "PUBLISHED"}),
            "admin",
        ))?;
        rt.block_on(consent.create_content(
            PROJECT,
            "svc-consent-v1",
            json!({"name": "Marketing", "application": "web", "purposes": ["email", "sms"],
                   "lifespan": 365, "privacyNoticeRef": notice.id, "revision": 1, "status": "PUBLISHED"}),
            "admin",
        ))?
        .id
    };
    rt.block_on(consent.accept_consent(
        PROJECT,
        AcceptConsentRequest {
            app: Some("web".into()),
            data_subject: Some("u1".into()),
            consent_id: Some(consent_id),
            purposes: None,
            user_agent: Some("embed_sqlite".into()),
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
    let by_subject = ContentQuery::from_pairs([("data.dataSubject", "u1")])?;
    let acceptances = rt
        .block_on(consent.list_content(PROJECT, "svc-consent-acceptance-v1", &by_subject))?
        .total;
    rt.block_on(store.close());
    Ok(Summary {
        created_campaign,
        redemptions,
        acceptances,
    })
}

/// Runs once on the file named by the first argument (default
/// `accord-embed.db`) and prints what persisted.
pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "accord-embed.db".to_owned());
    let s = run(&path)?;
    println!(
        "{path}: campaign {}; {} redemption(s) and {} acceptance(s) recorded so far",
        if s.created_campaign {
            "created"
        } else {
            "found from an earlier run"
        },
        s.redemptions,
        s.acceptances
    );
    Ok(())
}
