//! The HTTP adapter (feature `http`): an axum [`Router`] serving the wire
//! API of the design — the six consent `bff` routes, the content store,
//! the campaign routes and the operations routes — with bearer
//! authentication, RFC 9457 problems and an OpenAPI 3.1 document.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use accord::http::{router, Api, Auth};
//! use accord::store::memory::MemoryStore;
//! use accord::SystemClock;
//!
//! let auth = Auth::hs256("a secret of at least thirty-two bytes!")?;
//! let api = Api::new(Arc::new(MemoryStore::new()), Arc::new(SystemClock), auth);
//! // Mount it in your own app: `Router::new().merge(router(api))`, or nest it.
//! let app = router(api);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! // `serve` bounds what clients may hold (timeouts, a connection cap);
//! // `axum::serve(listener, app)` works too, without those bounds.
//! accord::http::serve(listener, app, Default::default(), std::future::pending()).await?;
//! # Ok(()) }
//! ```
//!
//! The router is generic over the store: [`router`] works for any `S`
//! implementing [`HttpStore`]; a server picks the concrete store at run time
//! (from a database URL, say) and calls it.
//!
//! | Layer | Job |
//! |---|---|
//! | [`auth`] | JWT bearer, scopes and project per route |
//! | [`error`] | problem+json; the one `ErrorKind` → status map |
//! | `extract` | JSON bodies (415, 413, 400 with the field path), query parameters |
//! | `consent` | the six application-facing consent routes |
//! | `content` | the content store |
//! | `evidence` | consent evidence: subject history and state, record versions |
//! | `campaign` | the campaign routes |
//! | `ops` | `/healthz`, `/readyz`, `/openapi.json`, the request log, the target length limit |
//! | `otel` | the spans exported to OpenTelemetry (feature `otel`) |
//! | `openapi` | the generated OpenAPI 3.1 document |
//! | [`serve`] | HTTP/1.1 over TCP with timeouts and a connection cap; hyper's own refusals as problems |

pub mod auth;
mod campaign;
mod codes;
mod consent;
mod content;
pub mod error;
mod evidence;
mod extract;
mod files;
mod holds;
pub mod metrics;
mod openapi;
mod ops;
#[cfg(not(feature = "otel"))]
mod otel;
#[cfg(feature = "otel")]
pub mod otel;
pub mod ratelimit;
pub mod receipt;
mod respond;
mod retention;
mod revisions;
mod serve;
pub mod webhooks;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;

pub use auth::{scope, Auth, Claims, Principal};
pub use content::ContentBody;
pub use error::{status_of, ApiError, Problem, PROBLEM_JSON};
pub use evidence::VersionEnvelope;
pub use extract::MAX_BODY_BYTES;
#[cfg(feature = "admin")]
pub(crate) use ops::{observe, Surface};
pub use ops::{Health, REQUEST_ID};
pub use ratelimit::{Rate, RateLimits};
pub use serve::{serve, ServeConfig, MAX_URI_BYTES};

/// Largest request head (request line and header fields), in bytes:
/// hyper's read buffer. A larger head is a 431 problem.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Most header fields in a request head; more is a 431 problem.
pub const MAX_HEADERS: usize = 100;
// (Here, not in `serve`: the 431 problem of `error` states them too.)

use crate::core::clock::Clock;
use crate::service::campaign::CampaignService;
use crate::service::consent::ConsentService;
use crate::service::outbox::OutboxService;
use crate::store::{Ping, Store};

/// Everything the router needs from a store: every storage role, and a
/// readiness probe.
pub trait HttpStore: Store + Ping {}

impl<T: Store + Ping> HttpStore for T {}

/// The state of the router: the services, the store (for readiness) and
/// the token verifier.
pub struct Api<S> {
    campaigns: Arc<CampaignService<S>>,
    consent: Arc<ConsentService<S>>,
    outbox: Arc<OutboxService<S>>,
    store: Arc<S>,
    auth: Arc<Auth>,
    receipts: Option<
        Arc<(
            receipt::ReceiptSigner,
            crate::core::consent::receipt::Controller,
        )>,
    >,
    metrics: Arc<metrics::Metrics>,
    limiter: Arc<ratelimit::RateLimiter>,
}

