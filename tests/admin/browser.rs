//! The console in a real browser: headless Chromium driven through
//! WebDriver (chromedriver) with fantoccini, against the router served on
//! a loopback port. One scenario walks every page a person uses.
//!
//! Without Chromium or chromedriver the test prints why and passes, except
//! when `CI` is set: then a missing browser fails it. With
//! `ACCORD_SCREENSHOTS=1` it also saves screenshots of the main pages into
//! `docs/images/`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use accord::campaign::RedeemRequest;
use accord::consent::{AcceptConsentRequest, AcceptanceStatus, PurposeRequest};
use accord::http::scope;
use accord::store::CampaignStore;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

use crate::support::*;

mod codes;

/// The browser and its driver, when both are installed.
fn binaries() -> Option<(PathBuf, PathBuf)> {
    let find = |env: &str, names: &[&str]| {
        std::env::var_os(env)
            .map(PathBuf::from)
            .into_iter()
            .chain(names.iter().map(|n| Path::new("/usr/bin").join(n)))
            .find(|p| p.is_file())
    };
    Some((
        find(
            "CHROMIUM",
            &["chromium", "chromium-browser", "google-chrome"],
        )?,
        find("CHROMEDRIVER", &["chromedriver"])?,
    ))
}

/// chromedriver on a free port, killed when dropped.
struct Driver {
    child: Child,
    url: String,
    profile: tempfile::TempDir,
    browser: PathBuf,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_driver(browser: PathBuf, driver: &Path) -> Driver {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
        profile: tempfile::tempdir().unwrap(),
        browser,
    }
}

async fn browser(driver: &Driver) -> Client {
    let profile = driver.profile.path().display().to_string();
    let caps = json!({
        "goog:chromeOptions": {
            "binary": driver.browser,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                "--window-size=1280,900", format!("--user-data-dir={profile}")
            ]
        }
    });
    let serde_json::Value::Object(caps) = caps else {
        unreachable!()
    };
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a Chromium session")
}

