//! The API calls of the load generator: where the traffic goes, the seed
//! (a campaign and a consent), the three operations, and the quota check.

use std::collections::BTreeMap;
use std::time::Duration;

use accord::campaign::Campaign;
use reqwest::{Client, Method, Response};
use rust_decimal::Decimal;
use serde_json::{json, Value};

use super::server::BoxError;

/// Where the traffic goes.
#[derive(Debug, Clone)]
pub struct Target {
    /// `http://host:port`.
    pub base: String,
    /// Bearer token with every scope for `project`.
    pub token: String,
    /// The project.
    pub project: String,
}

impl Target {
    /// `{base}{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `/campaign/api/projects/{project}{rest}`.
    pub fn campaign(&self, rest: &str) -> String {
        self.url(&format!("/campaign/api/projects/{}{rest}", self.project))
    }

    /// `/bff/api/consent/projects/{project}{rest}`.
    pub fn bff(&self, rest: &str) -> String {
        self.url(&format!("/bff/api/consent/projects/{}{rest}", self.project))
    }

    /// `/cms/api/projects/{project}/c/{rest}`.
    pub fn cms(&self, rest: &str) -> String {
        self.url(&format!("/cms/api/projects/{}/c/{rest}", self.project))
    }

    /// A request with the token.
    pub fn req(&self, client: &Client, method: Method, url: &str) -> reqwest::RequestBuilder {
        client.request(method, url).bearer_auth(&self.token)
    }
}

/// A keep-alive client with a 30 s request timeout.
pub fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(1024)
        .build()
        .expect("an HTTP client")
}

/// The quotas of the seeded campaign.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Redemptions per user.
    pub per_user: u32,
    /// Redemptions in all (0: no such quota).
    pub total: u32,
    /// Sum of `points` in all (0: no such quota).
    pub points: u32,
}

/// What [`seed`] created.
#[derive(Debug, Clone)]
pub struct Seeded {
    /// The campaign id.
    pub campaign_id: String,
    /// Its refCode.
    pub code: String,
    /// The consent id.
    pub consent_id: String,
}

/// The consent application of the seeded consent.
pub const APP: &str = "load-app";

/// The campaign of a run: any cart of 100 or more gets 10 off; quotas per
/// user, in all, and on the sum of the request's `points` (the last two
/// campaign-wide keys, which every redeem updates; left out when their
/// limit is 0).
pub fn campaign_json(code: &str, limits: Limits) -> Value {
    let mut campaign = json!({
        "name": format!("Load {code}"),
        "startDate": "2020-01-01T00:00:00Z",
        "endDate": "2099-01-01T00:00:00Z",
        "refCode": code,
        "status": "ENABLE",
        "priority": 1,
        "quotas": [
            {"key": "${campaignCode}-${userId}", "value": limits.per_user, "valueField": "", "description": "per user"},
            {"key": "${campaignCode}", "value": limits.total, "description": "in all"},
            {"key": "${campaignCode}-points", "value": limits.points, "valueField": "points", "description": "points"}
        ],
        "rules": [{
            "name": "Carts of 100 or more",
            "when": [{"match": "ALL", "conditions": [
                {"type": "cart", "attribute": "totalPrice", "op": "gte", "value": "100", "valueType": "NUMBER"}
            ]}],
            "thenOperator": "AND",
            "then": [{"action": "CART_DISCOUNT", "internalAction": false,
                      "actionRef": "eeeeeeee-0000-4000-8000-000000000001",
                      "data": [{"attribute": "amount", "value": "10", "valueType": "STRING"},
                               {"attribute": "currency", "value": "THB"}]}]
        }]
    });
    if let Some(quotas) = campaign["quotas"].as_array_mut() {
        let (total, points) = (limits.total, limits.points);
        quotas.retain(|q| match q["description"].as_str() {
            Some("in all") => total > 0,
            Some("points") => points > 0,
            _ => true,
        });
    }
    campaign
}

/// POSTs `body`; the JSON of a response with `expected` status, else an error.
async fn post_expect(
    client: &Client,
    target: &Target,
    url: &str,
    body: &Value,
    expected: u16,
) -> Result<Value, BoxError> {
    let res = target
        .req(client, Method::POST, url)
        .json(body)
        .send()
        .await?;
    let status = res.status().as_u16();
    let text = res.text().await?;
    if status != expected {
        return Err(format!("POST {url}: {status} {text}").into());
    }
    Ok(serde_json::from_str(&text)?)
}

