//! The codes page in the browser: generate codes from its form, page
//! through the list, deactivate one and see it marked, and find it with
//! the search box as a customer would type it.

use fantoccini::{Client, Locator};
use serde_json::json;

use super::{fill, text_of, wait_for};
use crate::support::*;

/// Codes generated from the page: more than one page of the list (50).
const GENERATED: usize = 60;

pub(super) async fn generate_list_and_deactivate(c: &Client, base: &str, app: &App) {
    let campaign = app.campaign(simple("Codes in a browser", "CODES-B")).await;
    // From the campaign's editor to its codes page.
    c.goto(&format!("{base}/admin/p/shop/campaigns/{}", campaign.id))
        .await
        .unwrap();
    let editor = wait_for(c, "CODES-B").await;
    let codes_path = format!("/admin/p/shop/campaigns/{}/codes", campaign.id);
    assert!(
        editor.contains(&codes_path),
        "the editor links to the codes"
    );
    c.goto(&format!("{base}{codes_path}")).await.unwrap();
    wait_for(c, "This campaign has no codes.").await;

    // Generate from the form.
    fill(c, "#count", &GENERATED.to_string()).await;
    fill(c, "#length", "6").await;
    fill(c, "#prefix", "BRW-").await;
    fill(c, "#usageLimit", "2").await;
    c.form(Locator::Css("form[action$='/generate']"))
        .await
        .unwrap()
        .submit()
        .await
        .unwrap();
    let page = wait_for(c, &format!("{GENERATED} codes generated.")).await;
    let rows = c
        .find_all(Locator::Css("table.codes tbody tr"))
        .await
        .unwrap();
    assert_eq!(rows.len(), 50, "the first page lists 50 codes");
    assert!(page.contains("BRW-"), "the codes keep their prefix");

    // The list is in normalized order, and the next page has the rest.
    let first_page = codes_listed(c).await;
    let mut sorted = first_page.clone();
    sorted.sort();
    assert_eq!(first_page, sorted);
    c.find(Locator::Css("a[rel='next']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(c, "rel=\"prev\"").await;
    let second_page = codes_listed(c).await;
    assert_eq!(second_page.len(), GENERATED - 50);
    assert!(first_page.last() < second_page.first());
    let stored = app
        .api
        .campaigns()
        .list_codes(P, campaign.id, 0, 100)
        .await
        .unwrap();
    let all: Vec<String> = stored.items.iter().map(|c| c.code.clone()).collect();
    assert_eq!(all, [first_page.clone(), second_page].concat());

    // Deactivate the second code of the first page.
    c.goto(&format!("{base}{codes_path}")).await.unwrap();
    wait_for(c, "table class=\"codes\"").await;
    let target = first_page[1].clone();
    let row = c
        .find(Locator::XPath(&format!(
            "//table[@class='codes']//tr[td[1][normalize-space()='{target}']]"
        )))
        .await
        .unwrap();
    row.find(Locator::Css("button.danger"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let page = wait_for(c, &format!("Code {target} deactivated.")).await;
    assert_eq!(page.matches("deactivated</span>").count(), 1, "one marked");
    let row = c
        .find(Locator::XPath(&format!(
            "//table[@class='codes']//tr[td[1][normalize-space()='{target}']]"
        )))
        .await
        .unwrap();
    let text = row.text().await.unwrap();
    assert!(text.contains("deactivated"), "{text}");
    assert!(text.contains("Activate"), "{text}");
    find_with_the_search_box(c, &target).await;
    // The store agrees, and a redeem with the code (any case) is refused.
    let info = app
        .api
        .campaigns()
        .code_info(P, &target.to_lowercase())
        .await
        .unwrap();
    assert!(!info.code.active);
    let redeem = serde_json::from_value(json!({"code": target.to_lowercase()})).unwrap();
    let err = app.api.campaigns().redeem(P, &redeem).await.unwrap_err();
    assert_eq!(err.code(), "code_inactive");
}

/// The search box finds the deactivated code `target` typed as a customer
/// would, and nothing for a code the campaign lacks.
async fn find_with_the_search_box(c: &Client, target: &str) {
    // Find it by the search box, typed as a customer would: one row, shown
    // deactivated.
    let typed = target.to_lowercase().replace('-', " ");
    fill(c, "#code-search", &typed).await;
    c.form(Locator::Css("form[role='search']"))
        .await
        .unwrap()
        .submit()
        .await
        .unwrap();
    wait_for(c, "All codes</a>").await;
    assert_eq!(codes_listed(c).await, [target]);
    let row = text_of(c, "table.codes tbody tr").await;
    assert!(row.contains("deactivated"), "{row}");
    // A code of no campaign, or of another, finds nothing.
    fill(c, "#code-search", "NOT-A-CODE").await;
    c.form(Locator::Css("form[role='search']"))
        .await
        .unwrap()
        .submit()
        .await
        .unwrap();
    wait_for(c, "This campaign has no code NOT-A-CODE.").await;
}

/// The codes of the list on the page, in its order.
async fn codes_listed(c: &Client) -> Vec<String> {
    let mut codes = Vec::new();
    for cell in c
        .find_all(Locator::Css("table.codes tbody td.mono"))
        .await
        .unwrap()
    {
        codes.push(cell.text().await.unwrap().trim().to_owned());
    }
    codes
}
