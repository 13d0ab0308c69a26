//! Code pools on every store: generate, import, export, list, deactivate,
//! redeem by code (case, spaces and dashes aside), cancel giving the use
//! back, and a code's usage limit under concurrent redeems.

use std::collections::HashSet;
use std::sync::Arc;

use accord::campaign::codes::{normalize, GenerateCodes};
use accord::campaign::{CampaignInput, RedeemRequest};
use accord::store::Store;
use accord::{CampaignService, ErrorKind, SystemClock};
use serde_json::{json, Value};
use uuid::Uuid;

/// Runs each behaviour of this module as a test, on `$fixture`'s store.
macro_rules! code_pool_tests {
    ($fixture:path) => {
        $crate::suite::code_pools::code_pool_tests!(@each $fixture;
            generated_codes_are_unique_and_listed,
            imported_codes_refuse_duplicates_whole,
            redeem_by_code_takes_a_use_and_cancel_gives_it_back,
            deactivated_and_foreign_codes_are_refused,
            concurrent_redeems_never_pass_a_code_limit,
        );
    };
    (@each $fixture:path; $($behaviour:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread")]
            async fn $behaviour() {
                let Some((store, _guard)) = $fixture().await else {
                    return;
                };
                $crate::suite::code_pools::$behaviour(store).await;
            }
        )+
    };
}

pub(crate) use code_pool_tests;

type Service<S> = CampaignService<S>;

/// A running campaign `ref_code` that gives 10 off anyone.
async fn campaign<S: Store>(service: &Service<S>, project: &str, ref_code: &str) -> Uuid {
    let input: CampaignInput = serde_json::from_value(json!({
        "name": ref_code, "refCode": ref_code,
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "rules": [{"name": "all", "when": [], "thenOperator": "AND",
            "then": [{"action": "DISCOUNT", "data": [{"attribute": "amount", "value": "10"}]}]}]
    }))
    .unwrap();
    service
        .create_campaign(project, input, "admin")
        .await
        .unwrap()
        .id
}

fn generate(v: Value) -> GenerateCodes {
    serde_json::from_value(v).unwrap()
}

fn redeem(v: Value) -> RedeemRequest {
    serde_json::from_value(v).unwrap()
}

async fn export<S: Store>(service: &Service<S>, project: &str, id: Uuid) -> String {
    let mut out = String::new();
    service
        .export_codes(project, id, |chunk| {
            out.push_str(&chunk);
            Ok(())
        })
        .await
        .unwrap();
    out
}

pub async fn generated_codes_are_unique_and_listed<S: Store>(store: Arc<S>) {
    let project = Uuid::new_v4().to_string();
    let service = Service::new(Arc::clone(&store), Arc::new(SystemClock));
    let id = campaign(&service, &project, "GEN").await;
    let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
    let progress = {
        let heard = Arc::clone(&heard);
        Arc::new(move |n: u64| heard.lock().unwrap().push(n)) as Arc<dyn Fn(u64) + Send + Sync>
    };
    let n = service
        .generate_codes(
            &project,
            id,
            &generate(json!({"count": 2500, "length": 6, "prefix": "SUM-", "usageLimit": 2})),
            u64::MAX,
            Some(progress),
        )
        .await
        .unwrap();
    assert_eq!(n, 2500);
    assert_eq!(heard.lock().unwrap().last(), Some(&2500));
    // Again, into the same project: none collides with the first ones.
    service
        .generate_codes(
            &project,
            id,
            &generate(json!({"count": 500, "length": 6, "prefix": "SUM-"})),
            u64::MAX,
            None,
        )
        .await
        .unwrap();
    let page = service.list_codes(&project, id, 0, 1000).await.unwrap();
    assert_eq!(page.total, 3000);
    assert_eq!(page.items.len(), 1000);
    let mut sorted = page.items.clone();
    sorted.sort_by_key(accord::campaign::codes::PromoCode::normalized);
    assert_eq!(page.items, sorted, "codes list in normalized order");
    assert!(page
        .items
        .iter()
        .all(|c| c.code.starts_with("SUM-") && c.code.len() == 10));
    assert!(page.items.iter().all(|c| c.used == 0 && c.active));
    let csv = export(&service, &project, id).await;
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "code,usageLimit,used,active,createdDate");
    assert_eq!(lines.len(), 3001);
    let codes: HashSet<&str> = lines[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(codes.len(), 3000, "every code once");
    assert_eq!(
        lines[1..]
            .iter()
            .filter(|l| l.contains(",2,0,true,"))
            .count(),
        2500
    );
    // A campaign that does not exist.
    let err = service
        .generate_codes(
            &project,
            Uuid::new_v4(),
            &generate(json!({"count": 1})),
            u64::MAX,
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "campaign_not_found");
    // Over the caller's bound.
    let err = service
        .generate_codes(&project, id, &generate(json!({"count": 11})), 10, None)
        .await
        .unwrap_err();
    assert_eq!(err.fields()[0].field, "count");
}