/// Creates the run's campaign (refCode `code`) and a published consent of
/// application [`APP`] with purposes `email` and `sms`.
pub async fn seed(
    client: &Client,
    target: &Target,
    code: &str,
    limits: Limits,
) -> Result<Seeded, BoxError> {
    let campaign = post_expect(
        client,
        target,
        &target.campaign("/campaigns"),
        &campaign_json(code, limits),
        201,
    )
    .await?;
    let notice = post_expect(
        client,
        target,
        &target.cms("svc-privacy-notice-v1"),
        &json!({"data": {"name": format!("Notice {code}"), "descriptionEn": "How we use your data",
                          "revision": 1, "status": "PUBLISHED"}}),
        201,
    )
    .await?;
    let consent = post_expect(
        client,
        target,
        &target.cms("svc-consent-v1"),
        &json!({"data": {"name": format!("Consent {code}"), "descriptionEn": "News and offers",
                          "application": APP, "purposes": ["email", "sms"], "lifespan": 365,
                          "privacyNoticeRef": notice["id"], "revision": 1, "status": "PUBLISHED"}}),
        201,
    )
    .await?;
    let text = |v: &Value| v.as_str().map(str::to_owned).ok_or("no id in response");
    Ok(Seeded {
        campaign_id: text(&campaign["id"])?,
        code: code.to_owned(),
        consent_id: text(&consent["id"])?,
    })
}

/// The body of a POST creating `campaign` as stored by the benchmark
/// generator: the fields a client sends, without the ones the server sets
/// (id, version, project, active, audit stamps).
///
/// The running period is widened to 2020–2100: the generator's campaigns run
/// in 2026 (it searches at a fixed instant), the server searches at the real
/// time. Conditions, rules, benefits and quotas are sent as generated.
pub fn campaign_input_json(campaign: &Campaign) -> Result<Value, BoxError> {
    let mut body = serde_json::to_value(campaign)?;
    let fields = body.as_object_mut().ok_or("a campaign is a JSON object")?;
    for server_side in [
        "id",
        "projectId",
        "version",
        "active",
        "createdBy",
        "lastModifiedBy",
        "createdDate",
        "lastModifiedDate",
    ] {
        fields.remove(server_side);
    }
    fields.insert("startDate".into(), json!("2020-01-01T00:00:00Z"));
    fields.insert("endDate".into(), json!("2100-01-01T00:00:00Z"));
    Ok(body)
}

/// Creates every campaign of `campaigns` through the API, in order.
pub async fn seed_campaigns(
    client: &Client,
    target: &Target,
    campaigns: &[Campaign],
) -> Result<(), BoxError> {
    let url = target.campaign("/campaigns");
    for c in campaigns {
        post_expect(client, target, &url, &campaign_input_json(c)?, 201).await?;
    }
    Ok(())
}

