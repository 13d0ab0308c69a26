//! Signing in and out, the one-time link, the project picker and the
//! viewer's settings.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use chrono::{FixedOffset, Utc};
use std::collections::HashMap;

use super::guard::{render, Ctx, Fail, Form};
use super::session::{self, random_token, set_cookie, Session, SESSION_COOKIE, SIGNIN_COOKIE};
use super::view::{self, project_base, Nav};
use super::Admin;
use crate::adapter::http::{scope, HttpStore};

#[derive(Template)]
#[template(path = "admin/signin.html")]
struct SigninPage {
    nav: Option<Nav>,
    csrf: String,
    error: Option<String>,
    notice: Option<String>,
    offsets: Vec<(String, String, bool)>,
}

#[derive(Template)]
#[template(path = "admin/link.html")]
struct LinkPage {
    nav: Option<Nav>,
    csrf: String,
    code: String,
    live: bool,
    offsets: Vec<(String, String, bool)>,
}

#[derive(Template)]
#[template(path = "admin/projects.html")]
struct ProjectsPage {
    nav: Option<Nav>,
    projects: Vec<(String, String)>,
    any_project: bool,
}

#[derive(Template)]
#[template(path = "admin/project.html")]
struct ProjectPage {
    nav: Option<Nav>,
}

fn utc() -> FixedOffset {
    FixedOffset::east_opt(0).expect("zero is an offset")
}

fn offsets() -> Vec<(String, String, bool)> {
    (-48..=56)
        .filter_map(|q: i32| FixedOffset::east_opt(q * 15 * 60))
        .map(|o| (view::offset_value(o), view::offset_label(o), o == utc()))
        .collect()
}

/// A page of a sign-in form, with a fresh double-submit token in a cookie.
fn with_signin_cookie(page: Response, csrf: &str, tls: bool) -> Response {
    let mut page = page;
    page.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(SIGNIN_COOKIE, csrf, 3600, tls),
    );
    page
}

fn tls_of<S>(admin: &Admin<S>, headers: &HeaderMap) -> bool {
    admin.secure_cookies
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// `GET /admin/signin`: paste a token.
pub async fn signin_page<S: HttpStore>(
    State(admin): State<Admin<S>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let csrf = random_token();
    let notice = q
        .contains_key("signed_out")
        .then(|| "You are signed out.".to_owned());
    let page = SigninPage {
        nav: None,
        csrf: csrf.clone(),
        error: None,
        notice,
        offsets: offsets(),
    };
    with_signin_cookie(render(&page), &csrf, tls_of(&admin, &headers))
}

/// Starts a session for a verified token and sends the browser home.
fn start<S>(admin: &Admin<S>, token: &str, offset: &str, tls: bool) -> Result<Response, String> {
    let (principal, expires) = session::verify(&admin.auth, token)?;
    let now = Utc::now();
    let id = admin.sessions.create(
        Session {
            principal,
            expires,
            csrf: random_token(),
            offset: view::parse_offset(offset).unwrap_or_else(utc),
            flash: None,
        },
        now,
    );
    let max_age = (expires - now).num_seconds();
    let mut res = Redirect::to("/admin/").into_response();
    let h = res.headers_mut();
    h.append(
        header::SET_COOKIE,
        set_cookie(SESSION_COOKIE, &id, max_age, tls),
    );
    h.append(header::SET_COOKIE, set_cookie(SIGNIN_COOKIE, "", 0, tls));
    Ok(res)
}

/// `POST /admin/signin`: verifies the pasted token and starts a session.
pub async fn signin<S: HttpStore>(
    State(admin): State<Admin<S>>,
    headers: HeaderMap,
    Extension(form): Extension<Form>,
) -> Response {
    let tls = tls_of(&admin, &headers);
    match start(&admin, form.text("token"), form.text("offset"), tls) {
        Ok(res) => res,
        Err(why) => {
            // The token is never echoed back into the page.
            let csrf = random_token();
            let page = SigninPage {
                nav: None,
                csrf: csrf.clone(),
                error: Some(format!("Sign-in failed: {why}.")),
                notice: None,
                offsets: offsets(),
            };
            let res = (StatusCode::UNAUTHORIZED, render(&page)).into_response();
            with_signin_cookie(res, &csrf, tls)
        }
    }
}

/// `GET /admin/signin/link?code=…`: a button that spends the one-time
/// link (a link previewer fetching the address does not spend it).
pub async fn link_page<S: HttpStore>(
    State(admin): State<Admin<S>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let code = q.get("code").cloned().unwrap_or_default();
    let live = admin.links.is_live(&code, Utc::now());
    let csrf = random_token();
    let page = LinkPage {
        nav: None,
        csrf: csrf.clone(),
        code,
        live,
        offsets: offsets(),
    };
    let status = if live {
        StatusCode::OK
    } else {
        StatusCode::GONE
    };
    with_signin_cookie(
        (status, render(&page)).into_response(),
        &csrf,
        tls_of(&admin, &headers),
    )
}

/// `POST /admin/signin/link`: spends the code and starts a session.
pub async fn link_signin<S: HttpStore>(
    State(admin): State<Admin<S>>,
    headers: HeaderMap,
    Extension(form): Extension<Form>,
) -> Response {
    let tls = tls_of(&admin, &headers);
    let Some(token) = admin.links.redeem(form.text("code"), Utc::now()) else {
        let page = LinkPage {
            nav: None,
            csrf: String::new(),
            code: String::new(),
            live: false,
            offsets: Vec::new(),
        };
        return (StatusCode::GONE, render(&page)).into_response();
    };
    start(&admin, &token, form.text("offset"), tls).unwrap_or_else(|why| {
        super::guard::page_error(StatusCode::UNAUTHORIZED, "Sign-in failed", &why)
    })
}

/// `POST /admin/signout`: ends the session.
pub async fn signout<S: HttpStore>(State(admin): State<Admin<S>>, ctx: Ctx) -> Response {
    admin.sessions.remove(&ctx.id);
    let mut res = Redirect::to("/admin/signin?signed_out=1").into_response();
    res.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(SESSION_COOKIE, "", 0, ctx.tls),
    );
    res
}

