//! The campaign pages, without a browser: list, search, escaping, the
//! editor's errors and stale saves, enable/disable, try it here.

use accord::http::scope;
use accord::store::CampaignQuery;
use axum::http::StatusCode;
use serde_json::json;

use crate::support::*;

fn run<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

async fn signed_in(app: &App, scopes: &[&str]) -> Client {
    let mut c = Client::new(app);
    c.sign_in(&token(scopes)).await;
    c
}

const LIST: &str = "/admin/p/shop/campaigns";

#[test]
fn user_content_is_escaped() {
    run(async {
        let app = app();
        let mut body = simple("<script>alert(1)</script>", "XSS");
        body["groupName"] = json!("\"><img src=x onerror=alert(2)>");
        let c = app.campaign(body).await;
        let mut client = signed_in(&app, scope::ALL).await;
        for path in [LIST.to_owned(), format!("{LIST}/{}", c.id)] {
            let page = client.get(&path).await;
            assert_eq!(page.status, StatusCode::OK, "{path}");
            assert!(
                !page.body.contains("<script>alert(1)</script>"),
                "{path}: raw script"
            );
            assert!(
                !page.body.contains("<img src=x"),
                "{path}: raw attribute break-out"
            );
            assert!(
                page.body
                    .contains("&#60;script&#62;alert(1)&#60;/script&#62;")
                    || page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
                "{path}: the name is not shown as text"
            );
        }
    });
}

#[test]
fn the_search_box_matches_each_field_in_the_store() {
    run(async {
        let app = app();
        let mut a = simple("Summer shoes", "SHOE-1");
        a["groupName"] = json!("Footwear");
        app.campaign(a).await;
        let mut b = simple("Winter hats", "HAT-2");
        b["status"] = json!("DISABLE");
        app.campaign(b).await;
        let mut client = signed_in(&app, scope::ALL).await;
        for (q, hit, miss) in [
            ("summer", "SHOE-1", "HAT-2"), // name
            ("footw", "SHOE-1", "HAT-2"),  // groupName
            ("hat-", "HAT-2", "SHOE-1"),   // refCode
            ("disab", "HAT-2", "SHOE-1"),  // status
        ] {
            let page = client.get(&format!("{LIST}?q={q}")).await;
            assert!(page.body.contains(hit), "q={q} missed {hit}");
            assert!(!page.body.contains(miss), "q={q} found {miss}");
        }
        let page = client
            .get(&format!("{LIST}?status=ENABLE&period=current"))
            .await;
        assert!(page.body.contains("SHOE-1") && !page.body.contains("HAT-2"));
        assert!(page.body.contains("Showing 1–1 of 1"));
        let bad = client.get(&format!("{LIST}?period=someday")).await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    });
}

#[test]
fn scopes_apply_as_in_the_api() {
    run(async {
        let app = app();
        app.campaign(simple("A", "A1")).await;
        // campaign.r reads redemptions in the API, not campaigns.
        let mut reader = signed_in(&app, &[scope::CAMPAIGN_READ]).await;
        assert_eq!(reader.get(LIST).await.status, StatusCode::FORBIDDEN);
        let page = reader.get("/admin/p/shop/").await;
        assert_eq!(page.location(), "/admin/p/shop/redemptions");
        // A POST without the scope is refused even with a valid CSRF token.
        let csrf = reader.csrf_on("/admin/p/shop/redemptions").await;
        let res = reader
            .post(&format!("{LIST}/new"), &[("csrf", &csrf), ("name", "x")])
            .await;
        assert_eq!(res.status, StatusCode::FORBIDDEN);
    });
}

#[test]
fn a_post_without_the_csrf_token_is_refused() {
    run(async {
        let app = app();
        let c = app.campaign(simple("A", "A1")).await;
        let mut client = signed_in(&app, scope::ALL).await;
        let res = client
            .post(&format!("{LIST}/{}/status", c.id), &[("status", "DISABLE")])
            .await;
        assert_eq!(res.status, StatusCode::FORBIDDEN);
        let stored = app.api.campaigns().campaign(P, c.id).await.unwrap();
        assert_eq!(
            stored.status.as_str(),
            "ENABLE",
            "changed without a CSRF token"
        );
    });
}