/// Waits until the page source contains `needle`; returns the source.
async fn wait_for(c: &Client, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let source = c.source().await.unwrap();
        if source.contains(needle) {
            return source;
        }
        assert!(
            Instant::now() < deadline,
            "the page never showed {needle:?}:\n{source}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn text_of(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Saves a screenshot as `docs/images/<name>.png` when asked to.
async fn shot(c: &Client, name: &str) {
    if std::env::var_os("ACCORD_SCREENSHOTS").is_none() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/images");
    std::fs::create_dir_all(&dir).unwrap();
    let png = c.screenshot().await.unwrap();
    std::fs::write(dir.join(format!("admin-{name}.png")), png).unwrap();
}

/// Scrolls the element `css` to the top, then saves a screenshot.
async fn shot_at(c: &Client, name: &str, css: &str) {
    c.execute(
        "document.querySelector(arguments[0]).scrollIntoView();",
        vec![json!(css)],
    )
    .await
    .unwrap();
    shot(c, name).await;
}

/// Sets an input's value through the DOM (date pickers take no typing in
/// a stable format).
async fn set(c: &Client, id: &str, value: &str) {
    c.execute(
        "document.getElementById(arguments[0]).value = arguments[1];",
        vec![json!(id), json!(value)],
    )
    .await
    .unwrap();
}

async fn fill(c: &Client, css: &str, value: &str) {
    let e = c.find(Locator::Css(css)).await.unwrap();
    e.clear().await.unwrap();
    e.send_keys(value).await.unwrap();
}

/// The data of the scenario: campaigns to search, a redemption, a consent
/// and a subject's history.
async fn seed(app: &App) {
    let mut shoes = simple("Summer shoes", "SHOE-1");
    shoes["groupName"] = json!("Footwear");
    shoes["quotas"] = json!([{"key": "${campaignCode}-${userId}", "value": 3}]);
    app.campaign(shoes).await;
    let mut hats = simple("Winter hats", "HAT-2");
    hats["status"] = json!("DISABLE");
    app.campaign(hats).await;
    app.campaign(json!({
        "name": "Gold members", "refCode": "GOLD",
        "startDate": "2026-01-01T00:00:00Z", "endDate": "2027-01-01T00:00:00Z",
        "rules": [{"name": "gold tier", "when": [{"match": "ALL", "conditions": [
            {"type": "custom", "attribute": "tier", "op": "eq", "value": "gold", "valueType": "STRING"}]}],
            "thenOperator": "AND", "then": [{"action": "DISCOUNT", "data": [{"attribute": "amount", "value": "50"}]}]}]
    }))
    .await;
    let redeem: RedeemRequest =
        serde_json::from_value(json!({"campaignCode": "SHOE-1", "attribute": {"userId": "u1"}}))
            .unwrap();
    app.api.campaigns().redeem(P, &redeem).await.unwrap();

    let consent = app.api.consent();
    let notice = consent
        .create_content(
            P,
            "svc-privacy-notice-v1",
            json!({"name": "Notice", "revision": 1, "status": "PUBLISHED",
            "descriptionEn": "How we use your data.", "descriptionTh": "วิธีที่เราใช้ข้อมูลของคุณ"}),
            "seed",
        )
        .await
        .unwrap();
    let c = consent
        .create_content(
            P,
            "svc-consent-v1",
            json!({"name": "Marketing", "application": "web",
            "purposes": ["email", "sms"], "lifespan": 365, "privacyNoticeRef": notice.id,
            "revision": 1, "status": "PUBLISHED"}),
            "seed",
        )
        .await
        .unwrap();
    let accepted = consent
        .accept_consent(
            P,
            AcceptConsentRequest {
                app: Some("web".into()),
                data_subject: Some("u1".into()),
                consent_id: Some(c.id),
                purposes: None,
                user_agent: Some("Mozilla/5.0".into()),
                country: Some("TH".into()),
                local_ip: Some("10.0.0.1".into()),
                os_version: Some("17".into()),
                model: Some("phone".into()),
                device_fingerprint_id: Some("fp".into()),
                note: None,
                ..Default::default()
            },
            "u1",
        )
        .await
        .unwrap();
    assert_eq!(accepted.status, AcceptanceStatus::Accepted);
    app.clock.advance(chrono::Duration::hours(2));
    consent
        .withdraw_purpose(
            P,
            PurposeRequest {
                app: Some("web".into()),
                data_subject: Some("u1".into()),
                purpose_code: Some("sms".into()),
            },
        )
        .await
        .unwrap();
}

#[test]
fn a_person_uses_every_page_in_a_browser() {
    let Some((chromium, chromedriver)) = binaries() else {
        let why = "Chromium or chromedriver is not installed (Debian: apt-get install chromium chromium-driver)";
        assert!(
            std::env::var_os("CI").is_none(),
            "browser tests must run in CI: {why}"
        );
        eprintln!("skipping the browser test: {why}");
        return;
    };
    let driver = start_driver(chromium, &chromedriver);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(scenario(&driver));
}

async fn scenario(driver: &Driver) {
    let app = app();
    seed(&app).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = app.router.clone();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let c = browser(driver).await;
    sign_in_and_search(&c, &base).await;
    create_a_campaign(&c, &base).await;
    toggle_and_try(&c, &base).await;
    revisions_and_restore(&c, &base, &app).await;
    quotas_and_redemptions(&c, &base).await;
    codes::generate_list_and_deactivate(&c, &base, &app).await;
    consent_and_csrf(&c, &base).await;
    c.close().await.unwrap();
}

async fn sign_in_and_search(c: &Client, base: &str) {
    // Sign in by pasting a token.
    c.goto(&format!("{base}/admin/signin")).await.unwrap();
    shot(c, "signin").await;
    fill(c, "#token", &token(scope::ALL)).await;
    c.form(Locator::Css("form[action='/admin/signin']"))
        .await
        .unwrap()
        .submit()
        .await
        .unwrap();
    wait_for(c, "<h1>Campaigns</h1>").await;
    shot(c, "campaigns").await;

    // The search box, by each of the four fields.
    for (q, hit, miss) in [
        ("summer", "SHOE-1", "HAT-2"),
        ("footwear", "SHOE-1", "HAT-2"),
        ("hat-2", "HAT-2", "SHOE-1"),
        ("disable", "HAT-2", "SHOE-1"),
    ] {
        fill(c, "#q", q).await;
        c.form(Locator::Css("form[role='search']"))
            .await
            .unwrap()
            .submit()
            .await
            .unwrap();
        let page = wait_for(c, &format!("value=\"{q}\"")).await;
        let table = &page[page.find("<tbody>").unwrap()..];
        assert!(table.contains(hit), "search {q:?} missed {hit}");
        assert!(!table.contains(miss), "search {q:?} found {miss}");
    }
}

async fn create_a_campaign(c: &Client, base: &str) {
    // Create a campaign with a formula benefit and a quota; a broken
    // formula first, whose error shows beside its input.
    c.goto(&format!("{base}/admin/p/shop/campaigns/new"))
        .await
        .unwrap();
    c.find(Locator::Css("button[value='add-quota']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "name=\"quotas[0].key\"").await;
    fill(c, "#name", "Ten percent off").await;
    fill(c, "#refCode", "TEN").await;
    set(c, "startDate", "2026-01-01T00:00").await;
    set(c, "endDate", "2027-01-01T00:00").await;
    fill(c, "#rules-0-name", "Big carts").await;
    fill(c, "#rules-0-when-0-conditions-0-value", "1000").await;
    fill(c, "#rules-0-then-0-data-0-value", "floor(${totalPrice} * )").await;
    c.find(Locator::Css("#rules-0-then-0-data-0-value-formula"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    fill(c, "#quotas-0-value", "2").await;
    c.find(Locator::Css("button[value='save']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "was not saved").await;
    let error = text_of(c, "#rules-0-then-0-data-0-value-error").await;
    assert!(error.contains('^'), "no caret under the formula: {error}");
    let described = c
        .find(Locator::Css("#rules-0-then-0-data-0-value"))
        .await
        .unwrap()
        .attr("aria-describedby")
        .await
        .unwrap();
    assert_eq!(
        described.as_deref(),
        Some("rules-0-then-0-data-0-value-error")
    );
    shot_at(c, "editor-error", "fieldset.rule h3:nth-of-type(2)").await;
    fill(
        c,
        "#rules-0-then-0-data-0-value",
        "floor(${totalPrice} * 0.1)",
    )
    .await;
    c.find(Locator::Css("button[value='save']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "Campaign Ten percent off (TEN) created.").await;
    shot(c, "editor").await;
}

const TOGGLE: &str = "form[action$='/status'] button";

async fn toggle_and_try(c: &Client, base: &str) {
    // Disable and enable it from the list.
    c.goto(&format!("{base}/admin/p/shop/campaigns?q=TEN"))
        .await
        .unwrap();
    c.find(Locator::Css(TOGGLE))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "(TEN) disabled.").await;
    c.find(Locator::Css(TOGGLE))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "(TEN) enabled.").await;

    // Try a cart: TEN fires with its formula result and quota key; GOLD
    // does not, and says why.
    c.goto(&format!("{base}/admin/p/shop/try")).await.unwrap();
    fill(c, "#total", "1250").await;
    fill(c, "#attr-0-name", "userId").await;
    fill(c, "#attr-0-value", "u9").await;
    fill(c, "#attr-1-name", "tier").await;
    fill(c, "#attr-1-value", "silver").await;
    c.form(Locator::Css("form[action$='/try']"))
        .await
        .unwrap()
        .submit()
        .await
        .unwrap();
    let page = wait_for(c, "Why the others do not fire").await;
    assert!(page.contains("amount = 125"), "no formula result");
    assert!(page.contains("TEN-u9"), "no quota key");
    let why = text_of(c, "table.why-not tbody").await;
    assert!(
        why.contains("GOLD") && why.contains("gold") && why.contains("silver"),
        "{why}"
    );
    shot_at(c, "try", "#result").await;
}

/// TEN was created, disabled and enabled: three revisions. Look at one's
/// changes, restore the disabled one, then the enabled one again.
async fn revisions_and_restore(c: &Client, base: &str, app: &App) {
    let ten = app
        .api
        .campaigns()
        .store()
        .campaign_by_code(P, "TEN")
        .await
        .unwrap()
        .unwrap();
    c.goto(&format!("{base}/admin/p/shop/campaigns/{}", ten.id))
        .await
        .unwrap();
    c.find(Locator::LinkText("Revisions"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let page = wait_for(c, "Revisions: Ten percent off").await;
    assert!(page.contains("current"), "no current mark");
    let rows = c
        .find_all(Locator::Css("table.revisions tbody tr"))
        .await
        .unwrap();
    assert_eq!(rows.len(), 3);
    shot_at(c, "revisions", "table.revisions").await;
    // The newest save's changes: the status, back to ENABLE.
    c.find(Locator::LinkText("Changes"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "from version 2 to version 3").await;
    let diff = text_of(c, "table.diff tbody").await;
    assert!(
        diff.contains("/status") && diff.contains("\"DISABLE\"") && diff.contains("\"ENABLE\""),
        "{diff}"
    );
    c.find(Locator::LinkText("All revisions"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "Revisions: Ten percent off").await;
    c.find(Locator::Css("button[aria-label='Restore version 2']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "Revision 2 of TEN restored as version 4.").await;
    let stored = app.api.campaigns().campaign(P, ten.id).await.unwrap();
    assert_eq!(stored.status.as_str(), "DISABLE");
    c.find(Locator::LinkText("Revisions"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "Revisions: Ten percent off").await;
    c.find(Locator::Css("button[aria-label='Restore version 3']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "Revision 3 of TEN restored as version 5.").await;
    let stored = app.api.campaigns().campaign(P, ten.id).await.unwrap();
    assert_eq!(stored.status.as_str(), "ENABLE");
}

async fn quotas_and_redemptions(c: &Client, base: &str) {
    // Quota usage of SHOE-1 (one redemption of three allowed).
    c.goto(&format!("{base}/admin/p/shop/campaigns?q=SHOE"))
        .await
        .unwrap();
    c.find(Locator::LinkText("Summer shoes"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "Quota usage").await;
    c.find(Locator::LinkText("Quota usage"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    // The campaign code is followed by `-` in the key: its `-` is escaped
    // (docs/quotas.md).
    wait_for(c, "SHOE%2D1-u1").await;
    let bar = c.find(Locator::Css("table.usage progress")).await.unwrap();
    assert_eq!(bar.attr("value").await.unwrap().as_deref(), Some("1"));
    assert_eq!(bar.attr("max").await.unwrap().as_deref(), Some("3"));
    shot(c, "quotas").await;

    // Cancel the redemption, after the confirmation page.
    c.goto(&format!(
        "{base}/admin/p/shop/redemptions?campaignCode=SHOE-1"
    ))
    .await
    .unwrap();
    shot(c, "redemptions").await;
    c.find(Locator::LinkText("Cancel…"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "Cancel this redemption?").await;
    c.find(Locator::Css("button.danger"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "cancelled: its quota usage was given back").await;
}

async fn consent_and_csrf(c: &Client, base: &str) {
    // A subject's history and state at a time.
    c.goto(&format!("{base}/admin/p/shop/subjects"))
        .await
        .unwrap();
    fill(c, "#subject", "u1").await;
    set(c, "at", "2026-06-15T11:00").await;
    c.form(Locator::Css("form[role='search']"))
        .await
        .unwrap()
        .submit()
        .await
        .unwrap();
    let page = wait_for(c, "<h2>History</h2>").await;
    assert!(page.contains("Consent Marketing accepted (revision 1)"));
    assert!(page.contains("Purpose sms withdrawn in web"));
    let at = text_of(c, "section.state-at").await;
    assert!(at.contains("sms"), "sms was granted at 11:00: {at}");
    let now = text_of(c, "section.state-now").await;
    assert!(!now.contains("sms —"), "sms is withdrawn now: {now}");
    shot(c, "subject").await;

    // Erase the subject: asked first, then what was erased and kept.
    c.find(Locator::Css("#erase"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "Erase this data subject?").await;
    c.find(Locator::Css("form button.danger"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let page = wait_for(c, "Data subject erased").await;
    assert!(page.contains("pseudonym:"), "{page}");
    let erased = text_of(c, "#erased").await;
    assert!(
        erased.contains("1 acceptance version(s) and 1 purpose event(s) rewritten"),
        "{erased}"
    );
    let kept = text_of(c, "#kept").await;
    assert!(kept.contains("consentRevision"), "{kept}");
    c.goto(&format!("{base}/admin/p/shop/subjects?subject=u1"))
        .await
        .unwrap();
    wait_for(c, "No consent records for this data subject.").await;

    // A consent with its English and Thai texts side by side.
    c.goto(&format!("{base}/admin/p/shop/content/notices"))
        .await
        .unwrap();
    c.find(Locator::LinkText("Notice"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "วิธีที่เราใช้ข้อมูลของคุณ").await;
    shot(c, "notice").await;

    // A form posted without its CSRF token is refused.
    c.goto(&format!("{base}/admin/p/shop/campaigns"))
        .await
        .unwrap();
    c.execute(
        "document.querySelectorAll(\"form[action$='/status'] input[name='csrf']\").forEach(function (e) { e.remove(); });",
        vec![],
    )
    .await
    .unwrap();
    c.find(Locator::Css(TOGGLE))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "Form refused").await;

    // Readable on a phone.
    c.set_window_size(390, 844).await.unwrap();
    c.goto(&format!("{base}/admin/p/shop/campaigns"))
        .await
        .unwrap();
    wait_for(c, "<h1>Campaigns</h1>").await;
    shot(c, "campaigns-phone").await;
}