impl<S> Clone for Api<S> {
    fn clone(&self) -> Self {
        Api {
            campaigns: Arc::clone(&self.campaigns),
            consent: Arc::clone(&self.consent),
            outbox: Arc::clone(&self.outbox),
            store: Arc::clone(&self.store),
            auth: Arc::clone(&self.auth),
            receipts: self.receipts.clone(),
            metrics: Arc::clone(&self.metrics),
            limiter: Arc::clone(&self.limiter),
        }
    }
}

impl<S> std::fmt::Debug for Api<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

impl<S: HttpStore> Api<S> {
    /// Services over `store`, reading time from `clock`, verifying tokens
    /// with `auth`.
    pub fn new(store: Arc<S>, clock: Arc<dyn Clock>, auth: Auth) -> Self {
        let campaigns = Arc::new(CampaignService::new(Arc::clone(&store), Arc::clone(&clock)));
        let consent = Arc::new(ConsentService::new(store, clock));
        Api::from_services(campaigns, consent, auth)
    }

    /// The router over services the host already has (and may use directly
    /// too). Both must be over the same store.
    pub fn from_services(
        campaigns: Arc<CampaignService<S>>,
        consent: Arc<ConsentService<S>>,
        auth: Auth,
    ) -> Self {
        Api {
            outbox: Arc::new(OutboxService::new(
                Arc::clone(campaigns.store()),
                Arc::clone(campaigns.clock()),
            )),
            store: Arc::clone(campaigns.store()),
            campaigns,
            consent,
            auth: Arc::new(auth),
            receipts: None,
            metrics: Arc::new(metrics::Metrics::default()),
            limiter: Arc::new(ratelimit::RateLimiter::new(RateLimits::default())),
        }
    }

    /// With the per-project and per-token rate limits of `limits` (none by
    /// default): a request past one is a 429 problem `rate_limited` with
    /// `Retry-After`. Set it before building the [`router`].
    #[must_use]
    pub fn with_rate_limits(mut self, limits: RateLimits) -> Self {
        self.limiter = Arc::new(ratelimit::RateLimiter::new(limits));
        self
    }

    /// The router with the key of erasure's pseudonyms (see
    /// [`ConsentService::with_pseudonym_key`]); without one, erasure
    /// answers 409 `erasure_not_configured`.
    #[must_use]
    pub fn with_pseudonym_key(mut self, key: crate::core::consent::erasure::PseudonymKey) -> Self {
        self.consent = Arc::new((*self.consent).clone().with_pseudonym_key(key));
        self
    }

    /// The router with a retention period for consent acceptances
    /// ([`ConsentService::with_retention`]); without one, a purge answers
    /// 409 `retention_not_configured`.
    #[must_use]
    pub fn with_consent_retention(mut self, retention: chrono::Duration) -> Self {
        self.consent = Arc::new((*self.consent).clone().with_retention(retention));
        self
    }

    /// The router with the key that signs consent receipts and the
    /// controller they name; without one, receipts answer 409
    /// `receipts_not_configured` and the JWK set is empty.
    #[must_use]
    pub fn with_receipt_signer(
        mut self,
        signer: receipt::ReceiptSigner,
        controller: crate::core::consent::receipt::Controller,
    ) -> Self {
        self.receipts = Some(Arc::new((signer, controller)));
        self
    }

    /// The router's metrics (served at `/metrics`).
    pub fn metrics(&self) -> &Arc<metrics::Metrics> {
        &self.metrics
    }

    /// The campaign service.
    pub fn campaigns(&self) -> &Arc<CampaignService<S>> {
        &self.campaigns
    }

    /// The consent service.
    pub fn consent(&self) -> &Arc<ConsentService<S>> {
        &self.consent
    }
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone: the operations routes.
    Public,
    /// A bearer token for the path's project with every one of these scopes.
    Bearer(&'static [&'static str]),
}

/// One route the router serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// `GET`, `POST`, `PUT` or `DELETE`.
    pub method: &'static str,
    /// The path template, OpenAPI style: `/campaign/api/projects/{projId}/search`.
    pub path: &'static str,
    /// Who may call it.
    pub access: Access,
}

/// Declares every route once: the public [`ROUTES`] table (documentation,
/// tests) and the router built from the same lines, so they cannot differ.
macro_rules! routes {
    ($( $method:ident $path:literal $access:expr => $handler:expr ; )*) => {
        /// Every route the router serves, with who may call it.
        pub const ROUTES: &[Route] = &[
            $( Route { method: stringify!($method), path: $path, access: $access }, )*
        ];

        fn api_routes<S: HttpStore>(api: &Api<S>) -> Router<Api<S>> {
            let mut router = Router::new();
            $( router = router.route($path, guarded(on(MethodFilter::$method, $handler), $access, api)); )*
            router
        }
    };
}

