//! `accord token` signs with a private key (RS256, ES256, EdDSA), and
//! `accord serve` verifying with the matching JWKS accepts what it signs.
#![cfg(feature = "cli")]

use std::process::Command;

use accord::cli::{Cli, Command as Sub};

/// Runs the built `accord` binary; (status code, stdout, stderr).
fn accord(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_accord"))
        .args(args)
        .env_remove("ACCORD_JWT_SECRET")
        .env_remove("ACCORD_JWT_ISSUER")
        .env_remove("ACCORD_JWT_AUDIENCE")
        .env_remove("ACCORD_CONFIG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn data(name: &str) -> String {
    format!("{}/tests/data/jwt/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_signed_with_private_keys_are_accepted_by_serve() {
    let jwks = data("jwks_before.json");
    let argv = [
        "accord",
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--database-url",
        "memory:",
        "--jwks-file",
        &jwks,
        "--jwt-issuer",
        "https://id.example",
        "--jwt-audience",
        "accord",
    ];
    let Some(Sub::Serve(args)) = Cli::try_parse_with_config(argv).unwrap().command else {
        panic!("serve")
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = accord::cli::serve::start(args, async {
        let _ = stopped.await;
    })
    .await
    .unwrap();
    let client = reqwest::Client::new();
    let status = |token: String| {
        let client = client.clone();
        let url = format!(
            "http://{}/campaign/api/projects/shop/campaigns",
            started.addr
        );
        async move {
            client
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let mint = |key: &str, kid: &str, extra: &[&str]| {
        let key = data(key);
        let mut argv = vec![
            "token",
            "--project",
            "shop",
            "--scope",
            "campaign.admin",
            "--jwt-private-key-file",
            &key,
            "--jwt-kid",
            kid,
        ];
        argv.extend_from_slice(extra);
        let (code, out, err) = accord(&argv);
        assert_eq!(code, 0, "{key}: {err}");
        out.trim().to_owned()
    };
    let claims = [
        "--jwt-issuer",
        "https://id.example",
        "--jwt-audience",
        "accord",
    ];
    for (key, kid, alg) in [
        ("rsa_private.pem", "rsa-1", "RS256"),
        ("ec_private.pem", "ec-1", "ES256"),
        ("ed25519_private.pem", "ed-1", "EdDSA"),
    ] {
        let token = mint(key, kid, &claims);
        let header = jsonwebtoken::decode_header(&token).unwrap();
        assert_eq!(format!("{:?}", header.alg), alg);
        assert_eq!(status(token).await, 200, "{alg}");
        // Without the issuer and audience the server requires: refused.
        assert_eq!(
            status(mint(key, kid, &[])).await,
            401,
            "{alg} without iss/aud"
        );
        // Under another key's id: refused.
        let other = if kid == "ed-1" { "rsa-1" } else { "ed-1" };
        assert_eq!(
            status(mint(key, other, &claims)).await,
            401,
            "{alg} as {other}"
        );
    }
    // A key the set does not hold is refused.
    let stranger = mint("rsa2_private.pem", "rsa-1", &claims);
    assert_eq!(status(stranger).await, 401);
    stop.send(()).unwrap();
    started.done.await.unwrap().unwrap();
}

/// A file that is no private key is an error naming it.
#[test]
fn a_public_key_does_not_sign() {
    let (code, _, err) = accord(&[
        "token",
        "--project",
        "shop",
        "--jwt-private-key-file",
        &data("rsa_public.pem"),
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("rsa_public.pem: not a PEM private key"),
        "{err}"
    );
}

/// The admin console's requests carry a request id and are counted in
/// `/metrics` beside the API's, by route template.
#[tokio::test(flavor = "multi_thread")]
async fn the_console_has_request_ids_and_metrics() {
    let argv = [
        "accord",
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--database-url",
        "memory:",
        "--jwt-secret",
        "a-fixed-secret-of-at-least-32-bytes!",
    ];
    let Some(Sub::Serve(args)) = Cli::try_parse_with_config(argv).unwrap().command else {
        panic!("serve")
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = accord::cli::serve::start(args, async {
        let _ = stopped.await;
    })
    .await
    .unwrap();
    let base = format!("http://{}", started.addr);
    let client = reqwest::Client::new();
    let res = client
        .get(format!("{base}/admin/p/secret-project/campaigns?q=alice"))
        .header("x-request-id", "trace-42")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-request-id"], "trace-42");
    let res = client.get(format!("{base}/admin/")).send().await.unwrap();
    assert!(res.headers().contains_key("x-request-id"));
    let metrics = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("route=\"/admin/p/{project}/campaigns\""),
        "{metrics}"
    );
    assert!(!metrics.contains("secret-project") && !metrics.contains("alice"));
    stop.send(()).unwrap();
    started.done.await.unwrap().unwrap();
}
