//! Writes that meet on one record, and the check of records written
//! around the rules: last-writer-wins PUTs keep every version, concurrent
//! withdrawals keep the first withdrawal's time, and records bent straight
//! in the store are reported, not rewritten.

use std::sync::Arc;

use accord::consent::{format_time, ContentType, ContentWrite};
use accord::store::ConsentStore;
use accord::ErrorKind;
use chrono::Duration;
use serde_json::{json, Value};

use super::integrity::{acceptance, withdrawal, ACCEPTANCE};
use super::Fx;

const PURPOSE: &str = "svc-purpose-v1";

/// PUTs that name no version are last-writer-wins: each appends its
/// version, none is refused, nothing is lost. Naming a stale version is
/// refused.
pub async fn concurrent_puts_keep_every_version<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let r = fx.create(PURPOSE, json!({"code": "c0"})).await;
    let mut tasks = Vec::new();
    for i in 1..=8 {
        let (svc, project, id) = (fx.svc.clone(), fx.project.clone(), r.id.clone());
        tasks.push(tokio::spawn(async move {
            svc.replace_content(
                &project,
                PURPOSE,
                &id,
                json!({"code": format!("c{i}")}),
                "x",
            )
            .await
        }));
    }
    for t in tasks {
        t.await
            .expect("task")
            .expect("no version named: never refused");
    }
    let versions = fx
        .svc
        .content_versions(&fx.project, PURPOSE, &r.id)
        .await
        .expect("versions");
    let numbers: Vec<i64> = versions.iter().map(|v| v.version).collect();
    assert_eq!(numbers, (1..=9).collect::<Vec<i64>>(), "one per PUT");
    let mut codes: Vec<&str> = versions
        .iter()
        .map(|v| v.data["code"].as_str().unwrap_or_default())
        .collect();
    codes.sort_unstable();
    assert_eq!(
        codes,
        ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"]
    );
    let err = fx
        .svc
        .replace_content_if(&fx.project, PURPOSE, &r.id, 8, json!({"code": "late"}), "x")
        .await
        .expect_err("stale");
    assert_eq!(
        (err.kind(), err.code()),
        (ErrorKind::Conflict, "stale_version")
    );
    fx.svc
        .replace_content_if(&fx.project, PURPOSE, &r.id, 9, json!({"code": "c9"}), "x")
        .await
        .expect("current");

    // Concurrent withdrawals and note edits of one acceptance: each is
    // validated against the version it lands on; the first withdrawal's
    // time stays, and the acceptance stays withdrawn.
    let c = fx.consent("shop", &["email"], None).await;
    let a = fx.accept("shop", "u1", &c.id, None).await;
    let mut tasks = Vec::new();
    for i in 0..6 {
        let (svc, project, id, consent) = (
            fx.svc.clone(),
            fx.project.clone(),
            a.id.clone(),
            c.id.clone(),
        );
        let status = if i % 2 == 0 { "WITHDRAWN" } else { "ACCEPTED" };
        let body = json!({"dataSubject": "u1", "consentId": consent, "application": "shop",
            "acceptanceDate": a.acceptance_date, "status": status, "withdrawalDate": "",
            "note": format!("writer {i}")});
        tasks.push(tokio::spawn(async move {
            (
                status,
                svc.replace_content(&project, ACCEPTANCE, &id, body, "x")
                    .await,
            )
        }));
    }
    for t in tasks {
        let (status, r) = t.await.expect("task");
        if let Err(e) = r {
            assert_eq!(
                (status, e.fields()[0].code.as_str()),
                ("ACCEPTED", "invalid_transition"),
                "{e}"
            );
        }
    }
    let versions = fx
        .svc
        .content_versions(&fx.project, ACCEPTANCE, &a.id)
        .await
        .expect("versions");
    let first = versions
        .iter()
        .position(|v| v.data["status"] == "WITHDRAWN")
        .expect("withdrawn");
    for v in &versions[first..] {
        assert_eq!(v.data["status"], "WITHDRAWN");
        assert_eq!(
            v.data["withdrawalDate"],
            versions[first].data["withdrawalDate"]
        );
        assert_eq!(v.data["purposes"], json!(["email"]));
    }
    let clean = fx.svc.check_records(&fx.project).await.expect("check");
    assert!(clean.is_empty(), "{clean:#?}");
}

