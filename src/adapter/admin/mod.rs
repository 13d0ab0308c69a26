//! The admin console (feature `admin`): a server-rendered web interface at
//! `/admin/` for the people who run promotions and answer for consent.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use accord::admin::{self, Admin};
//! use accord::http::{router, Api, Auth};
//! use accord::store::memory::MemoryStore;
//! use accord::SystemClock;
//!
//! let auth = Auth::hs256("a secret of at least thirty-two bytes!")?;
//! let api = Api::new(Arc::new(MemoryStore::new()), Arc::new(SystemClock), auth.clone());
//! let console = Admin::new(Arc::clone(api.campaigns()), Arc::clone(api.consent()), auth);
//! let app = router(api).merge(admin::router(console));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```
//!
//! The console is an adapter like the HTTP API: it calls
//! [`CampaignService`] and [`ConsentService`] and decides nothing itself.
//! It signs people in with the API's own bearer tokens (verified by the
//! same [`Auth`]) into a server-side session, and applies the API's scopes
//! unchanged: a page or form needs the scopes of the API route that does
//! the same thing.
//!
//! Safe by construction:
//!
//! - every `POST` passes one middleware that checks its CSRF token against
//!   the session (or, for the sign-in forms, against a cookie: double
//!   submit) before any handler runs: without it, 403;
//! - templates (askama) escape every value; nothing is marked safe;
//! - every response carries `Content-Security-Policy: default-src 'self';
//!   frame-ancestors 'none'` (no inline script or style anywhere),
//!   `Referrer-Policy: same-origin`, `X-Content-Type-Options: nosniff`;
//! - no URL carries a token, except the one-time sign-in link.
//!
//! Every page reads and every form submits without JavaScript; the one
//! script (`/admin/static/admin.js`) only helps (it pre-selects the time
//! offset, narrows the op list to the value type). See `docs/admin.md`.

// Page handlers and view builders read top to bottom as their page does;
// cutting them to a line budget would scatter one page over many small
// functions. Filling page structs field by field reads better with plain
// assignments than with `clone_into`.
#![allow(clippy::too_many_lines, clippy::assigning_clones)]

mod campaigns;
mod consent;
mod guard;
mod redemptions;
pub mod session;
mod signin;
mod view;

use std::sync::Arc;

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{any, get, post};
use axum::Router;
use chrono::Utc;
use tower_http::catch_panic::CatchPanicLayer;

use crate::adapter::http::{Auth, HttpStore};
use crate::service::campaign::CampaignService;
use crate::service::consent::ConsentService;
use session::{Links, Sessions};

/// The state of the console: the services it calls, the token verifier,
/// and its sessions.
pub struct Admin<S> {
    campaigns: Arc<CampaignService<S>>,
    consent: Arc<ConsentService<S>>,
    auth: Arc<Auth>,
    sessions: Arc<Sessions>,
    links: Arc<Links>,
    secure_cookies: bool,
    metrics: Arc<crate::adapter::http::metrics::Metrics>,
}

impl<S> Clone for Admin<S> {
    fn clone(&self) -> Self {
        Admin {
            campaigns: Arc::clone(&self.campaigns),
            consent: Arc::clone(&self.consent),
            auth: Arc::clone(&self.auth),
            sessions: Arc::clone(&self.sessions),
            links: Arc::clone(&self.links),
            secure_cookies: self.secure_cookies,
            metrics: Arc::clone(&self.metrics),
        }
    }
}

impl<S> std::fmt::Debug for Admin<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admin")
            .field("auth", &self.auth)
            .field("secure_cookies", &self.secure_cookies)
            .finish_non_exhaustive()
    }
}

impl<S: HttpStore> Admin<S> {
    /// A console over the services an API router (or the host) already
    /// has, verifying tokens with `auth` (the API's verifier).
    pub fn new(
        campaigns: Arc<CampaignService<S>>,
        consent: Arc<ConsentService<S>>,
        auth: Auth,
    ) -> Self {
        Admin {
            campaigns,
            consent,
            auth: Arc::new(auth),
            sessions: Arc::new(Sessions::default()),
            links: Arc::new(Links::default()),
            secure_cookies: false,
            metrics: Arc::default(),
        }
    }

    /// Counts the console's requests in `metrics` (the API's, from
    /// [`Api::metrics`](crate::adapter::http::Api::metrics), so that `/metrics`
    /// serves both): per method, route template and status, as the API's.
    /// Without it they are counted where nothing reads them.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<crate::adapter::http::metrics::Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Always marks the session cookie `Secure` (set this when a TLS proxy
    /// in front does not send `X-Forwarded-Proto: https`). Without it the
    /// cookie is `Secure` when the request came over TLS as far as the
    /// server can tell.
    #[must_use]
    pub fn with_secure_cookies(mut self, secure: bool) -> Self {
        self.secure_cookies = secure;
        self
    }

    /// A one-time sign-in link for `token`: the path
    /// `/admin/signin/link?code=…` (append it to the server's address). It
    /// works once, within [`session::LINK_TTL`]. The token is verified now,
    /// so a link is never issued for a token the console would refuse.
    pub fn one_time_link(&self, token: &str) -> Result<String, String> {
        session::verify(&self.auth, token)?;
        let code = self.links.issue(token, Utc::now());
        Ok(format!("/admin/signin/link?code={code}"))
    }