#[test]
fn enable_and_disable_from_the_list() {
    run(async {
        let app = app();
        let c = app.campaign(simple("A", "A1")).await;
        let mut client = signed_in(&app, scope::ALL).await;
        let csrf = client.csrf_on(LIST).await;
        let path = format!("{LIST}/{}/status", c.id);
        let res = client
            .post(
                &path,
                &[
                    ("csrf", &csrf),
                    ("status", "DISABLE"),
                    ("version", "1"),
                    ("back", LIST),
                ],
            )
            .await;
        assert_eq!(res.location(), LIST);
        let page = client.get(LIST).await;
        assert!(
            page.body.contains("Campaign A (A1) disabled."),
            "no confirmation"
        );
        assert!(page.body.contains("badge off"));
        // A stale version changes nothing and says so.
        let res = client
            .post(
                &path,
                &[("csrf", &csrf), ("status", "ENABLE"), ("version", "1")],
            )
            .await;
        assert_eq!(res.status, StatusCode::SEE_OTHER);
        let page = client.get(LIST).await;
        assert!(page.body.contains("changed by someone else"));
        let stored = app.api.campaigns().campaign(P, c.id).await.unwrap();
        assert_eq!(stored.status.as_str(), "DISABLE");
    });
}

fn editor_form<'a>(csrf: &'a str, code: &'a str, formula: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("csrf", csrf),
        ("op", "save"),
        ("name", "Ten percent"),
        ("refCode", code),
        ("status", "ENABLE"),
        ("priority", "1"),
        ("startDate", "2026-01-01T00:00"),
        ("endDate", "2027-01-01T00:00"),
        ("rules[0].name", "big carts"),
        ("rules[0].thenOperator", "AND"),
        ("rules[0].when[0].match", "ALL"),
        ("rules[0].when[0].conditions[0].type", "cart"),
        ("rules[0].when[0].conditions[0].attribute", "totalPrice"),
        ("rules[0].when[0].conditions[0].op", "gte"),
        ("rules[0].when[0].conditions[0].value", "1000"),
        ("rules[0].when[0].conditions[0].valueType", "NUMBER"),
        ("rules[0].then[0].action", "CART_DISCOUNT"),
        ("rules[0].then[0].data[0].attribute", "amount"),
        ("rules[0].then[0].data[0].value", formula),
        ("rules[0].then[0].data[0].isFormula", "on"),
        ("quotas[0].key", "${campaignCode}-${userId}"),
        ("quotas[0].value", "1"),
    ]
}

#[test]
fn the_editor_shows_each_error_beside_its_field_and_keeps_what_was_typed() {
    run(async {
        let app = app();
        let mut client = signed_in(&app, scope::ALL).await;
        let csrf = client.csrf_on(&format!("{LIST}/new")).await;
        let mut form = editor_form(&csrf, "TEN", "floor(${totalPrice} * )");
        form.push(("rules[0].when[0].conditions[1].type", "custom"));
        form.push(("rules[0].when[0].conditions[1].attribute", "promo"));
        form.push(("rules[0].when[0].conditions[1].op", "matches"));
        form.push(("rules[0].when[0].conditions[1].value", "(unclosed"));
        form.push(("rules[0].when[0].conditions[1].valueType", "STRING"));
        let res = client.post(&format!("{LIST}/new"), &form).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.body);
        // The formula's caret message is right after its input.
        let input = "id=\"rules-0-then-0-data-0-value\"";
        let at = res.body.find(input).expect("the formula input");
        let error = res.body[at..]
            .find("id=\"rules-0-then-0-data-0-value-error\"")
            .expect("its error");
        assert!(error < 400, "the error is not beside its input");
        assert!(res.body[at..].contains('^'), "no caret");
        assert!(
            res.body
                .contains("id=\"rules-0-when-0-conditions-1-value-error\""),
            "regex error not placed"
        );
        // What was typed is still there.
        assert!(res.body.contains("value=\"floor(${totalPrice} * )\""));
        assert!(res.body.contains("value=\"(unclosed\""));
        assert_eq!(
            app.api
                .campaigns()
                .list_campaigns(P, &CampaignQuery::default())
                .await
                .unwrap()
                .total,
            0
        );
        // A bad number is a field error too, with the validator's others.
        let mut form = editor_form(&csrf, "", "1");
        form.retain(|(k, _)| *k != "quotas[0].value");
        form.push(("quotas[0].value", "lots"));
        let res = client.post(&format!("{LIST}/new"), &form).await;
        assert!(res.body.contains("id=\"quotas-0-value-error\""));
        assert!(
            res.body.contains("id=\"refCode-error\""),
            "the validator's errors were lost"
        );
    });
}