/// POST search with a body already serialised (the storefront traffic
/// serialises its requests once, so the load generator spends its CPU on
/// sending, not on JSON).
pub async fn search_raw(
    client: &Client,
    target: &Target,
    url: &str,
    body: axum::body::Bytes,
) -> reqwest::Result<Response> {
    target
        .req(client, Method::POST, url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await
}

/// POST search for a cart of `total`.
pub async fn search(
    client: &Client,
    target: &Target,
    user: &str,
    total: u32,
) -> reqwest::Result<Response> {
    target
        .req(client, Method::POST, &target.campaign("/search"))
        .json(&json!({
            "channel": "web",
            "attribute": {"userId": user},
            "cart": {"totalPrice": total, "currency": "THB", "items": [
                {"name": "Item", "sku": "SKU-1", "amount": 1, "price": total, "tags": ["load"]}
            ]}
        }))
        .send()
        .await
}

/// POST redeem of the seeded campaign by `user`, charging `points`, with
/// the `Idempotency-Key` header `key`.
pub async fn redeem(
    client: &Client,
    target: &Target,
    seeded: &Seeded,
    user: &str,
    points: u32,
    key: &str,
) -> reqwest::Result<Response> {
    target
        .req(
            client,
            Method::POST,
            &target.campaign("/redeem/campaign-code"),
        )
        .header("Idempotency-Key", key)
        .json(&json!({
            "campaignCode": seeded.code,
            "channel": "web",
            "attribute": {"userId": user, "points": points},
            "cart": {"totalPrice": 250, "currency": "THB", "items": []}
        }))
        .send()
        .await
}

/// POST consent-acceptance of the seeded consent by `subject`.
pub async fn accept(
    client: &Client,
    target: &Target,
    seeded: &Seeded,
    subject: &str,
) -> reqwest::Result<Response> {
    target
        .req(client, Method::POST, &target.bff("/consent-acceptance"))
        .json(&json!({
            "app": APP, "dataSubject": subject, "consentId": seeded.consent_id,
            "purposes": ["email"], "userAgent": "load/1", "country": "TH",
            "localIp": "127.0.0.1", "osVersion": "test", "model": "load",
            "deviceFingerprintId": "fp-load", "note": "load"
        }))
        .send()
        .await
}

/// The quota check of a run.
#[derive(Debug, Clone, Default)]
pub struct QuotaCheck {
    /// Quota keys the campaign charged.
    pub keys: usize,
    /// COMPLETE redemptions of the campaign.
    pub complete: u64,
    /// Keys whose usage exceeds their limit.
    pub oversold: Vec<String>,
    /// Keys whose usage differs from the sum of their COMPLETE charges.
    pub mismatched: Vec<String>,
}

impl QuotaCheck {
    /// No key oversold, every key's usage equal to its COMPLETE charges.
    pub fn holds(&self) -> bool {
        self.oversold.is_empty() && self.mismatched.is_empty()
    }
}

/// Reads the campaign's quota usage and every redemption of it through the
/// API, and compares.
pub async fn check_quotas(
    client: &Client,
    target: &Target,
    seeded: &Seeded,
) -> Result<QuotaCheck, BoxError> {
    // Every page of the quota view: each names the next in its `Link`.
    let base = target.campaign(&format!("/campaigns/{}/quotas", seeded.campaign_id));
    let mut url = format!("{base}?size=1000");
    let mut usage: Vec<Value> = Vec::new();
    loop {
        let res = target.req(client, Method::GET, &url).send().await?;
        if !res.status().is_success() {
            return Err(format!("GET {url}: {}", res.status()).into());
        }
        let next = res
            .headers()
            .get("link")
            .and_then(|v| v.to_str().ok())
            .and_then(|link| link.strip_prefix('<')?.split_once('>'))
            .map(|(query, _)| format!("{base}{query}"));
        usage.extend(res.json::<Vec<Value>>().await?);
        match next {
            Some(next) => url = next,
            None => break,
        }
    }
    let mut charged: BTreeMap<String, Decimal> = BTreeMap::new();
    let mut complete = 0;
    let mut page = 0;
    loop {
        let url = target.campaign(&format!(
            "/redemptions?campaignCode={}&size=1000&page={page}",
            seeded.code
        ));
        let res = target.req(client, Method::GET, &url).send().await?;
        if !res.status().is_success() {
            return Err(format!("GET {url}: {}", res.status()).into());
        }
        let items: Vec<Value> = res.json().await?;
        for r in items.iter().filter(|r| r["status"] == "COMPLETE") {
            complete += 1;
            for q in r["quotas"].as_array().into_iter().flatten() {
                *charged.entry(text_of(&q["key"])).or_default() += decimal(&q["amount"])?;
            }
        }
        if items.len() < 1000 {
            break;
        }
        page += 1;
    }
    let mut check = QuotaCheck {
        keys: usage.len(),
        complete,
        ..QuotaCheck::default()
    };
    for u in &usage {
        let key = text_of(&u["key"]);
        let used = decimal(&u["used"])?;
        if u["limit"].is_number() && used > decimal(&u["limit"])? {
            check
                .oversold
                .push(format!("{key}: {used} > {}", u["limit"]));
        }
        let sum = charged.remove(&key).unwrap_or_default();
        if used != sum {
            check
                .mismatched
                .push(format!("{key}: used {used}, COMPLETE charges {sum}"));
        }
    }
    for (key, sum) in charged {
        check
            .mismatched
            .push(format!("{key}: no usage, COMPLETE charges {sum}"));
    }
    Ok(check)
}

fn text_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

/// A JSON number as a Decimal, read through its text.
fn decimal(v: &Value) -> Result<Decimal, BoxError> {
    match v {
        Value::Number(n) => Ok(n.to_string().parse()?),
        other => Err(format!("not a number: {other}").into()),
    }
}