/// Records written straight into the store, as older versions of the crate
/// or a hand-edited database could have left them, are reported by the
/// check and not changed; records written through the service are clean.
pub async fn the_check_reports_bent_records<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(Arc::clone(&store));
    let c = fx.consent("shop", &["email"], Some(30)).await;
    let a = fx.accept("shop", "u1", &c.id, None).await;
    fx.replace(
        ACCEPTANCE,
        &a.id,
        withdrawal(&c.id, &json!(a.acceptance_date), "WITHDRAWN"),
    )
    .await;
    fx.create(ACCEPTANCE, acceptance(&c.id, fx.now())).await;
    let clean = fx.svc.check_records(&fx.project).await.expect("check");
    assert!(clean.is_empty(), "{clean:#?}");

    let write = |t: ContentType, id: &str, data: Value| ContentWrite {
        project_id: fx.project.clone(),
        content_type: t,
        id: id.to_owned(),
        data: data.as_object().unwrap().clone(),
        actor: "legacy".into(),
        at: fx.now(),
    };
    // A forged future revision and a never-expiring acceptance.
    let mut forged = acceptance(&c.id, fx.now());
    forged["consentRevision"] = json!(7);
    forged["expiredDate"] = Value::Null;
    store
        .insert_content(&write(ContentType::ConsentAcceptance, "forged", forged))
        .await
        .unwrap();
    // An acceptance revived, its evidence nulled by the update form (as
    // "PUT nulls what the body leaves out" once did).
    let revived = fx.accept("shop", "u1", &c.id, None).await;
    let stored = fx
        .svc
        .content(&fx.project, ACCEPTANCE, &revived.id)
        .await
        .expect("get");
    let mut w = write(
        ContentType::ConsentAcceptance,
        &revived.id,
        Value::Object(stored.data),
    );
    w.data.insert("status".into(), json!("WITHDRAWN"));
    w.data
        .insert("withdrawalDate".into(), json!(format_time(fx.now())));
    w.data.insert("purposes".into(), Value::Null);
    store.replace_content(&w, 1).await.unwrap();
    w.data.insert("status".into(), json!("ACCEPTED"));
    w.data.insert("withdrawalDate".into(), json!(""));
    store.replace_content(&w, 2).await.unwrap();
    // A consent whose revision walked backwards.
    let mut back = c.data.clone();
    back.insert("revision".into(), json!(0));
    store
        .replace_content(&write(ContentType::Consent, &c.id, Value::Object(back)), 1)
        .await
        .unwrap();

    let mut found: Vec<(String, i64, String, String)> = fx
        .svc
        .check_records(&fx.project)
        .await
        .expect("check")
        .into_iter()
        .map(|f| (f.id, f.version, f.field, f.code))
        .collect();
    found.sort();
    let mut expected = vec![
        (
            c.id.clone(),
            2,
            "data.revision".to_owned(),
            "out_of_range".to_owned(),
        ),
        (
            "forged".to_owned(),
            1,
            "data.consentRevision".to_owned(),
            "evidence_mismatch".to_owned(),
        ),
        (
            "forged".to_owned(),
            1,
            "data.expiredDate".to_owned(),
            "evidence_mismatch".to_owned(),
        ),
        (
            "forged".to_owned(),
            1,
            "data.privacyNoticeId".to_owned(),
            "evidence_missing".to_owned(),
        ),
        (
            "forged".to_owned(),
            1,
            "data.privacyNoticeRevision".to_owned(),
            "evidence_missing".to_owned(),
        ),
        (
            revived.id.clone(),
            2,
            "data.purposes".to_owned(),
            "immutable".to_owned(),
        ),
        (
            revived.id.clone(),
            3,
            "data.status".to_owned(),
            "invalid_transition".to_owned(),
        ),
    ];
    expected.sort();
    assert_eq!(found, expected);
    // Reported, not rewritten.
    let versions = fx
        .svc
        .content_versions(&fx.project, ACCEPTANCE, &revived.id)
        .await
        .expect("versions");
    assert_eq!(versions.len(), 3);
}

/// Erasure and the retention purge empty an acceptance's personal
/// attributes in every version, as the law requires: the check does not
/// report that as broken evidence (what proves the consent is kept), and
/// still reports a bent record among erased ones.
pub async fn the_check_accepts_erased_records<S: ConsentStore + 'static>(store: Arc<S>) {
    use accord::consent::erasure::PseudonymKey;
    let fx = Fx::new(Arc::clone(&store));
    let svc = fx
        .svc
        .clone()
        .with_pseudonym_key(PseudonymKey::new(&[7; 32]).unwrap())
        .with_retention(Duration::days(1));
    let c = fx.consent("shop", &["email"], Some(30)).await;
    let a = fx.accept("shop", "u1", &c.id, None).await;
    fx.advance(Duration::hours(1));
    fx.replace(
        ACCEPTANCE,
        &a.id,
        withdrawal(&c.id, &json!(a.acceptance_date), "WITHDRAWN"),
    )
    .await;
    fx.accept("shop", "u2", &c.id, None).await;
    fx.create(ACCEPTANCE, acceptance(&c.id, fx.now())).await;
    svc.erase_subject(&fx.project, "u2").await.expect("erase");
    fx.advance(Duration::days(2));
    let purged = svc.purge_retention(&fx.project).await.expect("purge");
    assert_eq!(purged.acceptances, 1, "u1's withdrawn acceptance");
    let found = fx.svc.check_records(&fx.project).await.expect("check");
    assert!(found.is_empty(), "{found:#?}");

    // An erased record bent afterwards is still reported.
    let stored = fx
        .svc
        .content(&fx.project, ACCEPTANCE, &a.id)
        .await
        .expect("get");
    let mut data = stored.data.clone();
    data.insert("purposes".into(), json!(["email", "sms"]));
    store
        .replace_content(
            &ContentWrite {
                project_id: fx.project.clone(),
                content_type: ContentType::ConsentAcceptance,
                id: a.id.clone(),
                data,
                actor: "legacy".into(),
                at: fx.now(),
            },
            stored.version,
        )
        .await
        .unwrap();
    let found: Vec<(String, String)> = fx
        .svc
        .check_records(&fx.project)
        .await
        .expect("check")
        .into_iter()
        .map(|f| (f.field, f.code))
        .collect();
    assert_eq!(
        found,
        [("data.purposes".to_owned(), "immutable".to_owned())]
    );
}
