//! Content-store behaviours: list filters, paging and sort, the PUT-nulls
//! rule, versions, errors.

use std::sync::Arc;

use accord::consent::ContentQuery;
use accord::store::{ConsentStore, SortDirection};
use accord::ErrorKind;
use chrono::Duration;
use serde_json::{json, Value};

use super::{Fx, Reason};

const CONSENT: &str = "svc-consent-v1";
const NOTICE: &str = "svc-privacy-notice-v1";
const ACCEPTANCE: &str = "svc-consent-acceptance-v1";
const PURPOSE: &str = "svc-purpose-v1";

/// Query pairs and the expected names.
type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);

/// The `name`s of a list, in order, for the query given as pairs.
async fn names<S: ConsentStore + 'static>(
    fx: &Fx<S>,
    t: &str,
    pairs: &[(&str, &str)],
) -> Vec<String> {
    let q = ContentQuery::from_pairs(pairs.iter().copied()).expect("query");
    let page = fx.svc.list_content(&fx.project, t, &q).await.expect("list");
    page.items
        .iter()
        .map(|r| {
            let key = if t == PURPOSE { "code" } else { "name" };
            r.data
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

pub async fn list_filters<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let n = fx.notice(1).await;
    let mk = |name: &str,
              app: &str,
              purposes: &[&str],
              revision: Value,
              status: &str,
              extra: Value| {
        let mut d = json!({"name": name, "application": app, "purposes": purposes, "privacyNoticeRef": n.id,
                           "revision": revision, "status": status});
        if let (Some(d), Some(e)) = (d.as_object_mut(), extra.as_object()) {
            d.extend(e.clone());
        }
        d
    };
    fx.create(
        CONSENT,
        mk(
            "a",
            "shop",
            &["email", "sms"],
            json!(1),
            "PUBLISHED",
            json!({"ref1": "x", "lifespan": 30}),
        ),
    )
    .await;
    fx.advance(Duration::seconds(1));
    fx.create(
        CONSENT,
        mk(
            "b",
            "shop",
            &["sms"],
            json!(2),
            "DRAFT",
            json!({"ref1": ""}),
        ),
    )
    .await;
    fx.advance(Duration::seconds(1));
    fx.create(
        CONSENT,
        mk(
            "c",
            "games",
            &["email"],
            json!(2.0),
            "PUBLISHED",
            json!({"flag": true, "ref1": null}),
        ),
    )
    .await;
    fx.other_project().consent("shop", &["email"], None).await;

    let cases: &[Case] = &[
        (&[], &["a", "b", "c"]),
        (&[("data.status", "PUBLISHED")], &["a", "c"]),
        (&[("data.status", "published")], &[]),
        (&[("data.purposes", "email")], &["a", "c"]),
        (
            &[("data.purposes", "sms"), ("data.application", "shop")],
            &["a", "b"],
        ),
        (
            &[("data.purposes", "sms"), ("data.purposes", "email")],
            &["a"],
        ),
        (&[("data.revision", "2")], &["b", "c"]),
        (&[("data.revision", "2.0")], &["b", "c"]),
        (&[("data.revision", "2e0")], &[]),
        (&[("data.lifespan", "30")], &["a"]),
        (&[("data.flag", "true")], &["c"]),
        (&[("data.flag", "false")], &[]),
        (&[("data.ref1", "x")], &["a"]),
        (&[("data.ref1", "")], &["b"]),
        (&[("data.ref1", "null")], &[]),
        (
            &[("data.status", "PUBLISHED"), ("data.application", "games")],
            &["c"],
        ),
        (&[("data.status", "ARCHIVED")], &[]),
        (&[("data.nothing", "x")], &[]),
        (&[("data.name", "a")], &["a"]),
        (&[("data.name", "A")], &[]),
    ];
    for (pairs, expected) in cases {
        assert_eq!(names(&fx, CONSENT, pairs).await, *expected, "{pairs:?}");
    }
}

pub async fn list_paging<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    for i in 0..5 {
        fx.create(PURPOSE, json!({"code": format!("p{i}")})).await;
    }
    let page = |p: &'static str, s: &'static str| {
        let fx = &fx;
        async move {
            names(
                fx,
                PURPOSE,
                &[("page", p), ("size", s), ("sort", "data.code")],
            )
            .await
        }
    };
    assert_eq!(page("0", "2").await, ["p0", "p1"]);
    assert_eq!(page("1", "2").await, ["p2", "p3"]);
    assert_eq!(page("2", "2").await, ["p4"], "last partial page");
    assert!(page("3", "2").await.is_empty(), "past the end");
    assert!(
        page("4000000000", "1000").await.is_empty(),
        "far past the end"
    );
    assert_eq!(page("0", "1000").await.len(), 5);
    assert_eq!(page("4", "1").await, ["p4"]);
    let q = ContentQuery::default()
        .with_sort("code", SortDirection::Asc)
        .with_page(2, 2);
    let p = fx
        .svc
        .list_content(&fx.project, PURPOSE, &q)
        .await
        .expect("list");
    assert_eq!((p.page, p.size, p.total, p.items.len()), (2, 2, 5, 1));
    let all = fx
        .svc
        .list_content(&fx.project, PURPOSE, &ContentQuery::default())
        .await
        .expect("list");
    assert_eq!((all.page, all.size, all.total), (0, 20, 5));

    for size in ["0", "1001", "-1", "x"] {
        let err = ContentQuery::from_pairs([("size", size)]).expect_err("bad size");
        assert_eq!(
            (err.kind(), err.code()),
            (ErrorKind::BadRequest, "invalid_page_size"),
            "{size}"
        );
    }
    for size in [0, 1001] {
        let q = ContentQuery::default().with_page(0, size);
        let err = fx
            .svc
            .list_content(&fx.project, PURPOSE, &q)
            .await
            .expect_err("bad size");
        assert_eq!(
            (err.kind(), err.code()),
            (ErrorKind::BadRequest, "invalid_page_size")
        );
    }
}

pub async fn list_multi_key_sort<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let n = fx.notice(1).await;
    for (name, app, revision, lifespan) in [
        ("a", "shop", 1, json!(30)),
        ("b", "games", 3, Value::Null),
        ("c", "shop", 2, json!(7)),
        ("d", "games", 3, json!(30)),
        ("e", "Shop", 9, json!(100)),
    ] {
        fx.advance(Duration::seconds(1));
        fx.create(
            CONSENT,
            json!({"name": name, "application": app, "purposes": ["p"], "privacyNoticeRef": n.id,
                   "revision": revision, "lifespan": lifespan, "status": "PUBLISHED"}),
        )
        .await;
    }
    let sorted = |sort: &'static [&'static str]| {
        let fx = &fx;
        async move {
            let pairs: Vec<(&str, &str)> = sort.iter().map(|s| ("sort", *s)).collect();
            names(fx, CONSENT, &pairs).await.concat()
        }
    };
    assert_eq!(sorted(&[]).await, "abcde", "creation order by default");
    assert_eq!(
        sorted(&["data.application", "data.revision,desc"]).await,
        "ebdca",
        "code-point order: S < g < s"
    );
    assert_eq!(
        sorted(&["data.application,desc", "data.revision"]).await,
        "acbde"
    );
    assert_eq!(
        sorted(&["data.revision,desc", "data.name,desc"]).await,
        "edbca"
    );
    assert_eq!(
        sorted(&["data.lifespan"]).await,
        "cadeb",
        "numbers by value, null last"
    );
    assert_eq!(
        sorted(&["data.lifespan,desc"]).await,
        "eadcb",
        "null last descending too"
    );
    assert_eq!(sorted(&["data.missing,desc"]).await, "abcde");
}

