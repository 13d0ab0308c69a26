//! Times the admin console's campaign list with 10,000 campaigns in one
//! project on SQLite: the server time of each page (the router called in
//! process, from request to the last byte of the rendered page).
//!
//! ```sh
//! cargo run --release --example admin_list            # 10,000 campaigns
//! cargo run --release --example admin_list -- 2000    # another count
//! ```
//!
//! Prints one line per page: median and slowest of 21 runs after a
//! warm-up. The figures of record are in docs/benchmarks.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use accord::admin::{self, Admin};
use accord::campaign::CampaignInput;
use accord::http::{router, Api, Auth, Claims};
use accord::store::sqlite::SqliteStore;
use accord::SystemClock;
use axum::body::Body;
use axum::http::{header, Request};
use axum::Router;
use serde_json::json;
use tower::ServiceExt;

const SECRET: &str = "admin-list-timing-secret-0123456789!";
const P: &str = "big";

fn campaign(i: usize) -> CampaignInput {
    let (start, end) = match i % 3 {
        0 => ("2020-01-01T00:00:00Z", "2021-01-01T00:00:00Z"),
        1 => ("2020-01-01T00:00:00Z", "2100-01-01T00:00:00Z"),
        _ => ("2099-01-01T00:00:00Z", "2100-01-01T00:00:00Z"),
    };
    let season = ["Summer", "Winter", "Spring", "Autumn"][i % 4];
    let channel = ["web", "app", "store"][i % 3];
    let status = if i.is_multiple_of(5) {
        "DISABLE"
    } else {
        "ENABLE"
    };
    serde_json::from_value(json!({
        "name": format!("{season} sale {i:05}"),
        "refCode": format!("C{i:05}"),
        "groupName": format!("group-{}", i % 20),
        "channel": channel,
        "status": status,
        "priority": 1 + i % 10,
        "startDate": start, "endDate": end,
        "quotas": [{"key": "${campaignCode}-${userId}", "value": 1}],
        "rules": [{"name": "big carts", "when": [{"match": "ALL", "conditions": [
            {"type": "cart", "attribute": "totalPrice", "op": "gte", "value": format!("{}", 100 + i), "valueType": "NUMBER"}]}],
            "thenOperator": "AND",
            "then": [{"action": "CART_DISCOUNT", "data": [{"attribute": "amount", "value": "floor(${totalPrice} * 0.05)", "isFormula": true}]}]}]
    }))
    .expect("a campaign")
}

async fn send(router: &Router, req: Request<Body>) -> (axum::http::Response<Body>, Vec<u8>) {
    let res = router.clone().oneshot(req).await.expect("infallible");
    let (parts, body) = res.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .expect("a body");
    (
        axum::http::Response::from_parts(parts, Body::empty()),
        bytes.to_vec(),
    )
}

/// Signs in through the forms; the cookie header of the session.
async fn sign_in(router: &Router) -> String {
    let (res, body) = send(
        router,
        Request::get("/admin/signin").body(Body::empty()).unwrap(),
    )
    .await;
    let cookie = res.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let body = String::from_utf8(body).unwrap();
    let at = body.find("name=\"csrf\" value=\"").unwrap() + 19;
    let csrf = &body[at..at + 64];
    let token = Claims::all_scopes("timing", &[P], Duration::from_secs(3600))
        .sign_hs256(SECRET.as_bytes())
        .unwrap();
    let form = form_urlencoded::Serializer::new(String::new())
        .append_pair("csrf", csrf)
        .append_pair("token", &token)
        .finish();
    let (res, _) = send(
        router,
        Request::post("/admin/signin")
            .header(header::COOKIE, &cookie)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(form))
            .unwrap(),
    )
    .await;
    res.headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
        .find(|c| c.starts_with("accord_admin="))
        .expect("a session")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let count: usize = std::env::args().nth(1).map_or(Ok(10_000), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("admin.db").display());
    let store = Arc::new(SqliteStore::open(&url).await?);
    let auth = Auth::hs256(SECRET)?;
    let api = Api::new(store, Arc::new(SystemClock), auth.clone());
    let started = Instant::now();
    for i in 0..count {
        api.campaigns()
            .create_campaign(P, campaign(i), "loader")
            .await?;
    }
    eprintln!("{count} campaigns created in {:.1?}", started.elapsed());
    let console = Admin::new(Arc::clone(api.campaigns()), Arc::clone(api.consent()), auth);
    let app = router(api).merge(admin::router(console));
    let cookie = sign_in(&app).await;
    let last = count.saturating_sub(1) / 20;
    let pages = [
        (
            "first page, default order".to_owned(),
            "/admin/p/big/campaigns".to_owned(),
        ),
        (
            format!("page {last} (the last)"),
            format!("/admin/p/big/campaigns?page={last}"),
        ),
        (
            "sorted by name, descending".to_owned(),
            "/admin/p/big/campaigns?sort=-name".to_owned(),
        ),
        (
            "search: name (\"winter sale 0\")".to_owned(),
            "/admin/p/big/campaigns?q=winter+sale+0".to_owned(),
        ),
        (
            "search: refCode (\"c0999\")".to_owned(),
            "/admin/p/big/campaigns?q=c0999".to_owned(),
        ),
        (
            "search: groupName (\"group-7\")".to_owned(),
            "/admin/p/big/campaigns?q=group-7".to_owned(),
        ),
        (
            "search: status (\"disab\")".to_owned(),
            "/admin/p/big/campaigns?q=disab".to_owned(),
        ),
        (
            "search with no hit".to_owned(),
            "/admin/p/big/campaigns?q=zzz".to_owned(),
        ),
        (
            "filters: channel, group, active now, enabled".to_owned(),
            "/admin/p/big/campaigns?channel=app&group=group-7&period=current&status=ENABLE"
                .to_owned(),
        ),
    ];
    println!("| page | median | slowest | found |");
    println!("|---|---|---|---|");
    for (label, path) in pages {
        let mut times = Vec::new();
        let mut found = String::new();
        for run in 0..22 {
            let req = Request::get(&path)
                .header(header::COOKIE, &cookie)
                .body(Body::empty())?;
            let t = Instant::now();
            let (res, body) = send(&app, req).await;
            let took = t.elapsed();
            assert!(res.status().is_success(), "{path}: {}", res.status());
            if run == 0 {
                let body = String::from_utf8(body)?;
                body.split("class=\"pager\" aria-live=\"polite\">")
                    .nth(1)
                    .and_then(|s| s.split('<').next())
                    .unwrap_or_default()
                    .clone_into(&mut found);
            } else {
                times.push(took);
            }
        }
        times.sort();
        println!(
            "| {label} | {:.1} ms | {:.1} ms | {found} |",
            times[times.len() / 2].as_secs_f64() * 1000.0,
            times[times.len() - 1].as_secs_f64() * 1000.0
        );
    }
    Ok(())
}
