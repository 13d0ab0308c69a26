//! `accord serve` and the keys of consent evidence: erasure's pseudonyms
//! and receipt signatures survive a restart, kept with the data or
//! configured, and a rotated receipt key leaves the receipts it signed
//! verifiable.
#![cfg(feature = "cli")]

use accord::cli::{Cli, Command as Sub, ServeArgs};
use accord::http::receipt::verify_receipt_with_jwks;
use serde_json::{json, Value};

fn serve_args(argv: &[&str]) -> ServeArgs {
    let mut full = vec!["accord"];
    full.extend_from_slice(argv);
    match Cli::try_parse_with_config(full).unwrap().command {
        Some(Sub::Serve(args)) => args,
        other => panic!("not serve: {other:?}"),
    }
}

/// A server started in-process over `--demo` data, and a client with its
/// development token.
struct Running {
    started: accord::cli::Started,
    stop: tokio::sync::oneshot::Sender<()>,
    token: String,
    client: reqwest::Client,
}

impl Running {
    async fn start(argv: &[&str]) -> Running {
        let mut full = vec!["serve", "--demo", "--addr", "127.0.0.1:0"];
        full.extend_from_slice(argv);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let started = accord::cli::serve::start(serve_args(&full), async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
        let token = started.generated.as_ref().unwrap().token.clone();
        Running {
            started,
            stop,
            token,
            client: reqwest::Client::new(),
        }
    }

    async fn stop(self) {
        self.stop.send(()).unwrap();
        self.started.done.await.unwrap().unwrap();
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self
            .client
            .request(method, format!("http://{}{path}", self.started.addr))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let res = req.send().await.unwrap();
        let status = res.status();
        let body: Value = res.json().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {body}");
        body
    }

    async fn jwks(&self) -> Value {
        self.call(reqwest::Method::GET, "/.well-known/jwks.json", None)
            .await
    }

    /// `subject` accepts the demo consent; its signed receipt.
    async fn accept(&self, subject: &str) -> String {
        let offered = self
            .call(
                reqwest::Method::GET,
                &format!(
                    "/bff/api/consent/projects/demo/to-accept?app=demo-app&dataSubject={subject}"
                ),
                None,
            )
            .await;
        let consent = offered[0]["id"].as_str().unwrap().to_owned();
        let accepted = self
            .call(
                reqwest::Method::POST,
                "/bff/api/consent/projects/demo/consent-acceptance",
                Some(json!({
                    "app": "demo-app", "dataSubject": subject, "consentId": consent,
                    "userAgent": "test", "country": "TH", "localIp": "10.0.0.1",
                    "osVersion": "Linux", "model": "laptop", "deviceFingerprintId": "fp-1",
                })),
            )
            .await;
        let id = accepted["id"].as_str().unwrap();
        let receipt = self
            .call(
                reqwest::Method::GET,
                &format!("/consent/api/projects/demo/receipts/{id}"),
                None,
            )
            .await;
        receipt["jws"].as_str().unwrap().to_owned()
    }

    /// Erases `subject`; its pseudonym.
    async fn erase(&self, subject: &str) -> String {
        let report = self
            .call(
                reqwest::Method::POST,
                "/consent/api/projects/demo/subjects/erase",
                Some(json!({ "dataSubject": subject })),
            )
            .await;
        report["pseudonym"].as_str().unwrap().to_owned()
    }
}

fn kids(jwks: &Value) -> Vec<String> {
    jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn pseudonyms_and_receipts_survive_restarts_and_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("accord.db").display());

    // Nothing configured: the keys are kept with the data.
    let first = Running::start(&["--database-url", &db]).await;
    let old_receipt = first.accept("alice").await;
    let pseudonym = first.erase("alice").await;
    let kept_kids = kids(&first.jwks().await);
    assert_eq!(kept_kids.len(), 1);
    first.stop().await;

    let second = Running::start(&["--database-url", &db]).await;
    assert_eq!(kids(&second.jwks().await), kept_kids);
    verify_receipt_with_jwks(&old_receipt, &second.jwks().await).unwrap();
    second.accept("alice").await;
    assert_eq!(
        second.erase("alice").await,
        pseudonym,
        "one person, one pseudonym, across restarts"
    );
    second.stop().await;

    // A configured key signs; the kept one and the listed retired one stay
    // published, so every earlier receipt verifies.
    let configured = "2a".repeat(32);
    let retired = "17".repeat(32);
    let pseudonym_key = "a pseudonym key of at least thirty-two bytes";
    let third = Running::start(&[
        "--database-url",
        &db,
        "--receipt-key",
        &configured,
        "--receipt-retired-key",
        &retired,
        "--pseudonym-key",
        pseudonym_key,
        "--receipt-controller",
        "Example Co.",
    ])
    .await;
    let jwks = third.jwks().await;
    let published = kids(&jwks);
    assert_eq!(published.len(), 3, "{jwks}");
    assert_eq!(published[1], kept_kids[0]);
    verify_receipt_with_jwks(&old_receipt, &jwks).unwrap();
    let new_receipt = third.accept("bob").await;
    let checked = verify_receipt_with_jwks(&new_receipt, &jwks).unwrap();
    assert_eq!(checked.pii_controllers[0].pii_controller, "Example Co.");
    let header = new_receipt.split('.').next().unwrap();
    let header: Value = serde_json::from_slice(
        &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, header).unwrap(),
    )
    .unwrap();
    assert_eq!(
        header["kid"],
        published[0].as_str(),
        "the configured key signs"
    );
    let bob = third.erase("bob").await;
    assert_ne!(bob, pseudonym);
    third.stop().await;

    // The configured pseudonym key gives the same pseudonym anywhere, even
    // on a store that keeps nothing.
    let fourth = Running::start(&[
        "--database-url",
        "memory:",
        "--pseudonym-key",
        pseudonym_key,
    ])
    .await;
    fourth.accept("bob").await;
    assert_eq!(fourth.erase("bob").await, bob);
    // Without the retired keys, an old receipt has no published key.
    assert!(verify_receipt_with_jwks(&old_receipt, &fourth.jwks().await).is_err());
    fourth.stop().await;

    // Keys that are not keys are refused at start.
    for bad in [
        vec!["--receipt-key", "abc"],
        vec!["--pseudonym-key", "short"],
        vec!["--receipt-retired-key", "not-a-key"],
    ] {
        let mut argv = vec![
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--database-url",
            "memory:",
        ];
        argv.extend(bad.iter().copied());
        let err = accord::cli::serve::start(serve_args(&argv), std::future::pending())
            .await
            .unwrap_err();
        assert!(err.to_string().contains(bad[0]), "{bad:?}: {err}");
    }
}