    /// The sessions (for tests and for a host that wants to end them).
    pub fn sessions(&self) -> &Arc<Sessions> {
        &self.sessions
    }
}

/// The console's stylesheet.
const CSS: &str = include_str!("../../../static/admin/admin.css");
/// The console's script: progressive enhancement only.
const JS: &str = include_str!("../../../static/admin/admin.js");

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=3600"),
            ),
        ],
        body,
    )
        .into_response()
}

/// The router of the console, every path under `/admin/`. Merge it with
/// the API router (`router(api).merge(admin::router(console))`): it has no
/// fallback of its own outside `/admin/`.
pub fn router<S: HttpStore>(admin: Admin<S>) -> Router {
    use campaigns::{codes, editor, list, revisions, try_it};
    Router::new()
        .route("/admin", get(|| async { Redirect::permanent("/admin/") }))
        .route("/admin/", get(signin::home::<S>))
        .route(
            "/admin/static/admin.css",
            get(|| async { asset("text/css; charset=utf-8", CSS) }),
        )
        .route(
            "/admin/static/admin.js",
            get(|| async { asset("text/javascript; charset=utf-8", JS) }),
        )
        .route(
            "/admin/signin",
            get(signin::signin_page::<S>).post(signin::signin::<S>),
        )
        .route(
            "/admin/signin/link",
            get(signin::link_page::<S>).post(signin::link_signin::<S>),
        )
        .route("/admin/signout", post(signin::signout::<S>))
        .route("/admin/settings", post(signin::settings::<S>))
        .route("/admin/p/{project}/", get(signin::project_home::<S>))
        .route("/admin/p/{project}/campaigns", get(list::list::<S>))
        .route(
            "/admin/p/{project}/campaigns/new",
            get(editor::new_page::<S>).post(editor::create::<S>),
        )
        .route(
            "/admin/p/{project}/campaigns/{id}",
            get(editor::edit_page::<S>).post(editor::update::<S>),
        )
        .route(
            "/admin/p/{project}/campaigns/{id}/status",
            post(list::set_status::<S>),
        )
        .route(
            "/admin/p/{project}/campaigns/{id}/duplicate",
            get(editor::duplicate_page::<S>),
        )
        .route(
            "/admin/p/{project}/campaigns/{id}/delete",
            get(editor::delete_page::<S>).post(editor::delete::<S>),
        )
        .route(
            "/admin/p/{project}/campaigns/{id}/try",
            get(try_it::campaign_page::<S>).post(try_it::campaign_run::<S>),
        )
        .route(
            "/admin/p/{project}/try",
            get(try_it::project_page::<S>).post(try_it::project_run::<S>),
        )
        .route(
            "/admin/p/{project}/campaigns/{id}/quotas",
            get(redemptions::quotas::<S>),
        )
        .route(
            "/admin/p/{project}/campaigns/{id}/codes",
            get(codes::page::<S>),
        )
        .route(
            "/admin/p/{project}/campaigns/{id}/codes/generate",
            post(codes::generate::<S>),
        )
        .route(
            "/admin/p/{project}/campaigns/{id}/codes/{code}/active",
            post(codes::set_active::<S>),
        )
        .route(
            "/admin/p/{project}/campaigns/{id}/revisions",
            get(revisions::list::<S>),
        )
        .route(
            "/admin/p/{project}/campaigns/{id}/revisions/diff",
            get(revisions::diff::<S>),
        )
        .route(
            "/admin/p/{project}/campaigns/{id}/revisions/{revision}/restore",
            post(revisions::restore::<S>),
        )
        .route(
            "/admin/p/{project}/redemptions",
            get(redemptions::list::<S>),
        )
        .route(
            "/admin/p/{project}/redemptions/{id}/cancel",
            get(redemptions::cancel_page::<S>).post(redemptions::cancel::<S>),
        )
        .route(
            "/admin/p/{project}/content/{kind}",
            get(consent::content::list::<S>),
        )
        .route(
            "/admin/p/{project}/content/{kind}/new",
            get(consent::content::new_page::<S>).post(consent::content::create::<S>),
        )
        .route(
            "/admin/p/{project}/content/{kind}/{id}",
            get(consent::content::edit_page::<S>).post(consent::content::update::<S>),
        )
        .route(
            "/admin/p/{project}/subjects",
            get(consent::subject::lookup::<S>),
        )
        .route(
            "/admin/p/{project}/subjects/erase",
            get(consent::erase::erase_page::<S>).post(consent::erase::erase::<S>),
        )
        .route("/admin/{*rest}", any(guard::not_found))
        .layer(axum::middleware::from_fn_with_state(
            admin.clone(),
            guard::csrf::<S>,
        ))
        .layer(CatchPanicLayer::custom(guard::panic_page))
        .layer(axum::middleware::from_fn(guard::headers))
        .layer(axum::middleware::from_fn_with_state(
            (
                Arc::clone(&admin.metrics),
                crate::adapter::http::Surface::Admin,
            ),
            crate::adapter::http::observe,
        ))
        .with_state(admin)
}