pub async fn imported_codes_refuse_duplicates_whole<S: Store>(store: Arc<S>) {
    let project = Uuid::new_v4().to_string();
    let service = Service::new(Arc::clone(&store), Arc::new(SystemClock));
    let a = campaign(&service, &project, "A").await;
    let b = campaign(&service, &project, "B").await;
    let n = service
        .import_codes(
            &project,
            a,
            "code,usageLimit\nWELCOME-1\nwelcome-2,3\n",
            None,
            None,
        )
        .await
        .unwrap();
    assert_eq!(n, 2);
    // A code of the project (another campaign, other case and dashes):
    // nothing of the file is stored.
    let err = service
        .import_codes(&project, b, "FRESH1\nWelcome1\n", Some(5), None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "duplicate_code");
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.fields()[0].message.contains("WELCOME-1"), "{err:?}");
    assert_eq!(
        service.list_codes(&project, b, 0, 10).await.unwrap().total,
        0
    );
    let err = service
        .import_codes(&project, b, "ok\nbad code!\n", None, None)
        .await
        .unwrap_err();
    assert_eq!(err.fields()[0].field, "line 2");
    // Export, then import into a fresh project: the same codes and limits.
    let csv = export(&service, &project, a).await;
    let other = Uuid::new_v4().to_string();
    let c = campaign(&service, &other, "C").await;
    service
        .import_codes(&other, c, &csv, None, None)
        .await
        .unwrap();
    let listed: Vec<(String, i64)> = service
        .list_codes(&other, c, 0, 10)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|c| (c.code, c.usage_limit))
        .collect();
    assert_eq!(
        listed,
        [("WELCOME-1".to_owned(), 1), ("welcome-2".to_owned(), 3)]
    );
}

pub async fn redeem_by_code_takes_a_use_and_cancel_gives_it_back<S: Store>(store: Arc<S>) {
    let project = Uuid::new_v4().to_string();
    let service = Service::new(Arc::clone(&store), Arc::new(SystemClock));
    let id = campaign(&service, &project, "SPRING").await;
    campaign(&service, &project, "PLAIN").await;
    service
        .import_codes(&project, id, "SPRING-AB12\n", Some(2), None)
        .await
        .unwrap();
    // The campaign has a pool: a redeem without a code is refused.
    let err = service
        .redeem(&project, &redeem(json!({"campaignCode": "SPRING"})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "code_required");
    // Lower case, spaces, no dash, and no campaignCode: the code names it.
    let first = service
        .redeem(
            &project,
            &redeem(json!({"code": " spring ab12 ", "idempotencyKey": "k1"})),
        )
        .await
        .unwrap();
    assert_eq!(first.redemption.campaign_code, "SPRING");
    assert_eq!(first.redemption.code.as_deref(), Some("SPRINGAB12"));
    // A replay takes nothing.
    let again = service
        .redeem(
            &project,
            &redeem(json!({"code": " spring ab12 ", "idempotencyKey": "k1"})),
        )
        .await
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.redemption, first.redemption);
    let second = service
        .redeem(
            &project,
            &redeem(json!({"campaignCode": "SPRING", "code": "SPRING-AB12"})),
        )
        .await
        .unwrap();
    let err = service
        .redeem(
            &project,
            &redeem(json!({"campaignCode": "SPRING", "code": "spring-ab12"})),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "code_exhausted");
    assert_eq!(err.kind(), ErrorKind::Conflict);
    let info = service.code_info(&project, "springab12").await.unwrap();
    assert_eq!((info.code.used, info.code.usage_limit), (2, 2));
    assert_eq!(info.campaign_code.as_deref(), Some("SPRING"));
    // Cancel gives the use back, once.
    service
        .cancel_redemption(&project, second.redemption.id)
        .await
        .unwrap();
    service
        .cancel_redemption(&project, second.redemption.id)
        .await
        .unwrap();
    assert_eq!(
        service
            .code_info(&project, "SPRINGAB12")
            .await
            .unwrap()
            .code
            .used,
        1
    );
    service
        .redeem(&project, &redeem(json!({"code": "SPRINGAB12"})))
        .await
        .unwrap();
    // A campaign without a pool still redeems without a code.
    service
        .redeem(&project, &redeem(json!({"campaignCode": "PLAIN"})))
        .await
        .unwrap();
    // Unknown codes.
    for (code, expected) in [("NOPE", "code_not_found"), ("no pe!", "validation_failed")] {
        let err = service
            .redeem(&project, &redeem(json!({"code": code})))
            .await
            .unwrap_err();
        assert_eq!(err.code(), expected, "{code}");
    }
}

