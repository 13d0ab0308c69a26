//! Consent receipts over HTTP: the language of the text shown, and the
//! receipts of purpose acceptances and withdrawals — fetched by id, named
//! by the purpose routes, signed with the published key, in the ledger;
//! one changed byte fails.
#![cfg(all(feature = "http", feature = "sqlite"))]
#![allow(clippy::unwrap_used)]

use crate::http_support;

use std::sync::Arc;

use accord::consent::receipt::Controller;
use accord::http::receipt::{
    receipt_in_ledger, verify_receipt_with_jwks, ReceiptError, ReceiptSigner,
};
use accord::http::{scope, Api, Auth, HttpStore};
use accord::store::memory::MemoryStore;
use accord::store::sqlite::SqliteStore;
use accord::ManualClock;
use http_support::{listen, parts, problem, t0, token, SECRET};
use serde_json::{json, Value};

pub(crate) struct Wire {
    pub(crate) base: String,
    client: reqwest::Client,
    token: String,
    project: &'static str,
}

impl Wire {
    pub(crate) async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> reqwest::Response {
        let url = format!("{}{path}", self.base);
        let req = match method {
            "POST" => self.client.post(url),
            _ => self.client.get(url),
        };
        let req = match body {
            Some(b) => req.json(b),
            None => req,
        };
        req.bearer_auth(&self.token).send().await.unwrap()
    }

    pub(crate) async fn ok(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let (status, value) = parts(self.send(method, path, body).await).await;
        assert!(status == 200 || status == 201, "{path}: {status} {value}");
        value
    }

    pub(crate) fn cms(&self, t: &str) -> String {
        format!("/cms/api/projects/{}/c/{t}", self.project)
    }

    pub(crate) fn bff(&self, rest: &str) -> String {
        format!("/bff/api/consent/projects/{}/{rest}", self.project)
    }

    pub(crate) fn c(&self, rest: &str) -> String {
        format!("/consent/api/projects/{}{rest}", self.project)
    }

    /// A published notice with these texts, and a published consent of
    /// `shop` under it; returns the consent id.
    pub(crate) async fn consent(&self, en: &str, th: &str) -> String {
        let notice = self
            .ok(
                "POST",
                &self.cms("svc-privacy-notice-v1"),
                Some(
                    &json!({"data": {"name": "n", "descriptionEn": en, "descriptionTh": th,
                    "revision": 1, "status": "PUBLISHED"}}),
                ),
            )
            .await;
        let consent = self
            .ok(
                "POST",
                &self.cms("svc-consent-v1"),
                Some(&json!({"data": {"name": "c", "application": "shop",
                    "purposes": ["email", "sms"], "lifespan": 30,
                    "privacyNoticeRef": notice["id"], "revision": 1, "status": "PUBLISHED"}})),
            )
            .await;
        consent["id"].as_str().unwrap().to_owned()
    }

    pub(crate) async fn jwks(&self) -> Value {
        let res = self
            .client
            .get(format!("{}/.well-known/jwks.json", self.base))
            .send()
            .await
            .unwrap();
        parts(res).await.1
    }
}

pub(crate) async fn serve<S: HttpStore>(store: Arc<S>, project: &'static str) -> Wire {
    let api = Api::new(
        store,
        Arc::new(ManualClock::new(t0())),
        Auth::hs256(SECRET).unwrap(),
    )
    .with_receipt_signer(
        ReceiptSigner::from_seed(&[7; 32]).unwrap(),
        Controller {
            pii_controller: "Example Co.".into(),
            contact: "privacy@example.com".into(),
            jurisdiction: "TH".into(),
            policy_url: "https://example.com/privacy".into(),
        },
    );
    let (base, client) = listen(api).await;
    Wire {
        base,
        client,
        token: token(scope::ALL, &[project]),
        project,
    }
}

pub(crate) fn acceptance(consent: &str, language: Option<&str>) -> Value {
    let mut body = json!({"app": "shop", "dataSubject": "u1", "consentId": consent,
        "userAgent": "Mozilla/5.0", "country": "TH", "localIp": "10.0.0.1",
        "osVersion": "17", "model": "x", "deviceFingerprintId": "fp-1"});
    if let Some(l) = language {
        body["language"] = l.into();
    }
    body
}

