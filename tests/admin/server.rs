//! Sessions, CSRF, headers and sign-in, without a browser.

use std::time::Duration;

use accord::http::scope;
use axum::http::{header, StatusCode};

use crate::support::*;

fn run<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn every_response_carries_the_security_headers() {
    run(async {
        let app = app();
        let mut c = Client::new(&app);
        for path in [
            "/admin/signin",
            "/admin/static/admin.css",
            "/admin/no-such-page",
            "/admin/signin/link?code=nope",
        ] {
            let page = c.get(path).await;
            let h = |n: header::HeaderName| {
                page.headers
                    .get(n)
                    .map(|v| v.to_str().unwrap().to_owned())
                    .unwrap_or_default()
            };
            let csp = h(header::CONTENT_SECURITY_POLICY);
            assert!(csp.starts_with("default-src 'self'"), "{path}: CSP {csp:?}");
            assert!(
                csp.contains("frame-ancestors 'none'"),
                "{path}: CSP {csp:?}"
            );
            assert!(!csp.contains("unsafe-inline"), "{path}: CSP {csp:?}");
            assert_eq!(h(header::REFERRER_POLICY), "same-origin", "{path}");
            assert_eq!(h(header::X_CONTENT_TYPE_OPTIONS), "nosniff", "{path}");
        }
        let missing = c.get("/admin/no-such-page").await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND);
        assert!(missing.body.contains("<h1>Not found</h1>"));
    });
}

#[test]
fn no_page_has_inline_script_or_style() {
    run(async {
        let app = app();
        let mut c = Client::new(&app);
        let page = c.get("/admin/signin").await;
        assert!(page.body.contains("<script src=\"/admin/static/admin.js\""));
        assert!(!page.body.contains("<script>"), "inline script");
        assert!(!page.body.contains("style="), "inline style");
        assert!(!page.body.contains("<style"), "inline style element");
    });
}

#[test]
fn sign_in_needs_the_form_token_of_its_cookie() {
    run(async {
        let app = app();
        let mut c = Client::new(&app);
        let t = token(scope::ALL);
        // No token field at all, and no cookie.
        let res = c.post("/admin/signin", &[("token", &t)]).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{}", res.body);
        // A cookie, but the form carries another value.
        c.get("/admin/signin").await;
        let res = c
            .post("/admin/signin", &[("csrf", "0000"), ("token", &t)])
            .await;
        assert_eq!(res.status, StatusCode::FORBIDDEN);
        assert!(!c.cookies.contains_key("accord_admin"), "signed in anyway");
    });
}

#[test]
fn a_bad_token_is_refused_and_not_echoed() {
    run(async {
        let app = app();
        let mut c = Client::new(&app);
        let page = c.get("/admin/signin").await;
        let forged = format!("{}x", token(scope::ALL));
        let res = c
            .post(
                "/admin/signin",
                &[("csrf", &page.csrf()), ("token", &forged)],
            )
            .await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED);
        assert!(res.body.contains("Sign-in failed"), "{}", res.body);
        assert!(!res.body.contains(&forged), "the token was echoed");
        assert!(!c.cookies.contains_key("accord_admin"));
        // An expired token says so.
        let page = c.get("/admin/signin").await;
        let mut claims = accord::http::Claims::all_scopes("a", &[P], Duration::from_secs(1));
        claims.exp -= 3600;
        let old = claims.sign_hs256(SECRET.as_bytes()).unwrap();
        let res = c
            .post("/admin/signin", &[("csrf", &page.csrf()), ("token", &old)])
            .await;
        assert!(res.body.contains("expired"), "{}", res.body);
    });
}

