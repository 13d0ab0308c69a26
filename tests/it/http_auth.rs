//! Authentication and authorization over a real TCP socket: every way a
//! token can be wrong (401), every scope and project rule (403), on every
//! route of the router.
#![cfg(feature = "http")]

use crate::http_support;

use accord::http::{scope, Access, Auth, ROUTES};
use chrono::Utc;
use http_support::{claims, parts, problem, start, start_with, token, Server, P, SECRET};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::{Method, Response};
use serde_json::{json, Value};

const RSA_PRIVATE: &str = include_str!("../data/jwt/rsa_private.pem");
const RSA_PUBLIC: &str = include_str!("../data/jwt/rsa_public.pem");
const EC_PRIVATE: &str = include_str!("../data/jwt/ec_private.pem");
const EC_PUBLIC: &str = include_str!("../data/jwt/ec_public.pem");

/// base64url without padding, for hand-made tokens.
fn b64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, &b| n << 8 | u32::from(b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fn sign(alg: Algorithm, key: &EncodingKey, claims: &Value) -> String {
    jsonwebtoken::encode(&Header::new(alg), claims, key).unwrap()
}

/// An HS256 token of `claims` under the hand-made header `header`, signed
/// with the test secret: a header jsonwebtoken's `Header` cannot express.
fn sign_with_header(header: &Value, claims: &Value) -> String {
    let message = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let key = EncodingKey::from_secret(SECRET.as_bytes());
    let signature = jsonwebtoken::crypto::sign(message.as_bytes(), &key, Algorithm::HS256).unwrap();
    format!("{message}.{signature}")
}

fn good_claims() -> Value {
    serde_json::to_value(claims(scope::ALL, &[P])).unwrap()
}

/// The concrete path of a route template, in project `project`.
fn concrete(path: &str, project: &str) -> String {
    path.replace("{projId}", project)
        .replace("{id}", "00000000-0000-4000-8000-000000000000")
        .replace("{type}", "svc-consent-v1")
}

/// Sends the route's method to its path with a JSON body where it takes one.
async fn call(s: &Server, method: &str, path: &str, bearer: Option<&str>) -> Response {
    let method = Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = s.client.request(method.clone(), s.url(path));
    if let Some(t) = bearer {
        req = req.bearer_auth(t);
    }
    if method == Method::POST || method == Method::PUT {
        req = req.json(&json!({}));
    }
    req.send().await.unwrap()
}

async fn search_with(s: &Server, authorization: Option<&str>) -> Response {
    let mut req = s.client.post(s.campaign_url("/search")).json(&json!({}));
    if let Some(a) = authorization {
        req = req.header("authorization", a);
    }
    req.send().await.unwrap()
}

fn challenge(res: &Response) -> String {
    res.headers()
        .get("www-authenticate")
        .expect("a WWW-Authenticate header")
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_valid_token_passes() {
    let s = start().await;
    let res = search_with(&s, Some(&format!("Bearer {}", s.admin))).await;
    assert_eq!(res.status(), 200);
    // The scheme is case-insensitive (RFC 7235).
    let res = search_with(&s, Some(&format!("bearer {}", s.admin))).await;
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn a_missing_token_is_401_with_a_bare_challenge() {
    let s = start().await;
    let res = search_with(&s, None).await;
    let c = challenge(&res);
    assert!(c.starts_with("Bearer") && !c.contains("error="), "{c}");
    problem(res, 401, "unauthorized").await;
}

#[tokio::test]
async fn every_bad_token_is_401_invalid_token() {
    let s = start().await;
    let hs = EncodingKey::from_secret(SECRET.as_bytes());
    let now = Utc::now().timestamp();
    let mut expired = good_claims();
    expired["exp"] = json!(now - 3600);
    let mut no_exp = good_claims();
    no_exp.as_object_mut().unwrap().remove("exp");
    let mut no_sub = good_claims();
    no_sub.as_object_mut().unwrap().remove("sub");
    let mut not_yet = good_claims();
    not_yet["nbf"] = json!(now + 3600);
    let mut projects_not_a_list = good_claims();
    projects_not_a_list["projects"] = json!("shop");
    let payload = b64(good_claims().to_string().as_bytes());
    let none = format!("{}.{payload}.", b64(br#"{"alg":"none","typ":"JWT"}"#));
    let none_upper = format!("{}.{payload}.", b64(br#"{"alg":"NONE","typ":"JWT"}"#));
    let cases: Vec<(&str, String)> = vec![
        ("garbage", "Bearer abc.def.ghi".to_owned()),
        ("not a JWT", "Bearer hello".to_owned()),
        ("empty bearer", "Bearer ".to_owned()),
        ("basic scheme", "Basic dXNlcjpwYXNz".to_owned()),
        (
            "wrong signature",
            format!(
                "Bearer {}",
                sign(
                    Algorithm::HS256,
                    &EncodingKey::from_secret(b"another-secret-another-secret-!!"),
                    &good_claims()
                )
            ),
        ),
        (
            "expired",
            format!("Bearer {}", sign(Algorithm::HS256, &hs, &expired)),
        ),
        (
            "no exp",
            format!("Bearer {}", sign(Algorithm::HS256, &hs, &no_exp)),
        ),
        (
            "no sub",
            format!("Bearer {}", sign(Algorithm::HS256, &hs, &no_sub)),
        ),
        (
            "not valid yet",
            format!("Bearer {}", sign(Algorithm::HS256, &hs, &not_yet)),
        ),
        (
            "projects not a list",
            format!(
                "Bearer {}",
                sign(Algorithm::HS256, &hs, &projects_not_a_list)
            ),
        ),
        ("alg none", format!("Bearer {none}")),
        ("alg NONE", format!("Bearer {none_upper}")),
        (
            "HS512 with the right secret",
            format!("Bearer {}", sign(Algorithm::HS512, &hs, &good_claims())),
        ),
        (
            "RS256 on an HS256 server",
            format!(
                "Bearer {}",
                sign(
                    Algorithm::RS256,
                    &EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap(),
                    &good_claims()
                )
            ),
        ),
    ];
    for (what, header) in cases {
        let res = search_with(&s, Some(&header)).await;
        assert_eq!(res.status(), 401, "{what}");
        let c = challenge(&res);
        assert!(
            c.starts_with("Bearer") && c.contains(r#"error="invalid_token""#),
            "{what}: {c}"
        );
        problem(res, 401, "invalid_token").await;
    }
}

/// Tokens that are signed right but name nobody, or whose header asks the
/// verifier for more than it does (RFC 7515 `crit`, RFC 7797 `b64`).
#[tokio::test]
async fn tokens_naming_nobody_or_asking_for_more_are_401() {
    let s = start().await;
    let hs = EncodingKey::from_secret(SECRET.as_bytes());
    let now = Utc::now().timestamp();
    let mut empty_sub = good_claims();
    empty_sub["sub"] = json!("");
    let mut blank_sub = good_claims();
    blank_sub["sub"] = json!("  ");
    let mut sub_not_a_string = good_claims();
    sub_not_a_string["sub"] = json!(42);
    let mut exp_not_a_number = good_claims();
    exp_not_a_number["exp"] = json!((now + 3600).to_string());
    // The hand-made signing is right: the same header without the
    // refused parameters passes.
    let plain = sign_with_header(&json!({"alg": "HS256", "typ": "JWT"}), &good_claims());
    let res = search_with(&s, Some(&format!("Bearer {plain}"))).await;
    assert_eq!(res.status(), 200);
    let cases: Vec<(&str, String)> = vec![
        (
            "empty sub",
            format!("Bearer {}", sign(Algorithm::HS256, &hs, &empty_sub)),
        ),
        (
            "blank sub",
            format!("Bearer {}", sign(Algorithm::HS256, &hs, &blank_sub)),
        ),
        (
            "sub not a string",
            format!("Bearer {}", sign(Algorithm::HS256, &hs, &sub_not_a_string)),
        ),
        (
            "exp not a number",
            format!("Bearer {}", sign(Algorithm::HS256, &hs, &exp_not_a_number)),
        ),
        (
            "crit naming an extension",
            format!(
                "Bearer {}",
                sign_with_header(
                    &json!({"alg": "HS256", "typ": "JWT", "crit": ["exp"]}),
                    &good_claims()
                )
            ),
        ),
        (
            "crit naming an unknown extension",
            format!(
                "Bearer {}",
                sign_with_header(
                    &json!({"alg": "HS256", "crit": ["urn:example:x"], "urn:example:x": 1}),
                    &good_claims()
                )
            ),
        ),
        (
            "unencoded payload (b64: false)",
            format!(
                "Bearer {}",
                sign_with_header(
                    &json!({"alg": "HS256", "b64": false, "crit": ["b64"]}),
                    &good_claims()
                )
            ),
        ),
        (
            "b64: false without crit",
            format!(
                "Bearer {}",
                sign_with_header(&json!({"alg": "HS256", "b64": false}), &good_claims())
            ),
        ),
    ];
    for (what, header) in cases {
        let res = search_with(&s, Some(&header)).await;
        assert_eq!(res.status(), 401, "{what}");
        problem(res, 401, "invalid_token").await;
    }
}

#[tokio::test]
async fn rs256_pins_its_algorithm() {
    let s = start_with(Auth::public_key_pem(RSA_PUBLIC.as_bytes()).unwrap()).await;
    let rsa = EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap();
    let ok = sign(Algorithm::RS256, &rsa, &good_claims());
    assert_eq!(
        search_with(&s, Some(&format!("Bearer {ok}")))
            .await
            .status(),
        200
    );
    // Algorithm confusion: HS256 "signed" with the public key as the secret.
    let confused = sign(
        Algorithm::HS256,
        &EncodingKey::from_secret(RSA_PUBLIC.as_bytes()),
        &good_claims(),
    );
    let res = search_with(&s, Some(&format!("Bearer {confused}"))).await;
    problem(res, 401, "invalid_token").await;
    // Another RSA algorithm with the same key is not accepted either.
    let rs512 = sign(Algorithm::RS512, &rsa, &good_claims());
    let res = search_with(&s, Some(&format!("Bearer {rs512}"))).await;
    problem(res, 401, "invalid_token").await;
    // An HS256 token of the test secret means nothing here.
    let res = search_with(&s, Some(&format!("Bearer {}", token(scope::ALL, &[P])))).await;
    problem(res, 401, "invalid_token").await;
}

#[tokio::test]
async fn es256_pins_its_algorithm() {
    let s = start_with(Auth::public_key_pem(EC_PUBLIC.as_bytes()).unwrap()).await;
    let ec = EncodingKey::from_ec_pem(EC_PRIVATE.as_bytes()).unwrap();
    let ok = sign(Algorithm::ES256, &ec, &good_claims());
    assert_eq!(
        search_with(&s, Some(&format!("Bearer {ok}")))
            .await
            .status(),
        200
    );
    let confused = sign(
        Algorithm::HS256,
        &EncodingKey::from_secret(EC_PUBLIC.as_bytes()),
        &good_claims(),
    );
    let res = search_with(&s, Some(&format!("Bearer {confused}"))).await;
    problem(res, 401, "invalid_token").await;
}

#[test]
fn weak_or_wrong_keys_are_refused_at_configuration() {
    assert!(Auth::hs256("short").is_err());
    assert!(Auth::hs256(SECRET).is_ok());
    assert!(Auth::public_key_pem(b"not a key").is_err());
    assert!(Auth::rs256_pem(EC_PUBLIC.as_bytes()).is_err());
    assert_eq!(
        Auth::public_key_pem(RSA_PUBLIC.as_bytes())
            .unwrap()
            .algorithm(),
        "RS256"
    );
    assert_eq!(
        Auth::public_key_pem(EC_PUBLIC.as_bytes())
            .unwrap()
            .algorithm(),
        "ES256"
    );
}

fn bearer_routes() -> impl Iterator<Item = (&'static str, &'static str, &'static [&'static str])> {
    ROUTES.iter().filter_map(|r| match r.access {
        Access::Bearer(scopes) => Some((r.method, r.path, scopes)),
        Access::Public => None,
    })
}

#[tokio::test]
async fn a_token_of_another_project_gets_403_on_every_route() {
    let s = start().await;
    let other = token(scope::ALL, &["other"]);
    let mut checked = 0;
    for (method, path, _) in bearer_routes() {
        let res = call(&s, method, &concrete(path, P), Some(&other)).await;
        problem(res, 403, "project_forbidden").await;
        // The same token in its own project is let in (whatever the route
        // then says about the empty body or the unknown id).
        let res = call(&s, method, &concrete(path, "other"), Some(&other)).await;
        assert!(
            ![401, 403].contains(&res.status().as_u16()),
            "{method} {path}: {}",
            res.status()
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} routes checked");
    // `["*"]` opens every project.
    let star = token(scope::ALL, &["*"]);
    let res = call(
        &s,
        "POST",
        &concrete("/campaign/api/projects/{projId}/search", P),
        Some(&star),
    )
    .await;
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn every_route_needs_exactly_its_scopes() {
    let s = start().await;
    for (method, path, needed) in bearer_routes() {
        let url = concrete(path, P);
        // Every other scope: 403 naming the missing ones.
        let others: Vec<&str> = scope::ALL
            .iter()
            .copied()
            .filter(|x| !needed.contains(x))
            .collect();
        let res = call(&s, method, &url, Some(&token(&others, &[P]))).await;
        let c = challenge(&res);
        assert!(c.contains("insufficient_scope"), "{method} {path}: {c}");
        problem(res, 403, "insufficient_scope").await;
        // Only its scopes: let in.
        let res = call(&s, method, &url, Some(&token(needed, &[P]))).await;
        assert!(
            ![401, 403].contains(&res.status().as_u16()),
            "{method} {path}: {}",
            res.status()
        );
        // No token at all: 401, on every route.
        let res = call(&s, method, &url, None).await;
        problem(res, 401, "unauthorized").await;
    }
}

#[tokio::test]
async fn explain_and_preview_need_campaign_admin() {
    let s = start().await;
    let reader = token(&[scope::CAMPAIGN_READ], &[P]);
    for query in ["?explain=true", "?at=2026-07-01T00:00:00Z"] {
        let res = s
            .client
            .post(s.campaign_url(&format!("/search{query}")))
            .bearer_auth(&reader)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        problem(res, 403, "insufficient_scope").await;
    }
    let res = s
        .client
        .post(s.campaign_url("/search?explain=false"))
        .bearer_auth(&reader)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let (status, body) = parts(res).await;
    assert_eq!((status, body["actions"].clone()), (200, json!([])));
}

#[tokio::test]
async fn operations_routes_need_no_token() {
    let s = start().await;
    for r in ROUTES.iter().filter(|r| r.access == Access::Public) {
        let res = call(&s, r.method, r.path, None).await;
        assert_eq!(res.status(), 200, "{}", r.path);
    }
}

/// An RS256 server refuses `alg: none` in every spelling, with or without
/// a signature part, and never takes a key from the token itself: a token
/// signed with the attacker's key and carrying that key in `jwk` (or
/// pointing at it with `jku`/`x5u`/`kid`) is a bad signature.
#[tokio::test]
async fn rs256_refuses_unsigned_tokens_and_keys_carried_by_the_token() {
    let s = start_with(Auth::public_key_pem(RSA_PUBLIC.as_bytes()).unwrap()).await;
    let payload = b64(good_claims().to_string().as_bytes());
    let mut forged = Vec::new();
    for alg in ["none", "None", "NONE", "nOnE"] {
        let header = b64(json!({"alg": alg, "typ": "JWT"}).to_string().as_bytes());
        forged.push(format!("{header}.{payload}."));
        forged.push(format!("{header}.{payload}"));
        forged.push(format!("{header}.{payload}.{}", b64(b"signature")));
    }
    let attacker =
        EncodingKey::from_rsa_pem(include_bytes!("../data/jwt/attacker_rsa_private.pem")).unwrap();
    let n = include_str!("../data/jwt/attacker_rsa_n.txt").trim();
    for extra in [
        json!({"jwk": {"kty": "RSA", "e": "AQAB", "n": n, "alg": "RS256", "use": "sig"}}),
        json!({"jku": "http://127.0.0.1:9/keys.json", "kid": "attacker"}),
        json!({"x5u": "http://127.0.0.1:9/cert.pem"}),
        json!({"kid": "../../../../dev/null"}),
    ] {
        let mut header = json!({"alg": "RS256", "typ": "JWT"});
        header
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let signing_input = format!("{}.{payload}", b64(header.to_string().as_bytes()));
        let sig = jsonwebtoken::crypto::sign(signing_input.as_bytes(), &attacker, Algorithm::RS256)
            .unwrap();
        forged.push(format!("{signing_input}.{sig}"));
    }
    // The forgeries carrying a key are well made: each verifies against the
    // attacker's public key (the one in `jwk`). Only trust is missing.
    let theirs = jsonwebtoken::DecodingKey::from_rsa_components(n, "AQAB").unwrap();
    let mut validation = jsonwebtoken::Validation::new(Algorithm::RS256);
    validation.validate_aud = false;
    for token in &forged[forged.len() - 4..] {
        jsonwebtoken::decode::<Value>(token, &theirs, &validation).unwrap();
    }
    for token in forged {
        let res = search_with(&s, Some(&format!("Bearer {token}"))).await;
        problem(res, 401, "invalid_token").await;
    }
}

/// A token of `claims` signed with `key` under `alg`, naming key `kid`.
fn sign_kid(alg: Algorithm, key: &EncodingKey, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

async fn status_of(s: &Server, token: &str) -> u16 {
    search_with(s, Some(&format!("Bearer {token}")))
        .await
        .status()
        .as_u16()
}

/// RS256, ES256 and EdDSA tokens verified against a JWKS file, selected by
/// `kid`; the file changes (a key rotated) and the server follows without
/// a restart.
#[tokio::test]
async fn jwks_keys_rotate_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, include_str!("../data/jwt/jwks_before.json")).unwrap();
    let auth = Auth::jwks_file(&path).unwrap();
    assert_eq!(auth.algorithm(), "JWKS");
    let watch = accord::http::auth::jwks::watch_file(
        &auth,
        path.clone(),
        std::time::Duration::from_millis(50),
    );
    let s = start_with(auth).await;
    let rsa1 = EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap();
    let rsa2 = EncodingKey::from_rsa_pem(include_bytes!("../data/jwt/rsa2_private.pem")).unwrap();
    let ec = EncodingKey::from_ec_pem(EC_PRIVATE.as_bytes()).unwrap();
    let ed = EncodingKey::from_ed_pem(include_bytes!("../data/jwt/ed25519_private.pem")).unwrap();
    let claims = good_claims();
    let old = sign_kid(Algorithm::RS256, &rsa1, "rsa-1", &claims);
    let new = sign_kid(Algorithm::RS256, &rsa2, "rsa-2", &claims);
    assert_eq!(status_of(&s, &old).await, 200);
    assert_eq!(
        status_of(&s, &sign_kid(Algorithm::ES256, &ec, "ec-1", &claims)).await,
        200
    );
    assert_eq!(
        status_of(&s, &sign_kid(Algorithm::EdDSA, &ed, "ed-1", &claims)).await,
        200
    );
    let res = search_with(&s, Some(&format!("Bearer {new}"))).await;
    let body = problem(res, 401, "invalid_token").await;
    assert!(body["detail"].as_str().unwrap().contains("kid"), "{body}");

    // Refusals: a key's kid with another algorithm (also the HS256
    // confusion with the public key as secret), another key's kid, no kid
    // in a set of several keys, an unsigned token.
    let confused = sign_kid(
        Algorithm::HS256,
        &EncodingKey::from_secret(RSA_PUBLIC.as_bytes()),
        "rsa-1",
        &claims,
    );
    let ec_as_rsa = sign_kid(Algorithm::ES256, &ec, "rsa-1", &claims);
    let wrong_key = sign_kid(Algorithm::RS256, &rsa2, "rsa-1", &claims);
    let no_kid = sign(Algorithm::RS256, &rsa1, &claims);
    let none = format!(
        "{}.{}.",
        b64(br#"{"alg":"none","kid":"rsa-1"}"#),
        b64(claims.to_string().as_bytes())
    );
    for bad in [confused, ec_as_rsa, wrong_key, no_kid, none] {
        assert_eq!(status_of(&s, &bad).await, 401, "{bad}");
    }

    // Rotation: the set now has rsa-2 instead of rsa-1.
    std::fs::write(&path, include_str!("../data/jwt/jwks_after.json")).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while status_of(&s, &new).await != 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "the new key was not picked up"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(status_of(&s, &old).await, 401);
    // A broken file keeps the keys.
    std::fs::write(&path, "{\"keys\": []}").unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(status_of(&s, &new).await, 200);
    watch.abort();
}

/// A configured issuer and audience are required of every token.
#[tokio::test]
async fn jwks_with_issuer_and_audience() {
    let auth = Auth::jwks(include_bytes!("../data/jwt/jwks_before.json"))
        .unwrap()
        .with_issuer("https://id.example")
        .with_audience("accord");
    let s = start_with(auth).await;
    let ed = EncodingKey::from_ed_pem(include_bytes!("../data/jwt/ed25519_private.pem")).unwrap();
    let mut claims = good_claims();
    assert_eq!(
        status_of(&s, &sign_kid(Algorithm::EdDSA, &ed, "ed-1", &claims)).await,
        401
    );
    claims["iss"] = json!("https://id.example");
    claims["aud"] = json!(["other", "accord"]);
    assert_eq!(
        status_of(&s, &sign_kid(Algorithm::EdDSA, &ed, "ed-1", &claims)).await,
        200
    );
    claims["iss"] = json!("https://evil.example");
    assert_eq!(
        status_of(&s, &sign_kid(Algorithm::EdDSA, &ed, "ed-1", &claims)).await,
        401
    );
    claims["iss"] = json!("https://id.example");
    claims["aud"] = json!("other");
    assert_eq!(
        status_of(&s, &sign_kid(Algorithm::EdDSA, &ed, "ed-1", &claims)).await,
        401
    );
    // Sets without a usable key are refused.
    for bad in [
        &b"{}"[..],
        b"{\"keys\": []}",
        br#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#,
    ] {
        assert!(Auth::jwks(bad).is_err());
    }
}
