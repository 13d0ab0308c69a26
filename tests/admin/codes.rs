//! A campaign's codes in the console, without a browser: generate from the
//! form, list with usage, deactivate and activate one.

use accord::http::scope;

use crate::support::*;

fn run<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn generate_list_and_deactivate_codes() {
    run(async {
        let app = app();
        let c = app.campaign(simple("Spring", "SPRING")).await;
        let mut client = Client::new(&app);
        client.sign_in(&token(scope::ALL)).await;
        let page_path = format!("/admin/p/shop/campaigns/{}/codes", c.id);
        // The editor links to the codes page.
        let editor = client
            .get(&format!("/admin/p/shop/campaigns/{}", c.id))
            .await;
        assert!(editor.body.contains(&page_path), "no link to the codes");
        let csrf = client.csrf_on(&page_path).await;
        assert!(client
            .get(&page_path)
            .await
            .body
            .contains("This campaign has no codes."));
        let res = client
            .post(
                &format!("{page_path}/generate"),
                &[
                    ("csrf", &csrf),
                    ("count", "30"),
                    ("length", "6"),
                    ("prefix", "SPR-"),
                    ("usageLimit", "2"),
                ],
            )
            .await;
        assert_eq!(res.location(), page_path);
        let page = client.get(&page_path).await;
        assert!(page.body.contains("30 codes generated."), "no confirmation");
        assert_eq!(page.body.matches(">Deactivate</button>").count(), 30);
        // A bad request says why and generates nothing.
        client
            .post(
                &format!("{page_path}/generate"),
                &[("csrf", &csrf), ("count", "5"), ("length", "2")],
            )
            .await;
        let page = client.get(&page_path).await;
        assert!(
            page.body.contains("No codes were generated. length:"),
            "{}",
            page.body
        );
        // Deactivate the first code listed.
        let codes = app.api.campaigns().list_codes(P, c.id, 0, 1).await.unwrap();
        let code = codes.items[0].code.clone();
        let res = client
            .post(
                &format!("{page_path}/{code}/active"),
                &[("csrf", &csrf), ("active", "false")],
            )
            .await;
        assert_eq!(res.location(), page_path);
        let page = client.get(&page_path).await;
        assert!(page.body.contains(&format!("Code {code} deactivated.")));
        assert!(page.body.contains(">Activate</button>"));
        let info = app.api.campaigns().code_info(P, &code).await.unwrap();
        assert!(!info.code.active);
        // Without the CSRF token: refused, nothing changes.
        let res = client
            .post(&format!("{page_path}/{code}/active"), &[("active", "true")])
            .await;
        assert_eq!(res.status.as_u16(), 403);
        assert!(
            !app.api
                .campaigns()
                .code_info(P, &code)
                .await
                .unwrap()
                .code
                .active
        );
    });
}

#[test]
fn the_search_finds_one_code_of_the_campaign() {
    run(async {
        let app = app();
        let c = app.campaign(simple("Spring", "SPRING")).await;
        let other = app.campaign(simple("Other", "OTHER")).await;
        let campaigns = app.api.campaigns();
        campaigns
            .import_codes(P, c.id, "SPR-AB12\nSPR-CD34\n", None, None)
            .await
            .unwrap();
        campaigns
            .import_codes(P, other.id, "OTH-1111\n", None, None)
            .await
            .unwrap();
        let mut client = Client::new(&app);
        client.sign_in(&token(scope::ALL)).await;
        let page_path = format!("/admin/p/shop/campaigns/{}/codes", c.id);
        // Any case, spaces for dashes: the one code.
        let page = client.get(&format!("{page_path}?code=spr+ab12")).await;
        assert_eq!(page.status.as_u16(), 200);
        assert!(page.body.contains(">SPR-AB12</td>"), "{}", page.body);
        assert!(!page.body.contains(">SPR-CD34</td>"));
        // Another campaign's code, an unknown one and one that cannot be a
        // code: nothing, the text shown escaped.
        for q in ["OTH-1111", "NOPE", "%3Cb%3E"] {
            let page = client.get(&format!("{page_path}?code={q}")).await;
            assert_eq!(page.status.as_u16(), 200, "{q}");
            assert!(page.body.contains("This campaign has no code "), "{q}");
            assert!(!page.body.contains("<td class=\"mono\">"), "{q}");
            assert!(!page.body.contains("<b>"), "{q}");
        }
    });
}