pub async fn put_nulls_and_keeps_versions<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let v1 = fx
        .create(NOTICE, json!({"name": "PN", "descriptionEn": "en", "descriptionTh": "th", "revision": 1, "status": "DRAFT", "extra": [1]}))
        .await;
    assert_eq!((v1.version, v1.created_by.as_str()), (1, "admin"));
    fx.advance(Duration::days(1));
    let v2 = fx
        .replace(
            NOTICE,
            &v1.id,
            json!({"name": "PN 2", "revision": 2, "status": "PUBLISHED"}),
        )
        .await;
    assert_eq!(
        Value::Object(v2.data.clone()),
        json!({"name": "PN 2", "descriptionEn": null, "descriptionTh": null, "revision": 2, "status": "PUBLISHED", "extra": null})
    );
    assert_eq!(v2.version, 2);
    assert_eq!(
        (v2.created_by.as_str(), v2.created_date),
        ("admin", v1.created_date)
    );
    assert_eq!(
        (v2.last_modified_by.as_str(), v2.last_modified_date),
        ("editor", v1.created_date + Duration::days(1))
    );
    let current = fx
        .svc
        .content(&fx.project, NOTICE, &v1.id)
        .await
        .expect("get");
    assert_eq!(current, v2);

    let err = fx
        .svc
        .replace_content(
            &fx.project,
            NOTICE,
            &v1.id,
            json!({"descriptionEn": "only this"}),
            "x",
        )
        .await
        .expect_err("required missing");
    assert_eq!(err.kind(), ErrorKind::Validation);
    let fields: Vec<&str> = err.fields().iter().map(|f| f.field.as_str()).collect();
    assert_eq!(fields, ["data.name", "data.revision", "data.status"]);
    let err = fx
        .svc
        .replace_content(
            &fx.project,
            NOTICE,
            &v1.id,
            json!({"name": "x", "revision": 3, "status": "ACCEPTED"}),
            "x",
        )
        .await
        .expect_err("bad enum");
    assert_eq!(err.fields()[0].code, "invalid_enum");

    fx.advance(Duration::days(1));
    fx.replace(
        NOTICE,
        &v1.id,
        json!({"name": "PN 3", "revision": 3, "status": "ARCHIVED"}),
    )
    .await;
    let versions = fx
        .svc
        .content_versions(&fx.project, NOTICE, &v1.id)
        .await
        .expect("versions");
    let shown: Vec<(i64, &str)> = versions
        .iter()
        .map(|v| (v.version, v.data["name"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(
        shown,
        [(1, "PN"), (2, "PN 2"), (3, "PN 3")],
        "oldest first, nothing lost"
    );
    assert_eq!(versions[0], v1);
    assert!(versions.windows(2).all(|w| w[0].seq < w[1].seq));
    let err = fx
        .svc
        .privacy_notice(&fx.project, &v1.id)
        .await
        .expect_err("an ARCHIVED notice is not served to applications");
    assert_eq!(err.code(), "privacy_notice_not_found");
    let current = fx
        .svc
        .content(&fx.project, NOTICE, &v1.id)
        .await
        .expect("get");
    assert_eq!(current.data["revision"], 3, "the content store serves it");
}

pub async fn content_errors<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let p = &fx.project;
    let code = |r: accord::Result<()>| r.map_err(|e| (e.kind(), e.code()));
    let nf_type = Err((ErrorKind::NotFound, "content_type_not_found"));
    assert_eq!(
        code(
            fx.svc
                .create_content(p, "svc-nope-v1", json!({}), "a")
                .await
                .map(drop)
        ),
        nf_type
    );
    assert_eq!(
        code(
            fx.svc
                .replace_content(p, "nope", "1", json!({}), "a")
                .await
                .map(drop)
        ),
        nf_type
    );
    assert_eq!(
        code(fx.svc.content(p, "nope", "1").await.map(drop)),
        nf_type
    );
    assert_eq!(
        code(fx.svc.content_versions(p, "nope", "1").await.map(drop)),
        nf_type
    );
    assert_eq!(
        code(
            fx.svc
                .list_content(p, "nope", &ContentQuery::default())
                .await
                .map(drop)
        ),
        nf_type
    );
    let nf = Err((ErrorKind::NotFound, "content_not_found"));
    assert_eq!(
        code(fx.svc.content(p, NOTICE, "missing").await.map(drop)),
        nf
    );
    assert_eq!(
        code(
            fx.svc
                .content_versions(p, NOTICE, "missing")
                .await
                .map(drop)
        ),
        nf
    );
    let body = json!({"name": "PN", "revision": 1, "status": "DRAFT"});
    assert_eq!(
        code(
            fx.svc
                .replace_content(p, NOTICE, "missing", body, "a")
                .await
                .map(drop)
        ),
        nf
    );
    let n = fx.notice(1).await;
    assert_eq!(
        code(fx.svc.content(p, CONSENT, &n.id).await.map(drop)),
        nf,
        "ids are per type"
    );

    let err = fx
        .svc
        .create_content(
            p,
            CONSENT,
            json!({"name": "c", "application": "shop", "purposes": ["e"],
            "privacyNoticeRef": "nope", "revision": 1, "status": "WITHDRAWN"}),
            "a",
        )
        .await
        .expect_err("invalid");
    let fields: Vec<(&str, &str)> = err
        .fields()
        .iter()
        .map(|f| (f.field.as_str(), f.code.as_str()))
        .collect();
    assert_eq!(
        fields,
        [
            ("data.status", "invalid_enum"),
            ("data.privacyNoticeRef", "unknown_privacy_notice")
        ]
    );
    assert!(err.fields()[0].message.contains("acceptances"));
    let total = fx
        .svc
        .list_content(p, CONSENT, &ContentQuery::default())
        .await
        .expect("list")
        .total;
    assert_eq!(total, 0, "nothing was written");
}

pub async fn acceptance_via_content_store<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email", "sms"], Some(30)).await;
    let body = |consent_id: &str, purposes: Value| {
        json!({"dataSubject": "u1", "consentId": consent_id, "consentApplication": "shop",
               "acceptanceDate": "2026-01-01T07:00:00+07:00", "status": "ACCEPTED", "purposes": purposes,
               "expiredDate": "2026-01-31T07:00:00+07:00", "userAgent": "ua", "country": "TH", "localIp": "1.2.3.4",
               "osVersion": "1", "model": "m", "deviceFingerprintId": "fp", "note": "", "device": "kiosk"})
    };
    let err = fx
        .svc
        .create_content(&fx.project, ACCEPTANCE, body("nope", json!(["email"])), "a")
        .await
        .expect_err("unknown consent");
    assert_eq!(err.fields()[0].code, "unknown_consent");
    let err = fx
        .svc
        .create_content(
            &fx.project,
            ACCEPTANCE,
            body(&c.id, json!(["email", "fax"])),
            "a",
        )
        .await
        .expect_err("unknown purpose");
    assert_eq!(
        (
            err.fields()[0].field.as_str(),
            err.fields()[0].code.as_str()
        ),
        ("data.purposes[1]", "unknown_purpose")
    );

    let acc = fx.create(ACCEPTANCE, body(&c.id, json!(["email"]))).await;
    assert_eq!(acc.data["acceptanceDate"], "2026-01-01T00:00:00.000000Z");
    assert_eq!(acc.data["consentRevision"], 1, "pinned by the service");
    assert_eq!(acc.data["privacyNoticeId"], c.data["privacyNoticeRef"]);
    assert_eq!(acc.data["privacyNoticeRevision"], 4);
    assert!(fx.to_accept("shop", "u1").await.is_empty());
    assert_eq!(
        fx.flags("shop", "u1").await,
        super::flags(&[("email", true), ("sms", false)])
    );
    fx.advance(Duration::days(30));
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(c.id.clone(), Reason::Expired)]
    );

    let update = |subject: &str, status: &str, withdrawal: &str| {
        json!({"dataSubject": subject, "consentId": c.id, "application": "shop", "acceptanceDate": "2026-01-01T00:00:00Z",
               "status": status, "withdrawalDate": withdrawal, "note": "edited"})
    };
    let err = fx
        .svc
        .replace_content(
            &fx.project,
            ACCEPTANCE,
            &acc.id,
            update("someone-else", "ACCEPTED", ""),
            "a",
        )
        .await
        .expect_err("immutable");
    assert_eq!(
        (
            err.fields()[0].field.as_str(),
            err.fields()[0].code.as_str()
        ),
        ("data.dataSubject", "immutable")
    );
    // An edit cannot extend an acceptance: consent given again is a new
    // acceptance.
    let mut renew = update("u1", "ACCEPTED", "");
    renew["expiredDate"] = json!("2026-12-31T00:00:00Z");
    let err = fx
        .svc
        .replace_content(&fx.project, ACCEPTANCE, &acc.id, renew, "a")
        .await
        .expect_err("evidence");
    assert_eq!(
        (
            err.fields()[0].field.as_str(),
            err.fields()[0].code.as_str()
        ),
        ("data.expiredDate", "immutable")
    );
    let edited = fx
        .replace(ACCEPTANCE, &acc.id, update("u1", "ACCEPTED", ""))
        .await;
    assert_eq!(edited.data["note"], "edited");
    assert_eq!(edited.data["purposes"], json!(["email"]), "kept");
    assert_eq!(edited.data["expiredDate"], acc.data["expiredDate"], "kept");
    let mut again = body(&c.id, json!(["email"]));
    again["acceptanceDate"] = json!(fx.now());
    again["expiredDate"] = json!(fx.now() + Duration::days(30));
    fx.create(ACCEPTANCE, again).await;
    assert!(fx.to_accept("shop", "u1").await.is_empty());
    assert_eq!(
        fx.flags("shop", "u1").await,
        super::flags(&[("email", true), ("sms", false)]),
    );
    let listed = names(&fx, ACCEPTANCE, &[("data.note", "edited")]).await;
    assert_eq!(listed.len(), 1);
}