/// The receipt's language is the acceptance's: as the application says,
/// else the notice's (`en`, `th`, `mul` for both).
async fn receipts_carry_the_language(w: &Wire) {
    let both = w.consent("English text", "ข้อความภาษาไทย").await;
    let en_only = w.consent("English text", "").await;
    let th_only = w.consent("", "ข้อความภาษาไทย").await;
    for (consent, sent, expected) in [
        (&both, Some("th"), "th"),
        (&both, Some("en-GB"), "en-GB"),
        (&both, None, "mul"),
        (&en_only, None, "en"),
        (&th_only, None, "th"),
    ] {
        let accepted = w
            .ok(
                "POST",
                &w.bff("consent-acceptance"),
                Some(&acceptance(consent, sent)),
            )
            .await;
        assert_eq!(accepted["language"], expected, "{sent:?}");
        let id = accepted["id"].as_str().unwrap();
        let signed = w.ok("GET", &w.c(&format!("/receipts/{id}")), None).await;
        assert_eq!(signed["receipt"]["language"], expected, "{sent:?}");
        assert_eq!(signed["receipt"]["event"], "consentAcceptance");
        assert_eq!(signed["receipt"]["acceptanceId"], id);
        assert_eq!(signed["receipt"]["purposeEventId"], Value::Null);
        let history = w
            .ok(
                "GET",
                &w.cms(&format!("svc-consent-acceptance-v1/{id}")),
                None,
            )
            .await;
        assert_eq!(history["data"]["language"], expected);
    }
    for bad in ["", "x", "en_US", "th-", "toolongprimary", &"a-".repeat(20)] {
        let res = w
            .send(
                "POST",
                &w.bff("consent-acceptance"),
                Some(&acceptance(&both, Some(bad))),
            )
            .await;
        let (status, body) = parts(res).await;
        assert_eq!(status, 422, "{bad:?}: {body}");
        assert_eq!(body["errors"][0]["field"], "language", "{body}");
    }
    // Through the content store: the notice's language unless sent.
    let created = w
        .ok(
            "POST",
            &w.cms("svc-consent-acceptance-v1"),
            Some(&json!({"data": {"dataSubject": "u2", "consentId": en_only,
                "consentApplication": "shop", "acceptanceDate": t0().to_rfc3339(),
                "status": "ACCEPTED", "purposes": ["email"], "expiredDate": (t0() + chrono::Duration::days(30)).to_rfc3339(),
                "userAgent": "a", "country": "TH", "localIp": "1", "osVersion": "1", "model": "m",
                "deviceFingerprintId": "f", "note": ""}})),
        )
        .await;
    assert_eq!(created["data"]["language"], "en");
}

/// Purpose acceptances and withdrawals have receipts: named by the route,
/// fetched by id, signed with a published key, in the ledger.
async fn purpose_events_have_receipts(w: &Wire) {
    w.consent("English text", "").await;
    let body = json!({"app": "shop", "dataSubject": "u3", "purposeCode": "sms"});
    let mut ids = Vec::new();
    for (route, status) in [("purpose-acceptance", 201), ("purpose-withdrawal", 200)] {
        let res = w.send("POST", &w.bff(route), Some(&body)).await;
        let header = |name: &str| {
            res.headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        let (receipt_id, link) = (header("consent-receipt-id"), header("link"));
        let (got, event) = parts(res).await;
        assert_eq!(got, status, "{event}");
        let id = event["id"].as_str().unwrap().to_owned();
        assert_eq!(receipt_id.unwrap(), format!("{id}.1"));
        let path = w.c(&format!("/receipts/{id}?version=1"));
        assert_eq!(link.unwrap(), format!("<{path}>; rel=\"receipt\""));
        ids.push(id);
    }
    let jwks = w.jwks().await;
    let ledger = w
        .send("GET", &w.c("/ledger"), None)
        .await
        .text()
        .await
        .unwrap();
    for (id, status) in ids.iter().zip(["ACCEPTED", "WITHDRAWN"]) {
        let signed = w.ok("GET", &w.c(&format!("/receipts/{id}")), None).await;
        let again = w
            .ok("GET", &w.c(&format!("/receipts/{id}?version=1")), None)
            .await;
        assert_eq!(signed, again, "fetched again unchanged");
        let receipt = &signed["receipt"];
        assert_eq!(signed["receiptId"], format!("{id}.1"));
        assert_eq!(receipt["event"], "purposeEvent");
        assert_eq!(receipt["purposeEventId"], id.as_str());
        assert_eq!(receipt["acceptanceId"], Value::Null);
        assert_eq!(receipt["status"], status);
        assert_eq!(receipt["services"][0]["service"], "shop");
        assert_eq!(receipt["services"][0]["purposes"][0]["purpose"], "sms");
        assert_eq!(receipt["jurisdiction"], "TH");
        assert!(!signed.to_string().contains("u3"), "{signed}");
        let jws = signed["jws"].as_str().unwrap();
        let checked = verify_receipt_with_jwks(jws, &jwks).unwrap();
        assert_eq!(serde_json::to_value(&checked).unwrap(), *receipt);
        receipt_in_ledger(&checked, ledger.lines(), None).unwrap();
        // One changed byte, anywhere: refused.
        for i in 0..jws.len() {
            let mut bytes = jws.as_bytes().to_vec();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let forged = String::from_utf8(bytes).unwrap();
            assert!(
                verify_receipt_with_jwks(&forged, &jwks).is_err(),
                "byte {i} changed"
            );
        }
        let changed = ledger.replacen(&format!("\"{id}\""), "\"someone-else\"", 1);
        assert!(matches!(
            receipt_in_ledger(&checked, changed.lines(), None),
            Err(ReceiptError::NotInLedger(_))
        ));
    }
    // A purpose event has one version.
    problem(
        w.send(
            "GET",
            &w.c(&format!("/receipts/{}?version=2", ids[0])),
            None,
        )
        .await,
        404,
        "content_not_found",
    )
    .await;
}

#[tokio::test]
async fn memory_receipts() {
    let w = serve(Arc::new(MemoryStore::new()), "receipts-language").await;
    receipts_carry_the_language(&w).await;
    purpose_events_have_receipts(&w).await;
}

#[tokio::test]
async fn sqlite_receipts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("receipts.db");
    let store = Arc::new(SqliteStore::open(path.to_str().unwrap()).await.unwrap());
    let w = serve(store, "receipts-sqlite").await;
    receipts_carry_the_language(&w).await;
    purpose_events_have_receipts(&w).await;
}
