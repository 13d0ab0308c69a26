//! Code pools over HTTP: generate, import (CSV), export, list, deactivate,
//! look up, and redeem by code.
#![cfg(feature = "http")]

use crate::http_support;

use http_support::{parts, problem, start, Server};
use reqwest::Method;
use serde_json::{json, Value};

async fn create(s: &Server, code: &str) -> String {
    let body = json!({
        "name": code, "refCode": code, "status": "ENABLE", "priority": 1,
        "startDate": "2026-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT", "data": []}]}]
    });
    let res = s
        .req(Method::POST, &s.campaign_url("/campaigns"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let (status, created) = parts(res).await;
    assert_eq!(status, 201, "{created}");
    created["id"].as_str().unwrap().to_owned()
}

async fn redeem(s: &Server, body: Value) -> reqwest::Response {
    s.req(Method::POST, &s.campaign_url("/redeem/campaign-code"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
// One story of a pool, step by step: long, and read top to bottom.
#[allow(clippy::too_many_lines)]
async fn a_code_pool_end_to_end() {
    let s = start().await;
    let id = create(&s, "SPRING").await;
    let codes = |rest: &str| s.campaign_url(&format!("/campaigns/{id}/codes{rest}"));

    let res = s
        .req(Method::POST, &codes("/generate"))
        .json(&json!({"count": 50, "prefix": "SPR-", "length": 6, "usageLimit": 2}))
        .send()
        .await
        .unwrap();
    let (status, body) = parts(res).await;
    assert_eq!(
        (status, body),
        (201, json!({"campaignId": id, "count": 50}))
    );

    let res = s
        .req(Method::POST, &format!("{}?usageLimit=3", codes("/import")))
        .header("content-type", "text/csv")
        .body("code,usageLimit\nWELCOME-AB12\nWELCOME-CD34,1\n")
        .send()
        .await
        .unwrap();
    assert_eq!(parts(res).await.0, 201);

    // List: 52 codes, a page of 10, in normalized order.
    let res = s
        .req(Method::GET, &format!("{}?size=10", codes("")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-total-count"], "52");
    let (_, page) = parts(res).await;
    assert_eq!(page.as_array().unwrap().len(), 10);
    assert!(page[0]["code"].as_str().unwrap().starts_with("SPR-"));
    assert_eq!(page[0]["usageLimit"], 2);
    assert_eq!(page[0]["used"], 0);
    assert_eq!(page[0]["active"], true);

    // Redeem by code alone, typed in lower case without the dash.
    let res = redeem(&s, json!({"code": "welcome ab12"})).await;
    let (status, r) = parts(res).await;
    assert_eq!(status, 201, "{r}");
    assert_eq!(
        (r["campaignCode"].as_str(), r["code"].as_str()),
        (Some("SPRING"), Some("WELCOMEAB12"))
    );

    // Look it up.
    let res = s
        .req(Method::GET, &s.campaign_url("/codes/welcome-ab12"))
        .send()
        .await
        .unwrap();
    let (status, found) = parts(res).await;
    assert_eq!(status, 200);
    assert_eq!(found["campaignCode"], "SPRING");
    assert_eq!(
        (found["used"].clone(), found["usageLimit"].clone()),
        (json!(1), json!(3))
    );

    // Without a code, the pool's campaign is refused.
    problem(
        redeem(&s, json!({"campaignCode": "SPRING"})).await,
        422,
        "code_required",
    )
    .await;
    // A single-use code, twice.
    assert_eq!(
        redeem(&s, json!({"code": "WELCOME-CD34"})).await.status(),
        201
    );
    problem(
        redeem(&s, json!({"code": "WELCOME-CD34"})).await,
        409,
        "code_exhausted",
    )
    .await;
    problem(
        redeem(&s, json!({"code": "NOPE"})).await,
        404,
        "code_not_found",
    )
    .await;

    // Deactivate: refused on redeem; activate again.
    let res = s
        .req(Method::POST, &codes("/welcome-ab12/deactivate"))
        .send()
        .await
        .unwrap();
    let (status, code) = parts(res).await;
    assert_eq!((status, code["active"].clone()), (200, json!(false)));
    problem(
        redeem(&s, json!({"code": "WELCOMEAB12"})).await,
        409,
        "code_inactive",
    )
    .await;
    let res = s
        .req(Method::POST, &codes("/WELCOMEAB12/activate"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        redeem(&s, json!({"code": "WELCOMEAB12"})).await.status(),
        201
    );
    problem(
        s.req(Method::POST, &codes("/NOPE/deactivate"))
            .send()
            .await
            .unwrap(),
        404,
        "code_not_found",
    )
    .await;

    // Export as CSV.
    let res = s.req(Method::GET, &codes("/export")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/csv; charset=utf-8");
    let csv = res.text().await.unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "code,usageLimit,used,active,createdDate");
    assert_eq!(lines.len(), 53);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("WELCOME-AB12,3,2,true,")),
        "{csv}"
    );
}

#[tokio::test]
async fn bad_pool_requests_are_problems() {
    let s = start().await;
    let id = create(&s, "P").await;
    let codes = |rest: &str| s.campaign_url(&format!("/campaigns/{id}/codes{rest}"));
    // Over the per-request bound, and a space too small: every problem.
    let res = s
        .req(Method::POST, &codes("/generate"))
        .json(&json!({"count": 100_001, "charset": "AB", "prefix": "a b"}))
        .send()
        .await
        .unwrap();
    let body = problem(res, 422, "validation_failed").await;
    let fields: Vec<&str> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["count", "prefix"]);
    let res = s
        .req(Method::POST, &codes("/generate"))
        .json(&json!({"count": 1000, "length": 4, "charset": "ABCD"}))
        .send()
        .await
        .unwrap();
    let body = problem(res, 422, "validation_failed").await;
    assert_eq!(body["errors"][0]["code"], "code_space_too_small");
    // CSV only, with its lines checked.
    let res = s
        .req(Method::POST, &codes("/import"))
        .json(&json!({"codes": ["A"]}))
        .send()
        .await
        .unwrap();
    problem(res, 415, "unsupported_media_type").await;
    let res = s
        .req(Method::POST, &codes("/import"))
        .header("content-type", "text/csv")
        .body("OK1\nnot ok!\nOK1\n")
        .send()
        .await
        .unwrap();
    let body = problem(res, 422, "validation_failed").await;
    assert_eq!(body["errors"][0]["field"], "line 2");
    assert_eq!(body["errors"][1]["code"], "duplicate_code");
    // A code taken in the project: 409, nothing stored.
    let other = create(&s, "Q").await;
    let import = |campaign: &str, csv: &'static str| {
        s.req(
            Method::POST,
            &s.campaign_url(&format!("/campaigns/{campaign}/codes/import")),
        )
        .header("content-type", "text/csv")
        .body(csv)
        .send()
    };
    assert_eq!(import(&id, "TAKEN1\n").await.unwrap().status(), 201);
    let body = problem(
        import(&other, "FREE1\ntaken-1\n").await.unwrap(),
        409,
        "duplicate_code",
    )
    .await;
    assert_eq!(body["errors"][0]["code"], "duplicate_code");
    problem(
        s.req(Method::GET, &s.campaign_url("/codes/FREE1"))
            .send()
            .await
            .unwrap(),
        404,
        "code_not_found",
    )
    .await;
    // Unknown campaign, bad usage limit.
    problem(
        s.req(Method::GET, &s.campaign_url("/campaigns/not-a-uuid/codes"))
            .send()
            .await
            .unwrap(),
        404,
        "campaign_not_found",
    )
    .await;
    let res = s
        .req(Method::POST, &format!("{}?usageLimit=0", codes("/import")))
        .header("content-type", "text/csv")
        .body("X1\n")
        .send()
        .await
        .unwrap();
    problem(res, 422, "validation_failed").await;
}

/// A large pool is exported whole and in order, streamed in pieces (no
/// `Content-Length`): every generated code once, each line well formed;
/// an unknown campaign is a problem before any byte.
#[tokio::test]
async fn a_large_export_streams_every_code_once() {
    const N: usize = 45_001;
    let s = start().await;
    let id = create(&s, "BIG").await;
    let codes = |rest: &str| s.campaign_url(&format!("/campaigns/{id}/codes{rest}"));
    let res = s
        .req(Method::POST, &codes("/generate"))
        .json(&json!({"count": N, "length": 10, "usageLimit": 3}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let res = s.req(Method::GET, &codes("/export")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers().get("content-length").is_none());
    assert_eq!(res.headers()["transfer-encoding"], "chunked");
    let csv = res.text().await.unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("code,usageLimit,used,active,createdDate")
    );
    let exported: Vec<&str> = lines
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            assert_eq!(fields.len(), 5, "{line}");
            assert_eq!(&fields[1..4], ["3", "0", "true"], "{line}");
            assert_eq!(fields[0].len(), 10, "{line}");
            fields[0]
        })
        .collect();
    assert_eq!(exported.len(), N);
    // Normalized order, each code once: the pages join without a gap or
    // an overlap.
    assert!(exported.windows(2).all(|w| w[0] < w[1]));
    // The same codes the list gives, page by page.
    let res = s
        .req(Method::GET, &format!("{}?page=4&size=1000", codes("")))
        .send()
        .await
        .unwrap();
    let (_, page) = parts(res).await;
    let listed: Vec<&str> = page
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["code"].as_str().unwrap())
        .collect();
    assert_eq!(listed, exported[4000..5000]);
    let other = uuid::Uuid::new_v4();
    problem(
        s.req(
            Method::GET,
            &s.campaign_url(&format!("/campaigns/{other}/codes/export")),
        )
        .send()
        .await
        .unwrap(),
        404,
        "campaign_not_found",
    )
    .await;
}
