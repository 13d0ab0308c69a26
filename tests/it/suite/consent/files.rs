//! Uploaded files on every store: content-addressed, idempotent,
//! per project, type-checked; a consent's and an acceptance's
//! `formScreen` must name one, and the acceptance pins it.

use std::sync::Arc;

use accord::consent::file::StoredFile;
use accord::store::{ConsentStore, FileStore};
use serde_json::json;

use super::{t0, Fx};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR screen one";

fn code(e: &accord::Error) -> Vec<String> {
    let mut codes = vec![e.code().to_owned()];
    codes.extend(
        e.fields()
            .iter()
            .map(|f| format!("{}:{}", f.field, f.code.as_str())),
    );
    codes
}

/// The store contract: put once, found again byte for byte, a second put
/// keeps the first, projects are apart.
pub async fn files_are_content_addressed<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store.clone());
    let sha = accord::hash::sha256_hex(PNG);
    let file = StoredFile {
        project_id: fx.project.clone(),
        sha256: sha.clone(),
        content_type: "image/png".into(),
        bytes: PNG.to_vec(),
        created_by: "first".into(),
        created_date: t0(),
    };
    assert!(!store.file_exists(&fx.project, &sha).await.unwrap());
    assert_eq!(store.file(&fx.project, &sha).await.unwrap(), None);
    let (stored, created) = store.put_file(&file).await.unwrap();
    assert!(created);
    assert_eq!(stored, file);
    let again = StoredFile {
        created_by: "second".into(),
        ..file.clone()
    };
    let (kept, created) = store.put_file(&again).await.unwrap();
    assert!(!created, "the same bytes are stored once");
    assert_eq!(kept, file, "the first upload is kept");
    assert_eq!(store.file(&fx.project, &sha).await.unwrap(), Some(file));
    assert!(store.file_exists(&fx.project, &sha).await.unwrap());
    let other = fx.other_project();
    assert!(!store.file_exists(&other.project, &sha).await.unwrap());

    // Through the service: sniffed, hashed, idempotent.
    let (info, created) = fx
        .svc
        .upload_file(&fx.project, Some("image/png"), PNG.to_vec(), "admin")
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(info.sha256, sha);
    assert_eq!(info.size, PNG.len() as u64);
    assert_eq!(info.created_by, "first");
    let html = b"<!doctype html><title>Consent</title>".to_vec();
    let (info, created) = fx
        .svc
        .upload_file(
            &fx.project,
            Some("text/html; charset=utf-8"),
            html.clone(),
            "admin",
        )
        .await
        .unwrap();
    assert!(created);
    assert_eq!(info.content_type, "text/html");
    assert_eq!(
        fx.svc.file(&fx.project, &info.sha256).await.unwrap().bytes,
        html
    );
    let err = fx
        .svc
        .upload_file(&fx.project, Some("image/png"), html, "admin")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "file_type_mismatch");
    for missing in [&"0".repeat(64), "nope", &sha.to_uppercase()] {
        let err = fx.svc.file(&other.project, missing).await.unwrap_err();
        assert_eq!(err.code(), "file_not_found", "{missing}");
    }
}

/// `formScreen` names a file of the project; the acceptance pins the
/// consent's, or the one the application sends.
pub async fn acceptances_pin_the_screen<S: ConsentStore + 'static>(store: Arc<S>) {
    let fx = Fx::new(store);
    let (screen, _) = fx
        .svc
        .upload_file(&fx.project, Some("image/png"), PNG.to_vec(), "admin")
        .await
        .unwrap();
    let other = [PNG, b" two"].concat();
    let (other, _) = fx
        .svc
        .upload_file(&fx.project, Some("image/png"), other, "admin")
        .await
        .unwrap();
    let notice = fx.notice(1).await;
    let consent = |screen: serde_json::Value| {
        json!({"name": "c", "application": "shop", "purposes": ["email"],
               "privacyNoticeRef": notice.id, "revision": 1, "status": "PUBLISHED",
               "formScreen": screen})
    };
    let unknown = "0".repeat(64);
    for bad in [json!(unknown), json!("screen.png")] {
        let err = fx
            .svc
            .create_content(&fx.project, "svc-consent-v1", consent(bad), "admin")
            .await
            .unwrap_err();
        assert_eq!(code(&err)[1], "data.formScreen:unknown_file");
    }
    // A file of another project is not one of this project's.
    let elsewhere = fx.other_project();
    let err = elsewhere
        .svc
        .create_content(
            &elsewhere.project,
            "svc-consent-v1",
            consent(json!(screen.sha256)),
            "admin",
        )
        .await
        .unwrap_err();
    assert!(
        code(&err).contains(&"data.formScreen:unknown_file".to_owned()),
        "{err:?}"
    );
    let c = fx
        .create("svc-consent-v1", consent(json!(screen.sha256)))
        .await;

    let accept = |sent: Option<&str>| accord::consent::AcceptConsentRequest {
        app: Some("shop".into()),
        data_subject: Some("u1".into()),
        consent_id: Some(c.id.clone()),
        user_agent: Some("ua".into()),
        country: Some("TH".into()),
        local_ip: Some("10.0.0.1".into()),
        os_version: Some("1".into()),
        model: Some("m".into()),
        device_fingerprint_id: Some("fp".into()),
        form_screen: sent.map(str::to_owned),
        ..Default::default()
    };
    let pinned = fx
        .svc
        .accept_consent(&fx.project, accept(None), "app")
        .await
        .unwrap();
    assert_eq!(pinned.form_screen.as_deref(), Some(screen.sha256.as_str()));
    let sent = fx
        .svc
        .accept_consent(&fx.project, accept(Some(&other.sha256)), "app")
        .await
        .unwrap();
    assert_eq!(sent.form_screen.as_deref(), Some(other.sha256.as_str()));
    let err = fx
        .svc
        .accept_consent(&fx.project, accept(Some(&unknown)), "app")
        .await
        .unwrap_err();
    assert_eq!(code(&err), ["unknown_file", "formScreen:unknown_file"]);

    // Through the content store too.
    let body = |screen: Option<&str>| {
        let mut data = json!({"dataSubject": "u2", "consentId": c.id, "consentApplication": "shop",
            "acceptanceDate": "2026-01-01T00:00:00Z", "status": "ACCEPTED", "purposes": ["email"],
            "expiredDate": null, "userAgent": "a", "country": "TH", "localIp": "1", "osVersion": "1",
            "model": "m", "deviceFingerprintId": "f", "note": ""});
        if let Some(s) = screen {
            data["formScreen"] = s.into();
        }
        data
    };
    let created = fx.create("svc-consent-acceptance-v1", body(None)).await;
    assert_eq!(created.data["formScreen"], json!(screen.sha256));
    let err = fx
        .svc
        .create_content(
            &fx.project,
            "svc-consent-acceptance-v1",
            body(Some(&unknown)),
            "admin",
        )
        .await
        .unwrap_err();
    assert!(
        code(&err).contains(&"data.formScreen:unknown_file".to_owned()),
        "{err:?}"
    );
    // The screen is evidence: an edit cannot change it.
    let mut edit = body(Some(&other.sha256));
    edit["application"] = "shop".into();
    let err = fx
        .svc
        .replace_content(
            &fx.project,
            "svc-consent-acceptance-v1",
            &created.id,
            edit,
            "admin",
        )
        .await
        .unwrap_err();
    assert!(
        code(&err).iter().any(|c| c.starts_with("data.formScreen:")),
        "{err:?}"
    );
}
