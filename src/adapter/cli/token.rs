//! `accord token`: a signed bearer token for given projects and scopes,
//! for development and scripts. Signed with HS256 by `--jwt-secret`, or by
//! the development secret `accord serve --demo` keeps in the database of
//! `--database-url`.

use std::time::Duration;

use super::open::{Opened, PoolFlags};
use super::serve::DEV_SECRET;
use super::{parse_duration, BoxError};
use crate::adapter::http::{scope, Claims};

/// The flags of `accord token`.
#[derive(Debug, Clone, clap::Args)]
pub struct TokenArgs {
    /// A project the token may use (repeat for several; `*` for all).
    #[arg(long = "project", required = true)]
    pub projects: Vec<String>,
    /// A scope the token carries (repeat for several; default every scope).
    #[arg(long = "scope")]
    pub scopes: Vec<String>,
    /// Who calls: the token's `sub` (recorded as createdBy/lastModifiedBy).
    #[arg(long, default_value = "cli")]
    pub sub: String,
    /// How long the token is valid: seconds, or 30s, 15m, 8h, 30d.
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    pub ttl: Duration,
    /// HS256 secret to sign with (at least 32 bytes); without it, the
    /// development secret kept in the database by `serve --demo`.
    #[arg(long, env = "ACCORD_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,
    /// Where `serve --demo` keeps its development secret.
    #[arg(
        long,
        env = "ACCORD_DATABASE_URL",
        default_value = "sqlite://accord.db"
    )]
    pub database_url: String,
    /// The PostgreSQL pool.
    #[command(flatten)]
    pub pool: PoolFlags,
}

/// The token `accord token` prints.
pub async fn token(args: &TokenArgs) -> Result<String, BoxError> {
    for s in &args.scopes {
        if !scope::ALL.contains(&s.as_str()) {
            return Err(format!(
                "unknown scope {s:?}; the scopes are {}",
                scope::ALL.join(", ")
            )
            .into());
        }
    }
    if args.projects.iter().any(|p| p.trim().is_empty()) {
        return Err("a --project is empty".into());
    }
    let secret = if let Some(secret) = &args.jwt_secret {
        secret.clone()
    } else {
        let opened = Opened::open(&args.database_url, &args.pool, false).await?;
        opened.setting(DEV_SECRET).await.ok().flatten().ok_or_else(|| {
            format!(
                "no --jwt-secret, and no development secret kept in {} (`accord serve --demo` keeps one)",
                args.database_url
            )
        })?
    };
    crate::adapter::http::Auth::hs256(&secret)?;
    let projects: Vec<&str> = args.projects.iter().map(String::as_str).collect();
    let mut claims = Claims::all_scopes(&args.sub, &projects, args.ttl);
    if !args.scopes.is_empty() {
        claims.scope = args.scopes.join(" ");
    }
    Ok(claims.sign_hs256(secret.as_bytes())?)
}