#[test]
fn create_then_a_stale_edit_keeps_the_typing_and_offers_both_ways() {
    run(async {
        let app = app();
        let mut client = signed_in(&app, scope::ALL).await;
        let csrf = client.csrf_on(&format!("{LIST}/new")).await;
        let res = client
            .post(
                &format!("{LIST}/new"),
                &editor_form(&csrf, "TEN", "floor(${totalPrice} * 0.1)"),
            )
            .await;
        assert_eq!(res.status, StatusCode::SEE_OTHER, "{}", res.body);
        let edit = res.location().to_owned();
        let page = client.get(&edit).await;
        assert!(page.body.contains("Campaign Ten percent (TEN) created."));
        let stored = app
            .api
            .campaigns()
            .list_campaigns(P, &CampaignQuery::default())
            .await
            .unwrap()
            .items
            .remove(0);
        assert!(stored.rules[0].then[0].data[0].is_formula);
        assert_eq!(stored.quotas[0].key, "${campaignCode}-${userId}");
        // Someone else saves meanwhile.
        let mut other: accord::campaign::CampaignInput =
            serde_json::from_value(serde_json::to_value(&stored).unwrap()).unwrap();
        other.name = "Changed elsewhere".into();
        app.api
            .campaigns()
            .update_campaign(P, stored.id, other, "bob")
            .await
            .unwrap();
        let mut form = editor_form(&csrf, "TEN", "floor(${totalPrice} * 0.2)");
        form.push(("version", "1"));
        let res = client.post(&edit, &form).await;
        assert_eq!(res.status, StatusCode::CONFLICT);
        assert!(res.body.contains("changed by someone else"));
        assert!(
            res.body.contains("value=\"floor(${totalPrice} * 0.2)\""),
            "the typing was lost"
        );
        assert!(res.body.contains("value=\"save-over:2\""));
        form.push(("op", "save-over:2"));
        form.retain(|(k, v)| !(*k == "op" && *v == "save"));
        let res = client.post(&edit, &form).await;
        assert_eq!(res.status, StatusCode::SEE_OTHER, "{}", res.body);
        let now = app.api.campaigns().campaign(P, stored.id).await.unwrap();
        assert_eq!(now.version, 3);
        assert_eq!(
            now.rules[0].then[0].data[0].value,
            "floor(${totalPrice} * 0.2)"
        );
    });
}

#[test]
fn structural_buttons_add_rows_without_saving() {
    run(async {
        let app = app();
        let mut client = signed_in(&app, scope::ALL).await;
        let csrf = client.csrf_on(&format!("{LIST}/new")).await;
        let mut form = editor_form(&csrf, "TEN", "1");
        form.retain(|(k, _)| *k != "op");
        form.push(("op", "add-condition:0:0"));
        let res = client.post(&format!("{LIST}/new"), &form).await;
        assert_eq!(res.status, StatusCode::OK);
        assert!(res
            .body
            .contains("name=\"rules[0].when[0].conditions[1].op\""));
        assert_eq!(
            app.api
                .campaigns()
                .list_campaigns(P, &CampaignQuery::default())
                .await
                .unwrap()
                .total,
            0
        );
    });
}

#[test]
fn duplicate_and_delete_with_confirmation() {
    run(async {
        let app = app();
        let c = app.campaign(simple("Original", "ORIG")).await;
        let mut client = signed_in(&app, scope::ALL).await;
        let dup = client.get(&format!("{LIST}/{}/duplicate", c.id)).await;
        assert!(dup.body.contains("value=\"ORIG-COPY\""));
        assert!(dup.body.contains(&format!("action=\"{LIST}/new\"")));
        let confirm = client.get(&format!("{LIST}/{}/delete", c.id)).await;
        assert!(confirm.body.contains("Delete campaign ORIG?"));
        assert!(
            app.api.campaigns().campaign(P, c.id).await.is_ok(),
            "asking deleted it"
        );
        let res = client
            .post(
                &format!("{LIST}/{}/delete", c.id),
                &[("csrf", &confirm.csrf())],
            )
            .await;
        assert_eq!(res.location(), LIST);
        assert!(app.api.campaigns().campaign(P, c.id).await.is_err());
    });
}

