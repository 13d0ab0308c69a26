//! The flag groups of `accord serve`: token keys and required claims,
//! CORS and rate limits, and the serving bounds.

use std::path::PathBuf;
use std::time::Duration;

use super::super::parse_duration;
use crate::adapter::http::{Auth, Rate, RateLimits, ServeConfig};

/// Key sets and required claims of the bearer tokens.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct JwtFlags {
    /// A JSON Web Key Set file (RS256, ES256, EdDSA keys selected by the
    /// token's `kid`), re-read every `--jwks-refresh` so keys rotate without
    /// a restart.
    #[arg(long, env = "ACCORD_JWKS_FILE", conflicts_with = "jwt_secret")]
    pub jwks_file: Option<PathBuf>,
    /// A JSON Web Key Set URL (an identity provider's `jwks_uri`): fetched
    /// at start (the server does not start if it cannot), again every
    /// `--jwks-refresh` and when a token names an unknown `kid` (at most
    /// every `--jwks-unknown-kid-interval`).
    #[arg(
        long,
        env = "ACCORD_JWKS_URL",
        conflicts_with_all = ["jwt_secret", "jwt_public_key_file", "jwks_file"]
    )]
    pub jwks_url: Option<String>,
    /// How often the JWKS is read again (default: the file every 60s; the
    /// URL as its `Cache-Control: max-age` says, between 1m and 1d, else
    /// every 5m).
    #[arg(long, env = "ACCORD_JWKS_REFRESH", value_parser = parse_duration)]
    pub jwks_refresh: Option<Duration>,
    /// The least time between two fetches of the JWKS URL caused by tokens
    /// with an unknown `kid` (default 30s).
    #[arg(long, env = "ACCORD_JWKS_UNKNOWN_KID_INTERVAL", value_parser = parse_duration)]
    pub jwks_unknown_kid_interval: Option<Duration>,
    /// Require this `iss` in every token.
    #[arg(long, env = "ACCORD_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// Require this audience in every token's `aud`.
    #[arg(long, env = "ACCORD_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
}

impl JwtFlags {
    /// `auth` with the issuer and audience required.
    pub(super) fn require(&self, mut auth: Auth) -> Auth {
        if let Some(issuer) = &self.jwt_issuer {
            auth = auth.with_issuer(issuer);
        }
        if let Some(audience) = &self.jwt_audience {
            auth = auth.with_audience(audience);
        }
        auth
    }
}

/// CORS and rate limits (each off unless set).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EdgeFlags {
    /// An origin browsers may call the API from (`https://shop.example`;
    /// repeat, or comma-separate, for several; `*` for any). Off by default.
    #[arg(
        long = "cors-origin",
        env = "ACCORD_CORS_ORIGINS",
        value_delimiter = ','
    )]
    pub cors_origins: Vec<String>,
    /// Requests a second for one project, all tokens (bursts of as many);
    /// past it a 429 with Retry-After. Off by default.
    #[arg(long, env = "ACCORD_PROJECT_RATE_LIMIT")]
    pub project_rate_limit: Option<u32>,
    /// Requests a second for one bearer token (bursts of as many). Off by
    /// default.
    #[arg(long, env = "ACCORD_TOKEN_RATE_LIMIT")]
    pub token_rate_limit: Option<u32>,
}

impl EdgeFlags {
    /// The rate limits of the flags.
    pub fn rate_limits(&self) -> RateLimits {
        RateLimits {
            per_project: self
                .project_rate_limit
                .filter(|&n| n > 0)
                .map(Rate::per_second),
            per_token: self
                .token_rate_limit
                .filter(|&n| n > 0)
                .map(Rate::per_second),
        }
    }
}

/// The flags of `accord::http::ServeConfig`; each defaults to its default.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeFlags {
    /// Most connections open at once; newer ones get a 503 (default 4096).
    #[arg(long, env = "ACCORD_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Seconds a client may take to send a request head (default 10).
    #[arg(long, env = "ACCORD_HEADER_READ_TIMEOUT")]
    pub header_read_timeout: Option<u64>,
    /// Seconds a client may take to send a request body (default 30).
    #[arg(long, env = "ACCORD_BODY_READ_TIMEOUT")]
    pub body_read_timeout: Option<u64>,
    /// Seconds a kept-alive connection may wait between requests (default 60).
    #[arg(long, env = "ACCORD_IDLE_TIMEOUT")]
    pub idle_timeout: Option<u64>,
    /// Seconds one request may take, head to end of response (default 60).
    #[arg(long, env = "ACCORD_REQUEST_TIMEOUT")]
    pub request_timeout: Option<u64>,
}

impl ServeFlags {
    /// The serving bounds: the flags given, defaults for the others.
    pub fn config(&self) -> ServeConfig {
        let mut config = ServeConfig::default();
        let secs = Duration::from_secs;
        if let Some(n) = self.max_connections {
            config.max_connections = n;
        }
        if let Some(s) = self.header_read_timeout {
            config.header_read_timeout = secs(s);
        }
        if let Some(s) = self.body_read_timeout {
            config.body_read_timeout = secs(s);
        }
        if let Some(s) = self.idle_timeout {
            config.idle_timeout = secs(s);
        }
        if let Some(s) = self.request_timeout {
            config.request_timeout = secs(s);
        }
        config
    }
}
