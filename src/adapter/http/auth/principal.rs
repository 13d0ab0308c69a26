//! Who calls: the claims of an Accord token, the [`Principal`] they
//! verify to, and the [`guard`] middleware every authenticated route runs.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::extract::{FromRequestParts, RawPathParams, Request, State};
use axum::http::{header, request::Parts, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

use super::{scope, Auth};
use crate::adapter::http::error::ApiError;
use crate::Error;

/// The claims of an Accord token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Who calls.
    pub sub: String,
    /// Expiry, seconds since the epoch.
    pub exp: i64,
    /// Space-separated scopes.
    #[serde(default)]
    pub scope: String,
    /// Project ids the token may use; `["*"]` for all.
    #[serde(default)]
    pub projects: Vec<String>,
}

impl Claims {
    /// Claims for `sub` with every scope of [`scope::ALL`] on `projects`,
    /// valid for `ttl` from now (a development token).
    pub fn all_scopes(sub: &str, projects: &[&str], ttl: std::time::Duration) -> Self {
        let exp =
            chrono::Utc::now().timestamp() + i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX / 2);
        Claims {
            sub: sub.to_owned(),
            exp,
            scope: scope::ALL.join(" "),
            projects: projects.iter().map(|&p| p.to_owned()).collect(),
        }
    }

    /// Signs the claims with HS256.
    pub fn sign_hs256(&self, secret: &[u8]) -> crate::Result<String> {
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            self,
            &EncodingKey::from_secret(secret),
        )
        .map_err(|e| Error::internal(format!("cannot sign a token: {e}")))
    }
}

/// Who is calling: the verified claims of the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The token's `sub`.
    pub sub: String,
    /// The token's scopes.
    pub scopes: BTreeSet<String>,
    /// The projects the token may use; `None` for every project (`["*"]`).
    pub projects: Option<BTreeSet<String>>,
}

impl Principal {
    pub(super) fn from_claims(claims: Claims) -> Self {
        let all = claims.projects.iter().any(|p| p == "*");
        Principal {
            sub: claims.sub,
            scopes: claims.scope.split_whitespace().map(str::to_owned).collect(),
            projects: (!all).then(|| claims.projects.into_iter().collect()),
        }
    }

    /// Whether the token carries `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }

    /// Whether the token may use `project`.
    pub fn may_access(&self, project: &str) -> bool {
        self.projects.as_ref().is_none_or(|p| p.contains(project))
    }

    /// 403 unless the token carries every scope of `needed`.
    pub(crate) fn require(&self, needed: &[&str]) -> Result<(), ApiError> {
        let missing: Vec<&str> = needed
            .iter()
            .copied()
            .filter(|s| !self.has_scope(s))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(ApiError::insufficient_scope(&missing))
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        // Set by `guard`; a handler without it is a routing bug, not the
        // client's fault, and fails closed.
        parts
            .extensions
            .get::<Principal>()
            .cloned()
            .ok_or_else(|| Error::internal("route without the auth guard").into())
    }
}

/// What the guard of one route checks.
#[derive(Clone)]
pub(crate) struct Guard {
    pub(crate) auth: Arc<Auth>,
    pub(crate) scopes: &'static [&'static str],
    pub(crate) limiter: Arc<crate::adapter::http::ratelimit::RateLimiter>,
    pub(crate) metrics: Arc<crate::adapter::http::metrics::Metrics>,
}

/// The middleware of every authenticated route: token (401), project of the
/// path (403), scopes (403), rate limits (429); then the [`Principal`] is
/// available to the handler.
pub(crate) async fn guard(State(guard): State<Guard>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let principal = match guard
        .auth
        .authenticate_fresh(parts.headers.get(header::AUTHORIZATION))
        .await
    {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    // Every guarded route is under a project; a path whose project cannot
    // be read is refused (fail closed), never let through unchecked.
    let Ok(params) = RawPathParams::from_request_parts(&mut parts, &()).await else {
        return ApiError::invalid_parameter("projId", "not valid UTF-8").into_response();
    };
    let Some((_, project)) = params.iter().find(|(name, _)| *name == "projId") else {
        return ApiError::from(Error::internal("guarded route without {projId}")).into_response();
    };
    if let Err(e) = crate::core::limits::check_project_id(project) {
        return ApiError::from(e).into_response();
    }
    if !principal.may_access(project) {
        return ApiError::project_forbidden().into_response();
    }
    if let Err(e) = principal.require(guard.scopes) {
        return e.into_response();
    }
    let token = parts
        .headers
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes)
        .unwrap_or_default();
    if let Err((limit, wait)) = guard
        .limiter
        .check(project, &String::from_utf8_lossy(token))
    {
        guard.metrics.rate_limited(limit);
        return ApiError::rate_limited(limit, wait).into_response();
    }
    parts.extensions.insert(principal);
    next.run(Request::from_parts(parts, body)).await
}