#[test]
fn try_it_shows_benefits_quota_keys_and_why_not() {
    run(async {
        let app = app();
        app.campaign(json!({
            "name": "Big carts", "refCode": "BIG",
            "startDate": "2026-01-01T00:00:00Z", "endDate": "2027-01-01T00:00:00Z",
            "quotas": [{"key": "${campaignCode}-${userId}", "value": 2}],
            "rules": [{"name": "r", "when": [{"match": "ALL", "conditions": [
                {"type": "cart", "attribute": "totalPrice", "op": "gte", "value": "1000", "valueType": "NUMBER"}]}],
                "thenOperator": "AND",
                "then": [{"action": "CART_DISCOUNT", "data": [{"attribute": "amount", "value": "floor(${totalPrice} * 0.1)", "isFormula": true}]}]}]
        })).await;
        app.campaign(json!({
            "name": "VIP", "refCode": "VIP",
            "startDate": "2026-01-01T00:00:00Z", "endDate": "2027-01-01T00:00:00Z",
            "rules": [{"name": "vip", "when": [{"match": "ALL", "conditions": [
                {"type": "custom", "attribute": "tier", "op": "eq", "value": "gold", "valueType": "STRING"}]}],
                "thenOperator": "AND", "then": [{"action": "DISCOUNT", "data": []}]}]
        })).await;
        let mut client = signed_in(&app, scope::ALL).await;
        let csrf = client.csrf_on("/admin/p/shop/try").await;
        let res = client
            .post(
                "/admin/p/shop/try",
                &[
                    ("csrf", &csrf),
                    ("total", "1250"),
                    ("attr[0].name", "userId"),
                    ("attr[0].value", "u1"),
                    ("attr[1].name", "tier"),
                    ("attr[1].value", "silver"),
                    ("at", "2026-06-15T10:00"),
                ],
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.body);
        assert!(res.body.contains("amount = 125"), "formula result missing");
        assert!(
            res.body.contains("BIG-u1"),
            "the quota key a redeem would charge"
        );
        assert!(res.body.contains("condition_failed"), "no why-not");
        assert!(
            res.body.contains("gold") && res.body.contains("silver"),
            "expected vs actual"
        );
        // Raw JSON works too, and a bad one says why.
        let res = client
            .post(
                "/admin/p/shop/try",
                &[("csrf", &csrf), ("raw", "{\"cart\": ")],
            )
            .await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(res.body.contains("not valid"));
    });
}

#[test]
fn quota_usage_shows_keys_other_campaigns_filled_page_by_page() {
    run(async {
        let app = app();
        let mut body = simple("Per user", "D");
        body["quotas"] = json!([{"key": "${campaignCode}-${userId}", "value": 2}]);
        let d = app.campaign(body).await;
        let mut body = simple("Shares D's keys", "OTHER");
        body["quotas"] = json!([{"key": "D-${userId}", "value": 5}]);
        app.campaign(body).await;
        for i in 0..25 {
            let redeem: accord::campaign::RedeemRequest = serde_json::from_value(
                json!({"campaignCode": "OTHER", "attribute": {"userId": format!("u{i:02}")}}),
            )
            .unwrap();
            app.api.campaigns().redeem(P, &redeem).await.unwrap();
        }
        let mut client = signed_in(&app, scope::ALL).await;
        let url = format!("{LIST}/{}/quotas", d.id);
        let first = client.get(&url).await;
        assert!(first.body.contains("Showing 20 keys"), "{}", first.body);
        assert!(first.body.contains("<td class=\"mono\">D-u00</td>"));
        assert!(first.body.contains("<td class=\"mono\">D-u19</td>"));
        assert!(!first.body.contains("D-u20"));
        let next = format!("{url}?after=D-u19");
        assert!(
            first
                .body
                .contains(&format!("href=\"{next}\" rel=\"next\"")),
            "{}",
            first.body
        );
        let second = client.get(&next).await;
        assert!(second.body.contains("Showing 5 keys"), "{}", second.body);
        assert!(second.body.contains("D-u20") && second.body.contains("D-u24"));
        // D-u19 is only in the form's "start after key" now.
        assert!(!second.body.contains("<td class=\"mono\">D-u19</td>"));
        assert!(second.body.contains("value=\"D-u19\""));
        assert!(!second.body.contains("rel=\"next\""));
        assert!(second
            .body
            .contains(&format!("href=\"{url}\" rel=\"first\"")));
        assert!(second.body.contains("<progress value=\"1\" max=\"2\""));
    });
}