use scope::{
    CAMPAIGN_ADMIN, CAMPAIGN_READ, CAMPAIGN_WRITE, CMS_READ, CMS_WRITE, CONSENT_ADMIN,
    CONSENT_AUDIT, CONSENT_READ, CONSENT_WRITE, EVENTS_ADMIN,
};

const CONSENT_R: Access = Access::Bearer(&[CONSENT_READ]);
const CONSENT_W: Access = Access::Bearer(&[CONSENT_WRITE, CONSENT_READ]);
const CONSENT_AUD: Access = Access::Bearer(&[CONSENT_AUDIT]);
const CONSENT_ADM: Access = Access::Bearer(&[CONSENT_ADMIN]);
const CMS_R: Access = Access::Bearer(&[CMS_READ]);
const CMS_W: Access = Access::Bearer(&[CMS_WRITE]);
const CAMPAIGN_R: Access = Access::Bearer(&[CAMPAIGN_READ]);
const CAMPAIGN_W: Access = Access::Bearer(&[CAMPAIGN_WRITE]);
const CAMPAIGN_ADM: Access = Access::Bearer(&[CAMPAIGN_ADMIN]);
const EVENTS_ADM: Access = Access::Bearer(&[EVENTS_ADMIN]);

routes! {
    GET "/healthz" Access::Public => ops::healthz;
    GET "/readyz" Access::Public => ops::readyz::<S>;
    GET "/openapi.json" Access::Public => openapi::openapi_json;
    GET "/.well-known/jwks.json" Access::Public => evidence::jwks::<S>;

    GET "/bff/api/consent/projects/{projId}/to-accept" CONSENT_R => consent::to_accept::<S>;
    GET "/bff/api/consent/projects/{projId}/privacy-notice/{id}" CONSENT_R => consent::privacy_notice::<S>;
    POST "/bff/api/consent/projects/{projId}/consent-acceptance" CONSENT_W => consent::accept_consent::<S>;
    GET "/bff/api/consent/projects/{projId}/purpose-options" CONSENT_R => consent::purpose_options::<S>;
    POST "/bff/api/consent/projects/{projId}/purpose-acceptance" CONSENT_W => consent::accept_purpose::<S>;
    POST "/bff/api/consent/projects/{projId}/purpose-withdrawal" CONSENT_W => consent::withdraw_purpose::<S>;

    GET "/cms/api/projects/{projId}/c/{type}" CMS_R => content::list_content::<S>;
    POST "/cms/api/projects/{projId}/c/{type}" CMS_W => content::create_content::<S>;
    GET "/cms/api/projects/{projId}/c/{type}/{id}" CMS_R => content::get_content::<S>;
    PUT "/cms/api/projects/{projId}/c/{type}/{id}" CMS_W => content::replace_content::<S>;
    GET "/cms/api/projects/{projId}/c/{type}/{id}/versions" CMS_R => evidence::content_versions::<S>;
    GET "/cms/api/projects/{projId}/c/{type}/{id}/versions/{version}" CMS_R => evidence::content_version::<S>;
    POST "/cms/api/projects/{projId}/files" CMS_W => files::upload_file::<S>;
    GET "/cms/api/projects/{projId}/files/{sha256}" CMS_R => files::get_file::<S>;

    GET "/consent/api/projects/{projId}/subjects/history" CONSENT_AUD => evidence::subject_history::<S>;
    GET "/consent/api/projects/{projId}/subjects/state" CONSENT_AUD => evidence::subject_state::<S>;
    POST "/consent/api/projects/{projId}/subjects/export" CONSENT_AUD => evidence::export_subject::<S>;
    POST "/consent/api/projects/{projId}/subjects/erase" CONSENT_ADM => evidence::erase_subject::<S>;
    GET "/consent/api/projects/{projId}/receipts/{id}" CONSENT_R => evidence::receipt::<S>;
    GET "/consent/api/projects/{projId}/ledger" CONSENT_AUD => evidence::ledger::<S>;
    GET "/consent/api/projects/{projId}/ledger/verify" CONSENT_AUD => evidence::verify_ledger::<S>;
    GET "/consent/api/projects/{projId}/retention/expired" CONSENT_AUD => retention::expired_acceptances::<S>;
    POST "/consent/api/projects/{projId}/retention/purge" CONSENT_ADM => retention::purge::<S>;

    POST "/campaign/api/projects/{projId}/search" CAMPAIGN_R => campaign::search::<S>;
    POST "/campaign/api/projects/{projId}/redeem/campaign-code" CAMPAIGN_W => campaign::redeem::<S>;
    POST "/campaign/api/projects/{projId}/redemptions/{id}/cancel" CAMPAIGN_W => campaign::cancel_redemption::<S>;
    GET "/campaign/api/projects/{projId}/redemptions" CAMPAIGN_R => campaign::list_redemptions::<S>;
    POST "/campaign/api/projects/{projId}/holds" CAMPAIGN_W => holds::place_hold::<S>;
    GET "/campaign/api/projects/{projId}/holds/{id}" CAMPAIGN_R => holds::get_hold::<S>;
    POST "/campaign/api/projects/{projId}/holds/{id}/confirm" CAMPAIGN_W => holds::confirm_hold::<S>;
    POST "/campaign/api/projects/{projId}/holds/{id}/release" CAMPAIGN_W => holds::release_hold::<S>;
    GET "/campaign/api/projects/{projId}/campaigns" CAMPAIGN_ADM => campaign::list_campaigns::<S>;
    POST "/campaign/api/projects/{projId}/campaigns" CAMPAIGN_ADM => campaign::create_campaign::<S>;
    GET "/campaign/api/projects/{projId}/campaigns/{id}" CAMPAIGN_ADM => campaign::get_campaign::<S>;
    PUT "/campaign/api/projects/{projId}/campaigns/{id}" CAMPAIGN_ADM => campaign::update_campaign::<S>;
    DELETE "/campaign/api/projects/{projId}/campaigns/{id}" CAMPAIGN_ADM => campaign::delete_campaign::<S>;
    GET "/campaign/api/projects/{projId}/campaigns/{id}/quotas" CAMPAIGN_ADM => campaign::quota_usage::<S>;
    GET "/campaign/api/projects/{projId}/campaigns/{id}/codes" CAMPAIGN_ADM => codes::list_codes::<S>;
    POST "/campaign/api/projects/{projId}/campaigns/{id}/codes/generate" CAMPAIGN_ADM => codes::generate_codes::<S>;
    POST "/campaign/api/projects/{projId}/campaigns/{id}/codes/import" CAMPAIGN_ADM => codes::import_codes::<S>;
    GET "/campaign/api/projects/{projId}/campaigns/{id}/codes/export" CAMPAIGN_ADM => codes::export_codes::<S>;
    POST "/campaign/api/projects/{projId}/campaigns/{id}/codes/{code}/deactivate" CAMPAIGN_ADM => codes::deactivate_code::<S>;
    POST "/campaign/api/projects/{projId}/campaigns/{id}/codes/{code}/activate" CAMPAIGN_ADM => codes::activate_code::<S>;
    GET "/campaign/api/projects/{projId}/codes/{code}" CAMPAIGN_R => codes::code_lookup::<S>;
    GET "/campaign/api/projects/{projId}/campaigns/{id}/revisions" CAMPAIGN_ADM => revisions::list_revisions::<S>;
    GET "/campaign/api/projects/{projId}/campaigns/{id}/revisions/diff" CAMPAIGN_ADM => revisions::diff_revisions::<S>;
    GET "/campaign/api/projects/{projId}/campaigns/{id}/revisions/{revision}" CAMPAIGN_ADM => revisions::get_revision::<S>;
    POST "/campaign/api/projects/{projId}/campaigns/{id}/revisions/{revision}/restore" CAMPAIGN_ADM => revisions::restore_revision::<S>;

    GET "/events/api/projects/{projId}/webhooks" EVENTS_ADM => webhooks::list_webhooks::<S>;
    POST "/events/api/projects/{projId}/webhooks" EVENTS_ADM => webhooks::create_webhook::<S>;
    GET "/events/api/projects/{projId}/webhooks/{id}" EVENTS_ADM => webhooks::get_webhook::<S>;
    PUT "/events/api/projects/{projId}/webhooks/{id}" EVENTS_ADM => webhooks::update_webhook::<S>;
    DELETE "/events/api/projects/{projId}/webhooks/{id}" EVENTS_ADM => webhooks::delete_webhook::<S>;
    GET "/events/api/projects/{projId}/webhooks/{id}/deliveries" EVENTS_ADM => webhooks::list_deliveries::<S>;
    GET "/events/api/projects/{projId}/webhooks/{id}/deliveries/{eventId}" EVENTS_ADM => webhooks::get_delivery::<S>;
    POST "/events/api/projects/{projId}/webhooks/{id}/deliveries/{eventId}/redeliver" EVENTS_ADM => webhooks::redeliver::<S>;
}

