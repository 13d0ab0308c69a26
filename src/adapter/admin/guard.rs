//! What stands in front of every handler: security headers, the CSRF
//! check of every `POST`, the session extractor, and error pages.

use std::any::Any;

use askama::Template;
use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{header, request::Parts, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use chrono::Utc;

use super::session::{self, Flash, Session, SESSION_COOKIE, SIGNIN_COOKIE};
use super::view::{offset_choices, Nav};
use super::Admin;
use crate::adapter::http::scope;
use crate::adapter::http::{status_of, HttpStore};
use crate::{Error, ErrorKind};

/// Largest form body accepted (a campaign with many rules fits easily).
pub const MAX_FORM_BYTES: usize = 1024 * 1024;

/// `Content-Security-Policy` of every response: nothing but this origin,
/// no inline script or style, never framed, forms post only here.
pub const CSP: &str =
    "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// Adds the security headers to every response of the console.
pub async fn headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !h.contains_key(header::CACHE_CONTROL) {
        // Pages show personal data and per-session tokens: never cached.
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    res
}

/// The fields of a submitted form, in order (names repeat for lists).
#[derive(Debug, Clone, Default)]
pub struct Form(pub Vec<(String, String)>);

impl Form {
    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first value of `name`, or "".
    pub fn text(&self, name: &str) -> &str {
        self.get(name).unwrap_or_default()
    }
}

/// Paths whose forms are posted before there is a session: their CSRF
/// token is the sign-in cookie's (double submit).
fn is_signin(path: &str) -> bool {
    matches!(path, "/admin/signin" | "/admin/signin/link")
}

/// The CSRF check of every state-changing request. Runs before any
/// handler: reads the form body, compares its `csrf` field with the
/// session's token (or the sign-in cookie), and hands the parsed [`Form`]
/// on. A missing or wrong token is a 403 and nothing else happens.
pub async fn csrf<S: HttpStore>(
    State(admin): State<Admin<S>>,
    req: Request,
    next: Next,
) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let is_form = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if !is_form {
        return page_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Not a form",
            "The console only accepts HTML form submissions.",
        );
    }
    let Ok(bytes) = axum::body::to_bytes(body, MAX_FORM_BYTES).await else {
        return page_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Form too large",
            "The form is larger than the console accepts (1 MiB).",
        );
    };
    // Browsers send a textarea's line breaks as CRLF whatever was typed or
    // shown; the stored text keeps the LF it had.
    let form = Form(
        form_urlencoded::parse(&bytes)
            .map(|(k, v)| (k.into_owned(), v.replace("\r\n", "\n")))
            .collect(),
    );
    let expected = if is_signin(parts.uri.path()) {
        session::cookie(&parts.headers, SIGNIN_COOKIE).map(str::to_owned)
    } else {
        session::cookie(&parts.headers, SESSION_COOKIE)
            .and_then(|id| admin.sessions.get(id, Utc::now()))
            .map(|s| s.csrf)
    };
    let sent = form.get("csrf").unwrap_or_default();
    let ok = expected.is_some_and(|e| !sent.is_empty() && session::same_secret(&e, sent));
    if !ok {
        return page_error(
            StatusCode::FORBIDDEN,
            "Form refused",
            "The form's security token is missing or out of date (CSRF protection). \
             Go back, reload the page and submit it again.",
        );
    }
    parts.extensions.insert(form);
    next.run(Request::from_parts(parts, Body::empty())).await
}

/// A signed-in request: the session and its id.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The session id (the cookie's value).
    pub id: String,
    /// The session.
    pub session: Session,
    /// Whether the request came over TLS, as far as the server can tell.
    pub tls: bool,
    /// The sessions, to take the flash message when a page shows it.
    pub sessions: std::sync::Arc<session::Sessions>,
}