/// Whether `back` is a page of the console (never another site).
fn local(back: &str) -> bool {
    back.starts_with("/admin/") && !back.starts_with("//") && !back.contains('\\')
}

/// `POST /admin/settings`: the viewer's time offset.
pub async fn settings<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Extension(form): Extension<Form>,
) -> Result<Response, Fail> {
    let offset = view::parse_offset(form.text("offset"))
        .ok_or_else(|| Fail::BadRequest("unknown time offset".to_owned()))?;
    admin.sessions.update(&ctx.id, |s| s.offset = offset);
    ctx.flash(
        &admin,
        format!("Times are now shown in {}.", view::offset_label(offset)),
        false,
    );
    let back = form.text("back");
    Ok(Redirect::to(if local(back) { back } else { "/admin/" }).into_response())
}

/// `GET /admin/`: the project picker (or straight to the only project).
pub async fn home<S: HttpStore>(
    _: State<Admin<S>>,
    ctx: Ctx,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Response, Fail> {
    if let Some(p) = q.get("project").filter(|p| !p.trim().is_empty()) {
        return Ok(Redirect::to(&format!("{}/", project_base(p.trim()))).into_response());
    }
    let projects: Vec<String> = ctx
        .session
        .principal
        .projects
        .iter()
        .flatten()
        .cloned()
        .collect();
    if let [only] = projects.as_slice() {
        return Ok(Redirect::to(&format!("{}/", project_base(only))).into_response());
    }
    let page = ProjectsPage {
        nav: Some(ctx.nav(None, "")),
        any_project: ctx.session.principal.projects.is_none(),
        projects: projects
            .into_iter()
            .map(|p| (format!("{}/", project_base(&p)), p))
            .collect(),
    };
    Ok(render(&page))
}

/// `GET /admin/p/{project}/`: the first section the token may see.
pub async fn project_home<S: HttpStore>(
    _: State<Admin<S>>,
    ctx: Ctx,
    Path(project): Path<String>,
) -> Result<Response, Fail> {
    ctx.project(&project)?;
    let base = project_base(&project);
    let first = [
        (scope::CAMPAIGN_ADMIN, "campaigns"),
        (scope::CAMPAIGN_READ, "redemptions"),
        (scope::CMS_READ, "content/consents"),
        (view::CONSENT_AUDIT, "subjects"),
    ]
    .into_iter()
    .find(|(s, _)| ctx.may(s));
    Ok(match first {
        Some((_, section)) => Redirect::to(&format!("{base}/{section}")).into_response(),
        None => render(&ProjectPage {
            nav: Some(ctx.nav(Some(&project), "")),
        }),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_console_pages_are_places_to_go_back_to() {
        assert!(super::local("/admin/p/demo/campaigns"));
        assert!(!super::local("https://evil.example/"));
        assert!(!super::local("//evil.example/admin/"));
        assert!(!super::local("/admin\\..\\x"));
    }
}