#[test]
fn quota_usage_and_cancelling_a_redemption_once() {
    run(async {
        let app = app();
        let mut body = simple("Once", "ONCE");
        body["quotas"] = json!([{"key": "${campaignCode}-${userId}", "value": 2}]);
        let c = app.campaign(body).await;
        let redeem: accord::campaign::RedeemRequest =
            serde_json::from_value(json!({"campaignCode": "ONCE", "attribute": {"userId": "u1"}}))
                .unwrap();
        let r = app
            .api
            .campaigns()
            .redeem(P, &redeem)
            .await
            .unwrap()
            .redemption;
        let mut client = signed_in(&app, scope::ALL).await;
        let quotas = client.get(&format!("{LIST}/{}/quotas", c.id)).await;
        assert!(quotas.body.contains("ONCE-u1"));
        assert!(
            quotas.body.contains("<progress value=\"1\" max=\"2\""),
            "{}",
            quotas.body
        );
        let list = client.get("/admin/p/shop/redemptions?userId=u1").await;
        assert!(list.body.contains("Showing 1–1 of 1"));
        let confirm = client
            .get(&format!("/admin/p/shop/redemptions/{}/cancel", r.id))
            .await;
        assert!(confirm.body.contains("Cancel this redemption?"));
        let cancel = format!("/admin/p/shop/redemptions/{}/cancel", r.id);
        let res = client.post(&cancel, &[("csrf", &confirm.csrf())]).await;
        assert_eq!(res.status, StatusCode::SEE_OTHER);
        let page = client.get(res.location()).await;
        assert!(page
            .body
            .contains("cancelled: its quota usage was given back"));
        // Again: repeat-safe, and says so.
        client.post(&cancel, &[("csrf", &confirm.csrf())]).await;
        let page = client.get("/admin/p/shop/redemptions").await;
        assert!(page.body.contains("already cancelled"));
        let quotas = client.get(&format!("{LIST}/{}/quotas", c.id)).await;
        assert!(quotas.body.contains("<progress value=\"0\" max=\"2\""));
        // A read-only token sees no cancel control, and cannot post one.
        let mut reader = signed_in(&app, &[scope::CAMPAIGN_READ]).await;
        let list = reader.get("/admin/p/shop/redemptions").await;
        assert!(!list.body.contains("Cancel…"));
        let csrf = reader.csrf_on("/admin/p/shop/redemptions").await;
        assert_eq!(
            reader.post(&cancel, &[("csrf", &csrf)]).await.status,
            StatusCode::FORBIDDEN
        );
    });
}

#[test]
fn saving_the_editor_unchanged_changes_nothing_but_the_version() {
    run(async {
        let app = app();
        let c = app
            .campaign(json!({
                "name": "Every <field> & \"quote\"", "refCode": "FULL", "description": "a description",
                "imageUrl": "https://img.example/x.png", "channel": "web", "groupName": "Group A",
                "status": "DISABLE", "priority": 3,
                "startDate": "2026-01-01T00:00:30Z", "endDate": "2027-01-01T00:00:00Z",
                "quotas": [{"id": "q1", "key": "${campaignCode}-${userId}", "value": 2.5, "valueField": "points", "description": "per user"}],
                "rules": [
                    {"id": "r1", "name": "first", "description": "d", "validFrom": "2026-02-01T00:00:00Z", "validTo": "2026-12-01T00:00:00Z",
                     "when": [{"match": "ANY", "conditions": [
                        {"type": "custom", "attribute": "tier", "op": "in", "value": "(\"gold\",\"silver\")", "valueType": "STRING", "note": "n", "resolveAction": true},
                        {"type": "cartItem", "attribute": "price", "op": "gte", "value": "10.50", "valueType": "NUMBER"}]}],
                     "thenOperator": "OR",
                     "then": [
                        {"action": "DISCOUNT", "internalAction": true, "actionRef": "a1",
                         "data": [{"attribute": "amount", "value": "round(${price} * 0.1, 2)", "isFormula": true, "type": "custom", "op": "x", "valueType": "STRING", "note": "m", "resolveAction": true}]},
                        {"action": "FREE_GIFT", "actionRef": "a2", "data": [{"attribute": "sku", "value": "GIFT-${sku}"}]}]},
                    {"id": "r2", "name": "second", "when": [], "thenOperator": "AND",
                     "then": [{"action": null, "actionRef": "a3", "data": []}]}
                ]
            }))
            .await;
        let mut client = signed_in(&app, scope::ALL).await;
        let page = client.get(&format!("{LIST}/{}", c.id)).await;
        let fields = submitted(&page.body, "id=\"campaign-form\"");
        let pairs: Vec<(&str, &str)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let res = client.post(&format!("{LIST}/{}", c.id), &pairs).await;
        assert_eq!(res.status, StatusCode::SEE_OTHER, "{}", res.body);
        let after = app.api.campaigns().campaign(P, c.id).await.unwrap();
        assert_eq!(after.version, c.version + 1);
        let strip = |c: &accord::campaign::Campaign| {
            let mut v = serde_json::to_value(c).unwrap();
            for k in ["version", "lastModifiedDate", "lastModifiedBy"] {
                v.as_object_mut().unwrap().remove(k);
            }
            v
        };
        assert_eq!(strip(&after), strip(&c), "the editor changed the campaign");
    });
}