/// Whether a request came over TLS: an `https` URI (a TLS listener) or a
/// proxy's `X-Forwarded-Proto: https`. Only used to add `Secure` to
/// cookies, which a forged header can only make stricter.
pub fn over_tls(parts: &Parts) -> bool {
    parts.uri.scheme_str() == Some("https")
        || parts
            .headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

impl<S: HttpStore> FromRequestParts<Admin<S>> for Ctx {
    type Rejection = Fail;

    async fn from_request_parts(parts: &mut Parts, admin: &Admin<S>) -> Result<Self, Fail> {
        let id = session::cookie(&parts.headers, SESSION_COOKIE).ok_or(Fail::SignIn)?;
        let session = admin.sessions.get(id, Utc::now()).ok_or(Fail::SignIn)?;
        Ok(Ctx {
            id: id.to_owned(),
            session,
            tls: over_tls(parts) || admin.secure_cookies,
            sessions: std::sync::Arc::clone(&admin.sessions),
        })
    }
}

impl Ctx {
    /// Whether the token carries `scope`.
    pub fn may(&self, scope: &str) -> bool {
        self.session.principal.has_scope(scope)
    }

    /// 403 unless the token carries every scope of `scopes`.
    pub fn require(&self, scopes: &[&str]) -> Result<(), Fail> {
        let missing: Vec<&str> = scopes.iter().copied().filter(|s| !self.may(s)).collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Fail::Forbidden(format!(
                "This needs the scope {} that your token does not carry.",
                missing.join(" and ")
            )))
        }
    }

    /// 403 unless the token may use `project`.
    pub fn project(&self, project: &str) -> Result<(), Fail> {
        if self.session.principal.may_access(project) {
            Ok(())
        } else {
            Err(Fail::Forbidden(format!(
                "Your token does not give access to project {project:?}."
            )))
        }
    }

    /// Both: the project and the scopes.
    pub fn check(&self, project: &str, scopes: &[&str]) -> Result<(), Fail> {
        self.project(project)?;
        self.require(scopes)
    }

    /// The header of a page of `project`, `section` highlighted; it shows
    /// (and so takes) the message the previous action left.
    pub fn nav(&self, project: Option<&str>, section: &'static str) -> Nav {
        let s = &self.session;
        Nav {
            sub: s.principal.sub.clone(),
            project: project.map(str::to_owned),
            csrf: s.csrf.clone(),
            flash: self.sessions.take_flash(&self.id),
            section,
            campaigns: self.may(scope::CAMPAIGN_ADMIN),
            redemptions: self.may(scope::CAMPAIGN_READ),
            content: self.may(scope::CMS_READ),
            subjects: self.may(scope::CONSENT_AUDIT),
            offsets: offset_choices(s.offset),
        }
    }

    /// Leaves a message for the next page the signed-in user sees.
    pub fn flash<S>(&self, admin: &Admin<S>, text: impl Into<String>, error: bool) {
        let text = text.into();
        admin.sessions.update(&self.id, |s| {
            s.flash = Some(Flash { text, error });
        });
    }
}

/// Why a request gets an error page (or a redirect to sign in).
#[derive(Debug)]
pub enum Fail {
    /// No live session: go and sign in.
    SignIn,
    /// The token lacks the project or a scope.
    Forbidden(String),
    /// No such thing here.
    NotFound(String),
    /// A malformed request.
    BadRequest(String),
    /// An error of a service.
    Service(Error),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Service(e)
    }
}

#[derive(Template)]
#[template(path = "admin/error.html")]
struct ErrorPage<'a> {
    nav: Option<Nav>,
    title: &'a str,
    message: &'a str,
}

/// An error page with `status`.
pub fn page_error(status: StatusCode, title: &str, message: &str) -> Response {
    let page = ErrorPage {
        nav: None,
        title,
        message,
    };
    (status, render(&page)).into_response()
}

/// Renders a template into an HTML response (a template that cannot render
/// is a bug: a 500 page).
pub fn render(t: &impl Template) -> Response {
    match t.render() {
        Ok(html) => Html(html).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "an admin template failed to render");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page could not be rendered",
            )
                .into_response()
        }
    }
}

impl IntoResponse for Fail {
    fn into_response(self) -> Response {
        match self {
            Fail::SignIn => Redirect::to("/admin/signin").into_response(),
            Fail::Forbidden(m) => page_error(StatusCode::FORBIDDEN, "Not allowed", &m),
            Fail::NotFound(m) => page_error(StatusCode::NOT_FOUND, "Not found", &m),
            Fail::BadRequest(m) => page_error(StatusCode::BAD_REQUEST, "Bad request", &m),
            Fail::Service(e) => {
                let status = status_of(e.kind());
                if e.kind() == ErrorKind::Internal {
                    tracing::error!(error = %e.message(), "admin: internal error");
                    page_error(
                        status,
                        "Something went wrong",
                        "The server failed to do this; the details are in its log.",
                    )
                } else if e.kind() == ErrorKind::Unavailable {
                    page_error(
                        status,
                        "Store unavailable",
                        "The database did not answer. Try again in a moment.",
                    )
                } else {
                    page_error(status, "Could not do that", e.message())
                }
            }
        }
    }
}

/// The page of a path the console does not have.
pub async fn not_found() -> Response {
    page_error(
        StatusCode::NOT_FOUND,
        "Not found",
        "There is no such page in the console.",
    )
}

/// A handler that panicked: a 500 page, the panic in the log.
#[allow(clippy::needless_pass_by_value)] // CatchPanicLayer hands the payload over.
pub fn panic_page(payload: Box<dyn Any + Send + 'static>) -> Response {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::error!(panic = %message, "an admin handler panicked");
    page_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        "The server failed to do this; the details are in its log.",
    )
}