/// Puts the auth guard of `access` in front of one method of a route (not
/// in front of its 405 fallback: a wrong method is a 405 for anyone).
fn guarded<S: HttpStore>(
    method: MethodRouter<Api<S>>,
    access: Access,
    api: &Api<S>,
) -> MethodRouter<Api<S>> {
    match access {
        Access::Public => method,
        Access::Bearer(scopes) => method.route_layer(axum::middleware::from_fn_with_state(
            auth::Guard {
                auth: Arc::clone(&api.auth),
                scopes,
                limiter: Arc::clone(&api.limiter),
                metrics: Arc::clone(&api.metrics),
            },
            auth::guard,
        )),
    }
}

/// The router of the whole API over `api`, ready to serve or to mount in a
/// host application (`Router::merge`/`nest`).
///
/// Besides [`ROUTES`] it serves `GET /metrics` (Prometheus, see
/// [`metrics`]), without authentication.
///
/// Layers, outermost first: the request id (`x-request-id`, taken if sane
/// or made, returned, in a span around every log line of the request), one
/// info log line and the metrics per request (route template, never the
/// raw path), the request target limit (a 414 problem
/// past [`MAX_URI_BYTES`]), catch-panic (a 500 problem, never a dropped
/// connection), the 1 MiB body limit; unknown paths get a 404 problem and
/// wrong methods a 405 problem.
pub fn router<S: HttpStore>(api: Api<S>) -> Router {
    let metrics = Arc::clone(&api.metrics);
    api_routes(&api)
        .route("/metrics", axum::routing::get(ops::metrics::<S>))
        .fallback(error::route_not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(CatchPanicLayer::custom(error::panic_response))
        .layer(axum::middleware::from_fn(ops::limit_target))
        .layer(axum::middleware::from_fn_with_state(
            (metrics, ops::Surface::Api),
            ops::observe,
        ))
        .with_state(api)
}

/// A CORS layer letting browsers on `origins` call the API (`*` for any
/// origin; otherwise each an origin such as `https://shop.example`): the
/// API's methods, the request headers it reads (`Authorization`,
/// `Content-Type`, `If-Match`, `Idempotency-Key`, `x-request-id`) and the
/// response headers it sets (`Location`, `ETag`, `Retry-After`,
/// `X-Total-Count`, `x-request-id`) are allowed; preflights are cached 10
/// minutes. Put it around [`router`]: `router(api).layer(cors_layer(…)?)`.
/// Credentials (cookies) are not allowed: the API takes bearer tokens.
pub fn cors_layer(origins: &[String]) -> crate::Result<tower_http::cors::CorsLayer> {
    use axum::http::{header, HeaderName, Method};
    use tower_http::cors::{AllowOrigin, CorsLayer};
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        let mut list = Vec::with_capacity(origins.len());
        for origin in origins {
            let origin_text = origin.trim_end_matches('/');
            let host = origin_text
                .strip_prefix("https://")
                .or_else(|| origin_text.strip_prefix("http://"));
            let valid = host.is_some_and(|h| {
                !h.is_empty() && !h.contains(|c: char| c == '/' || c.is_whitespace())
            });
            let value = axum::http::HeaderValue::from_str(origin_text)
                .ok()
                .filter(|_| valid);
            list.push(value.ok_or_else(|| {
                crate::Error::new(
                    crate::ErrorCode::InvalidCorsOrigin,
                    format!("{origin:?} is not an origin (https://host[:port]) nor *"),
                )
            })?);
        }
        AllowOrigin::list(list)
    };
    let idempotency_key = HeaderName::from_static("idempotency-key");
    let total_count = HeaderName::from_static("x-total-count");
    Ok(CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::IF_MATCH,
            idempotency_key,
            REQUEST_ID,
        ])
        .expose_headers([
            header::LOCATION,
            header::ETAG,
            header::RETRY_AFTER,
            total_count,
            REQUEST_ID,
        ])
        .max_age(std::time::Duration::from_secs(600)))
}

/// The OpenAPI 3.1 document of [`router`], as JSON (also served at
/// `/openapi.json`).
pub fn openapi() -> serde_json::Value {
    openapi::document()
}