#[test]
fn revisions_list_diff_restore_and_a_status_schedule() {
    run(async {
        let app = app();
        let mut client = signed_in(&app, scope::ALL).await;
        let csrf = client.csrf_on(&format!("{LIST}/new")).await;
        // A schedule typed in the editor, in the session's offset (UTC).
        let mut form = editor_form(&csrf, "SCHED", "1");
        form.push((
            "statusSchedule",
            "2026-07-01 00:00 DISABLE\n\n2026-06-20T12:00 ENABLE",
        ));
        let res = client.post(&format!("{LIST}/new"), &form).await;
        assert_eq!(res.status, StatusCode::SEE_OTHER, "{}", res.body);
        let c = app
            .api
            .campaigns()
            .list_campaigns(P, &CampaignQuery::default())
            .await
            .unwrap()
            .items
            .remove(0);
        let at: Vec<String> = c
            .status_schedule
            .iter()
            .map(|s| format!("{} {}", s.at.to_rfc3339(), s.status))
            .collect();
        assert_eq!(
            at,
            [
                "2026-06-20T12:00:00+00:00 ENABLE",
                "2026-07-01T00:00:00+00:00 DISABLE"
            ]
        );
        let edit = format!("{LIST}/{}", c.id);
        let page = client.get(&edit).await;
        assert!(
            page.body
                .contains("2026-06-20T12:00 ENABLE\n2026-07-01T00:00 DISABLE"),
            "the schedule is not shown in the editor"
        );
        // A line that is not a change is an error at the field.
        let mut bad = editor_form(&csrf, "SCHED", "1");
        bad.push(("version", "1"));
        bad.push(("statusSchedule", "tomorrow PAUSE"));
        let res = client.post(&edit, &bad).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(res.body.contains("id=\"statusSchedule-error\""));

        // Disable it from the list: version 2.
        let res = client
            .post(
                &format!("{edit}/status"),
                &[("csrf", &csrf), ("status", "DISABLE"), ("version", "1")],
            )
            .await;
        assert_eq!(res.status, StatusCode::SEE_OTHER);
        let revisions = format!("{edit}/revisions");
        let page = client.get(&revisions).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.body.contains("/status"), "{}", page.body);
        assert!(page.body.contains("Created"));
        assert!(page.body.contains(&format!("{revisions}/1/restore")));
        assert!(!page.body.contains(&format!("{revisions}/2/restore")));
        let diff = client
            .get(&format!("{revisions}/diff?from=1&amp;to=2").replace("&amp;", "&"))
            .await;
        assert_eq!(diff.status, StatusCode::OK);
        assert!(diff.body.contains("/status"));
        assert!(
            diff.body.contains("&#34;DISABLE&#34;") || diff.body.contains("&quot;DISABLE&quot;")
        );

        // Restore over a stale version: refused, says so.
        let res = client
            .post(
                &format!("{revisions}/1/restore"),
                &[("csrf", &csrf), ("version", "1")],
            )
            .await;
        assert_eq!(res.location(), revisions);
        let page = client.get(&revisions).await;
        assert!(page.body.contains("was not restored"), "{}", page.body);
        // Restore over the current one: version 3, enabled again.
        let res = client
            .post(
                &format!("{revisions}/1/restore"),
                &[("csrf", &csrf), ("version", "2")],
            )
            .await;
        assert_eq!(res.location(), edit);
        let page = client.get(&edit).await;
        assert!(page
            .body
            .contains("Revision 1 of SCHED restored as version 3."));
        let stored = app.api.campaigns().campaign(P, c.id).await.unwrap();
        assert_eq!((stored.version, stored.status.as_str()), (3, "ENABLE"));
        assert_eq!(stored.last_modified_by, "alice");
    });
}
