//! The import path (`accord import`, [`ConsentService::import_content`])
//! on every store: it is no back door. Acceptances are not imported at all
//! (evidence stays where it was recorded), and an imported notice or
//! consent over an existing one obeys the revision rules of any edit.
//!
//! [`ConsentService::import_content`]: accord::consent::ConsentService::import_content

use std::sync::Arc;

use accord::campaign::Imported;
use accord::store::ConsentStore;
use accord::ErrorKind;
use serde_json::{json, Value};

use super::integrity::{acceptance, pairs, refused, ACCEPTANCE, CONSENT, NOTICE};
use super::Fx;

pub async fn an_import_cannot_forge_or_rewind_evidence<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let c = fx.consent("shop", &["email"], Some(30)).await;
    let a = fx.accept("shop", "u1", &c.id, None).await;
    let import = |t: &'static str, id: String, data: Value| {
        let (svc, p) = (fx.svc.clone(), fx.project.clone());
        async move { svc.import_content(&p, t, &id, data, "import").await }
    };

    // An acceptance, new or over a stored one: refused, nothing written.
    for id in ["imported-1".to_owned(), a.id.clone()] {
        let err = import(ACCEPTANCE, id.clone(), acceptance(&c.id, fx.now()))
            .await
            .expect_err("acceptances are not imported");
        assert_eq!(
            (err.kind(), err.code()),
            (ErrorKind::BadRequest, "import_not_supported"),
            "{id}"
        );
    }
    assert!(fx
        .svc
        .content(&fx.project, ACCEPTANCE, "imported-1")
        .await
        .is_err());
    let versions = fx
        .svc
        .content_versions(&fx.project, ACCEPTANCE, &a.id)
        .await
        .expect("versions");
    assert_eq!(versions.len(), 1);

    // A consent imported over the stored one: no revision walked back, no
    // purpose slipped in under the same revision.
    let at = |revision: i64, purposes: &[&str]| {
        let mut data = c.data.clone();
        data.insert("revision".into(), json!(revision));
        data.insert("purposes".into(), json!(purposes));
        Value::Object(data)
    };
    fx.replace(CONSENT, &c.id, at(3, &["email"])).await;
    fx.accept("shop", "u1", &c.id, None).await;
    for (data, field, code) in [
        (at(2, &["email"]), "data.revision", "revision_decreased"),
        (at(0, &["email"]), "data.revision", "out_of_range"),
        (
            at(3, &["email", "sms"]),
            "data.purposes",
            "revision_required",
        ),
    ] {
        assert_eq!(
            refused(import(CONSENT, c.id.clone(), data).await),
            pairs(&[(field, code)])
        );
    }
    assert!(
        fx.to_accept("shop", "u1").await.is_empty(),
        "still revision 3"
    );
    let notice = c.data["privacyNoticeRef"].as_str().unwrap().to_owned();
    assert_eq!(
        refused(
            import(
                NOTICE,
                notice.clone(),
                json!({"name": "Privacy", "revision": 1, "status": "PUBLISHED"})
            )
            .await
        ),
        pairs(&[("data.revision", "revision_decreased")])
    );
    // The same content again is unchanged; a new revision is an update.
    assert_eq!(
        import(CONSENT, c.id.clone(), at(3, &["email"]))
            .await
            .expect("same"),
        Imported::Unchanged
    );
    assert_eq!(
        import(CONSENT, c.id.clone(), at(4, &["email", "sms"]))
            .await
            .expect("a new revision"),
        Imported::Updated
    );
    assert_eq!(
        fx.to_accept("shop", "u1").await,
        [(c.id.clone(), accord::consent::Reason::NewRevision)]
    );
}