pub async fn deactivated_and_foreign_codes_are_refused<S: Store>(store: Arc<S>) {
    let project = Uuid::new_v4().to_string();
    let service = Service::new(Arc::clone(&store), Arc::new(SystemClock));
    let a = campaign(&service, &project, "A").await;
    let b = campaign(&service, &project, "B").await;
    service
        .import_codes(&project, a, "AAAA1\nAAAA2\n", None, None)
        .await
        .unwrap();
    service
        .import_codes(&project, b, "BBBB1\n", None, None)
        .await
        .unwrap();
    let off = service
        .set_code_active(&project, a, "aaaa-1", false)
        .await
        .unwrap();
    assert!(!off.active);
    let err = service
        .redeem(&project, &redeem(json!({"code": "AAAA1"})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "code_inactive");
    let err = service
        .redeem(
            &project,
            &redeem(json!({"campaignCode": "A", "code": "BBBB1"})),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "code_not_for_campaign");
    assert_eq!(err.kind(), ErrorKind::Validation);
    // Deactivating through another campaign finds nothing.
    let err = service
        .set_code_active(&project, b, "AAAA2", false)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "code_not_found");
    // Reactivated, it redeems again.
    service
        .set_code_active(&project, a, "AAAA1", true)
        .await
        .unwrap();
    service
        .redeem(&project, &redeem(json!({"code": "aaaa1"})))
        .await
        .unwrap();
    let page = service.list_codes(&project, a, 0, 10).await.unwrap();
    let used: Vec<(String, i64, bool)> = page
        .items
        .into_iter()
        .map(|c| (normalize(&c.code), c.used, c.active))
        .collect();
    assert_eq!(
        used,
        [("AAAA1".to_owned(), 1, true), ("AAAA2".to_owned(), 0, true)]
    );
}

/// Many redeems of one code at once: exactly its limit succeed, the rest
/// are `code_exhausted`, and `used` equals the limit.
pub async fn concurrent_redeems_never_pass_a_code_limit<S: Store>(store: Arc<S>) {
    let project = Uuid::new_v4().to_string();
    let service = Arc::new(Service::new(Arc::clone(&store), Arc::new(SystemClock)));
    let id = campaign(&service, &project, "RACE").await;
    service
        .import_codes(&project, id, "RACE-1,5\n", None, None)
        .await
        .unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..24 {
        let service = Arc::clone(&service);
        let project = project.clone();
        tasks.spawn(async move {
            service
                .redeem(&project, &redeem(json!({"code": "race-1"})))
                .await
        });
    }
    let (mut ok, mut exhausted) = (0, 0);
    while let Some(joined) = tasks.join_next().await {
        match joined.unwrap() {
            Ok(_) => ok += 1,
            Err(e) if e.code() == "code_exhausted" => exhausted += 1,
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!((ok, exhausted), (5, 19));
    assert_eq!(
        service
            .code_info(&project, "RACE1")
            .await
            .unwrap()
            .code
            .used,
        5
    );
}
