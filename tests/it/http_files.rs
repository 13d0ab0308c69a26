//! Uploaded files over HTTP (`/cms/api/projects/{projId}/files`): the
//! upload checks type and size, answers the same file for the same bytes,
//! serves it back with safe headers; scopes `cms.w` to upload and `cms.r`
//! to read; acceptances, receipts and exports name the screen shown.
#![cfg(all(feature = "http", feature = "sqlite"))]
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use accord::http::scope;
use accord::store::memory::MemoryStore;
use serde_json::{json, Value};

use crate::http_receipts::{acceptance, serve, Wire};
use crate::http_support::{parts, problem, token};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR the consent screen";
const HTML: &[u8] = b"<!DOCTYPE html><title>Consent</title><script>alert(1)</script>";

async fn upload(
    w: &Wire,
    bytes: &[u8],
    content_type: Option<&str>,
    token: &str,
) -> reqwest::Response {
    let mut req = reqwest::Client::new()
        .post(format!("{}/cms/api/projects/{}/files", w.base, w.project))
        .bearer_auth(token)
        .body(bytes.to_vec());
    if let Some(t) = content_type {
        req = req.header("content-type", t);
    }
    req.send().await.unwrap()
}

async fn download(w: &Wire, sha256: &str, token: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!(
            "{}/cms/api/projects/{}/files/{sha256}",
            w.base, w.project
        ))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
#[allow(clippy::too_many_lines)] // one story, told in order
async fn files_upload_and_serve() {
    let w = serve(Arc::new(MemoryStore::new()), "files").await;
    let writer = token(&[scope::CMS_WRITE], &["files"]);
    let reader = token(&[scope::CMS_READ], &["files"]);

    let res = upload(&w, PNG, Some("image/png"), &writer).await;
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let (status, info) = parts(res).await;
    assert_eq!(status, 201, "{info}");
    let sha = info["sha256"].as_str().unwrap().to_owned();
    assert_eq!(sha.len(), 64);
    assert_eq!(location, format!("/cms/api/projects/files/files/{sha}"));
    assert_eq!(info["contentType"], "image/png");
    assert_eq!(info["size"], PNG.len());
    // Idempotent: the same bytes again are the same file.
    let (status, again) = parts(upload(&w, PNG, Some("image/png"), &writer).await).await;
    assert_eq!(status, 200);
    assert_eq!(again, info);

    let res = download(&w, &sha, &reader).await;
    assert_eq!(res.status(), 200);
    let h = |name: &str| {
        res.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    assert_eq!(h("content-type").as_deref(), Some("image/png"));
    assert_eq!(h("x-content-type-options").as_deref(), Some("nosniff"));
    assert_eq!(
        h("content-disposition"),
        Some(format!("inline; filename=\"{sha}.png\""))
    );
    assert_eq!(h("content-security-policy"), None);
    assert_eq!(res.bytes().await.unwrap().as_ref(), PNG);

    // HTML is served sandboxed: it cannot run its script.
    let (status, html) =
        parts(upload(&w, HTML, Some("text/html; charset=utf-8"), &writer).await).await;
    assert_eq!(status, 201, "{html}");
    let res = download(&w, html["sha256"].as_str().unwrap(), &reader).await;
    let csp = res.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.starts_with("sandbox"), "{csp}");
    assert_eq!(res.headers()["content-type"], "text/html");
    assert_eq!(res.headers()["x-content-type-options"], "nosniff");

    // Refused: a type the bytes contradict, another type, no body, too big.
    problem(
        upload(&w, HTML, Some("image/png"), &writer).await,
        422,
        "file_type_mismatch",
    )
    .await;
    problem(
        upload(&w, b"just text", Some("text/html"), &writer).await,
        422,
        "file_type_mismatch",
    )
    .await;
    problem(
        upload(&w, b"<svg/>", Some("image/svg+xml"), &writer).await,
        415,
        "unsupported_media_type",
    )
    .await;
    problem(
        upload(&w, PNG, None, &writer).await,
        415,
        "unsupported_media_type",
    )
    .await;
    problem(
        upload(&w, b"", Some("image/png"), &writer).await,
        400,
        "body_required",
    )
    .await;
    let big = [PNG, &vec![0u8; accord::limits::MAX_FILE_LEN]].concat();
    problem(
        upload(&w, &big, Some("image/png"), &writer).await,
        413,
        "payload_too_large",
    )
    .await;
    // Unknown files.
    problem(
        download(&w, &"0".repeat(64), &reader).await,
        404,
        "file_not_found",
    )
    .await;
    problem(
        download(&w, "not-a-hash", &reader).await,
        404,
        "file_not_found",
    )
    .await;
    // Scopes: cms.w uploads, cms.r reads.
    problem(
        upload(&w, PNG, Some("image/png"), &reader).await,
        403,
        "insufficient_scope",
    )
    .await;
    problem(download(&w, &sha, &writer).await, 403, "insufficient_scope").await;
    let elsewhere = token(&[scope::CMS_READ], &["other"]);
    problem(
        download(&w, &sha, &elsewhere).await,
        403,
        "project_forbidden",
    )
    .await;
}

#[tokio::test]
async fn the_screen_shown_is_pinned_and_named() {
    let w = serve(Arc::new(MemoryStore::new()), "screens").await;
    let (status, screen) =
        parts(upload(&w, PNG, Some("image/png"), &token(scope::ALL, &["screens"])).await).await;
    assert_eq!(status, 201);
    let sha = screen["sha256"].as_str().unwrap();
    let consent = w.consent("English text", "").await;
    // The consent names its screen: it must be a file of the project.
    let path = w.cms(&format!("svc-consent-v1/{consent}"));
    let mut data = w.ok("GET", &path, None).await["data"].clone();
    data["formScreen"] = json!("0".repeat(64));
    let (status, body) = parts(w.send("PUT", &path, Some(&json!({ "data": data }))).await).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["errors"][0]["code"], "unknown_file", "{body}");
    data["formScreen"] = json!(sha);
    w.ok("PUT", &path, Some(&json!({ "data": data }))).await;

    let accepted = w
        .ok(
            "POST",
            &w.bff("consent-acceptance"),
            Some(&acceptance(&consent, None)),
        )
        .await;
    assert_eq!(accepted["formScreen"], sha);
    let id = accepted["id"].as_str().unwrap();
    let receipt = w.ok("GET", &w.c(&format!("/receipts/{id}")), None).await;
    assert_eq!(receipt["receipt"]["formScreen"], sha);
    let history = w
        .ok("GET", &w.c("/subjects/history?dataSubject=u1"), None)
        .await;
    assert_eq!(history[0]["formScreen"], sha, "{history}");
    assert_eq!(history[0]["language"], "en", "{history}");
    let export = w
        .ok(
            "POST",
            &w.c("/subjects/export"),
            Some(&json!({"dataSubject": "u1"})),
        )
        .await;
    assert_eq!(
        export["acceptances"][0]["data"]["formScreen"], sha,
        "{export}"
    );
    // An application that names another screen: it must exist.
    let mut body = acceptance(&consent, None);
    body["formScreen"] = json!("f".repeat(64));
    let (status, problem_body) = parts(
        w.send("POST", &w.bff("consent-acceptance"), Some(&body))
            .await,
    )
    .await;
    assert_eq!(status, 422, "{problem_body}");
    assert_eq!(problem_body["code"], "unknown_file");
    let _: Value = problem_body;
}
