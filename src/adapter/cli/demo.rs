//! The sample data of `accord serve --demo` (the README walkthrough's),
//! loaded into project `demo`.

use std::time::Duration;

use serde_json::Value;

use super::BoxError;
use crate::adapter::http::{Api, HttpStore};
use crate::core::campaign::CampaignInput;
use crate::core::consent::ContentQuery;

pub(super) const DEMO: &str = "demo";
const DEMO_ACTOR: &str = "demo-loader";

/// The walkthrough's sample data: a privacy notice, a consent with two
/// purposes (and their names), three campaigns. Each piece is created only
/// if absent (by name, code or refCode), so loading twice changes nothing.
///
/// Servers that start together on one database do not both load it: the
/// first campaign is the claim (a refCode is unique per project in every
/// store, so exactly one server creates it); the server that made it loads
/// the rest, the others wait until the last piece is there (30 s at most)
/// and then only check. (If the claimant died halfway, the wait ends and
/// the check completes what is missing.)
pub(super) async fn load_demo<S: HttpStore>(api: &Api<S>) -> Result<(), BoxError> {
    let mut campaigns = Vec::new();
    for doc in [
        include_str!("../../../examples/demo/cart_discount.json"),
        include_str!("../../../examples/demo/promo_code.json"),
        include_str!("../../../examples/demo/freebie.json"),
    ] {
        campaigns.push(serde_json::from_str::<CampaignInput>(doc)?);
    }
    let (claim, last) = (&campaigns[0], &campaigns[campaigns.len() - 1]);
    let claimed = ensure_campaign(api, claim.clone()).await?;
    if !claimed {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !demo_campaign_exists(api, &last.ref_code).await?
            && std::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let consent_doc: Value =
        serde_json::from_str(include_str!("../../../examples/demo/consent.json"))?;
    let notice_id = ensure_content(
        api,
        "svc-privacy-notice-v1",
        "name",
        &consent_doc["privacyNotice"],
    )
    .await?;
    let mut consent = consent_doc["consent"].clone();
    consent["privacyNoticeRef"] = Value::String(notice_id);
    ensure_content(api, "svc-consent-v1", "name", &consent).await?;
    for purpose in consent_doc["purposes"].as_array().into_iter().flatten() {
        ensure_content(api, "svc-purpose-v1", "code", purpose).await?;
    }
    // The last campaign last: its presence says the load is complete.
    for input in campaigns.into_iter().skip(1) {
        ensure_campaign(api, input).await?;
    }
    Ok(())
}

/// Whether the demo project has a campaign with `ref_code`.
async fn demo_campaign_exists<S: HttpStore>(
    api: &Api<S>,
    ref_code: &str,
) -> Result<bool, BoxError> {
    Ok(api
        .campaigns()
        .store()
        .campaign_by_code(DEMO, ref_code)
        .await?
        .is_some())
}

/// Creates the campaign unless its refCode exists; whether this call
/// created it.
async fn ensure_campaign<S: HttpStore>(
    api: &Api<S>,
    input: CampaignInput,
) -> Result<bool, BoxError> {
    if demo_campaign_exists(api, &input.ref_code).await? {
        return Ok(false);
    }
    match api
        .campaigns()
        .create_campaign(DEMO, input, DEMO_ACTOR)
        .await
    {
        Ok(_) => Ok(true),
        // Another server created it first.
        Err(e) if e.code() == "duplicate_ref_code" => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The id of the record of `content_type` whose `key` attribute equals
/// that of `data`, created from `data` if there is none.
async fn ensure_content<S: HttpStore>(
    api: &Api<S>,
    content_type: &str,
    key: &str,
    data: &Value,
) -> Result<String, BoxError> {
    let value = data[key].as_str().ok_or("demo data without its key")?;
    let query = ContentQuery::from_pairs([(format!("data.{key}"), value.to_owned())])?;
    let found = api
        .consent()
        .list_content(DEMO, content_type, &query)
        .await?;
    if let Some(existing) = found.items.into_iter().next() {
        return Ok(existing.id);
    }
    let record = api
        .consent()
        .create_content(DEMO, content_type, data.clone(), DEMO_ACTOR)
        .await?;
    Ok(record.id)
}