#[test]
fn the_session_cookie_is_http_only_strict_and_secure_over_tls() {
    run(async {
        let app = app();
        let mut c = Client::new(&app);
        let page = c.get("/admin/signin").await;
        let res = c
            .post(
                "/admin/signin",
                &[("csrf", &page.csrf()), ("token", &token(scope::ALL))],
            )
            .await;
        let cookie = res
            .headers
            .get_all(header::SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .find(|v| v.starts_with("accord_admin="))
            .expect("a session cookie");
        assert!(cookie.contains("HttpOnly"), "{cookie}");
        assert!(cookie.contains("SameSite=Strict"), "{cookie}");
        assert!(cookie.contains("Path=/admin"), "{cookie}");
        assert!(
            !cookie.contains("Secure"),
            "Secure over plain HTTP: {cookie}"
        );
        let session = cookie.split(';').next().unwrap().split_once('=').unwrap().1;
        assert_eq!(
            session.len(),
            64,
            "the cookie holds a random id, not a token"
        );

        // Behind a TLS proxy, the cookie is Secure.
        let req = axum::http::Request::get("/admin/signin")
            .header("x-forwarded-proto", "https")
            .body(axum::body::Body::empty())
            .unwrap();
        let res = tower::ServiceExt::oneshot(app.router.clone(), req)
            .await
            .unwrap();
        let set = res
            .headers()
            .get(header::SET_COOKIE)
            .unwrap()
            .to_str()
            .unwrap();
        assert!(set.contains("; Secure"), "{set}");
    });
}

#[test]
fn a_session_ends_when_its_token_expires() {
    run(async {
        let app = app();
        let mut c = Client::new(&app);
        let short = token_for("bob", scope::ALL, &[P], Duration::from_secs(2));
        c.sign_in(&short).await;
        let home = c.get(&format!("/admin/p/{P}/")).await;
        assert_eq!(home.status, StatusCode::SEE_OTHER);
        assert_ne!(home.location(), "/admin/signin");
        tokio::time::sleep(Duration::from_millis(2100)).await;
        let later = c.get(&format!("/admin/p/{P}/")).await;
        assert_eq!(
            later.location(),
            "/admin/signin",
            "the session outlived its token"
        );
    });
}

#[test]
fn sign_out_ends_the_session_and_needs_the_csrf_token() {
    run(async {
        let app = app();
        let mut c = Client::new(&app);
        c.sign_in(&token(&[])).await;
        let old = c.cookies.clone();
        let csrf = c.csrf_on(&format!("/admin/p/{P}/")).await;
        let refused = c.post("/admin/signout", &[]).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        let out = c.post("/admin/signout", &[("csrf", &csrf)]).await;
        assert_eq!(out.location(), "/admin/signin?signed_out=1");
        assert!(!c.cookies.contains_key("accord_admin"));
        assert!(app.admin.sessions().is_empty());
        // The old cookie is worth nothing now.
        c.cookies = old;
        let page = c.get(&format!("/admin/p/{P}/")).await;
        assert_eq!(page.location(), "/admin/signin");
    });
}

#[test]
fn a_one_time_link_signs_in_once() {
    run(async {
        let app = app();
        let path = app.admin.one_time_link(&token(scope::ALL)).unwrap();
        assert!(app.admin.one_time_link("not a token").is_err());
        let code = path.split("code=").nth(1).unwrap();
        let mut c = Client::new(&app);
        // Opening the link (a previewer, say) does not spend it.
        let landing = c.get(&path).await;
        assert_eq!(landing.status, StatusCode::OK);
        let landing = c.get(&path).await;
        let res = c
            .post(
                "/admin/signin/link",
                &[("csrf", &landing.csrf()), ("code", code)],
            )
            .await;
        assert_eq!(res.status, StatusCode::SEE_OTHER, "{}", res.body);
        assert!(c.cookies.contains_key("accord_admin"));

        let mut other = Client::new(&app);
        let again = other.get(&path).await;
        assert_eq!(again.status, StatusCode::GONE);
        assert!(again.body.contains("expired or has already been used"));
        let csrf = other.get("/admin/signin").await.csrf();
        let res = other
            .post("/admin/signin/link", &[("csrf", &csrf), ("code", code)])
            .await;
        assert_eq!(res.status, StatusCode::GONE, "a link worked twice");
        assert!(!other.cookies.contains_key("accord_admin"));
    });
}

#[test]
fn pages_of_a_project_outside_the_token_are_forbidden() {
    run(async {
        let app = app();
        let mut c = Client::new(&app);
        c.sign_in(&token(scope::ALL)).await;
        let page = c.get("/admin/p/other/").await;
        assert_eq!(page.status, StatusCode::FORBIDDEN);
        // Signed out, any page sends to sign-in.
        let mut anon = Client::new(&app);
        assert_eq!(
            anon.get(&format!("/admin/p/{P}/")).await.location(),
            "/admin/signin"
        );
    });
}

#[test]
fn the_project_picker_lists_the_tokens_projects() {
    run(async {
        let app = app();
        let mut c = Client::new(&app);
        let t = token_for(
            "carol",
            scope::ALL,
            &["shop", "<b>bold</b>"],
            Duration::from_secs(600),
        );
        c.sign_in(&t).await;
        let page = c.get("/admin/").await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.body.contains(">shop</a>"));
        assert!(
            page.body.contains("&#60;b&#62;bold&#60;/b&#62;")
                || page.body.contains("&lt;b&gt;bold&lt;/b&gt;"),
            "a project id was not escaped: {}",
            page.body
        );
        // One project: straight to it.
        let mut d = Client::new(&app);
        d.sign_in(&token(scope::ALL)).await;
        assert_eq!(d.get("/admin/").await.location(), "/admin/p/shop/");
    });
}

#[test]
fn a_confirmation_survives_redirects_and_shows_once() {
    run(async {
        let app = app();
        let mut c = Client::new(&app);
        c.sign_in(&token(scope::ALL)).await;
        let csrf = c.csrf_on(&format!("/admin/p/{P}/campaigns")).await;
        // Without JavaScript the settings form has no page to go back to:
        // home, which redirects twice before a page shows the message.
        let res = c
            .post(
                "/admin/settings",
                &[("csrf", &csrf), ("offset", "+07:00"), ("back", "")],
            )
            .await;
        assert_eq!(res.location(), "/admin/");
        let hop = c.get("/admin/").await;
        let hop = c.get(hop.location()).await;
        let page = c.get(hop.location()).await;
        assert!(
            page.body.contains("Times are now shown in UTC+07:00."),
            "{}",
            page.body
        );
        let again = c.get(&format!("/admin/p/{P}/campaigns")).await;
        assert!(!again.body.contains("Times are now shown"), "shown twice");
        assert!(again.body.contains("<option value=\"+07:00\" selected>"));
        // Another site's address is never a place to go back to.
        let res = c
            .post(
                "/admin/settings",
                &[
                    ("csrf", &csrf),
                    ("offset", "+07:00"),
                    ("back", "https://evil.example/"),
                ],
            )
            .await;
        assert_eq!(res.location(), "/admin/");
    });
}
