//! `accord token`: a signed bearer token for given projects and scopes,
//! for development and scripts. Signed with a private key
//! (`--jwt-private-key-file`: RS256, ES256 or EdDSA, for a server that
//! verifies with the public key or a JWKS), with HS256 by `--jwt-secret`,
//! or by the development secret `accord serve --demo` keeps in the
//! database of `--database-url`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};

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
    /// A PEM private key to sign with instead (PKCS#8 or the key type's
    /// own format): RSA signs RS256, P-256 ES256, Ed25519 EdDSA.
    #[arg(long)]
    pub jwt_private_key_file: Option<PathBuf>,
    /// The token's `kid` header: the key's id in the server's JWKS.
    #[arg(long)]
    pub jwt_kid: Option<String>,
    /// The token's `iss`.
    #[arg(long, env = "ACCORD_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// The token's `aud`.
    #[arg(long, env = "ACCORD_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
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
    let projects: Vec<&str> = args.projects.iter().map(String::as_str).collect();
    let mut claims = Claims::all_scopes(&args.sub, &projects, args.ttl);
    if !args.scopes.is_empty() {
        claims.scope = args.scopes.join(" ");
    }
    let mut claims = serde_json::to_value(&claims)?;
    if let Some(iss) = &args.jwt_issuer {
        claims["iss"] = iss.as_str().into();
    }
    if let Some(aud) = &args.jwt_audience {
        claims["aud"] = aud.as_str().into();
    }
    let (algorithm, key) = if let Some(path) = &args.jwt_private_key_file {
        private_key(path)?
    } else {
        let secret = if let Some(secret) = &args.jwt_secret {
            secret.clone()
        } else {
            let opened = Opened::open(&args.database_url, &args.pool, false).await?;
            opened.setting(DEV_SECRET).await.ok().flatten().ok_or_else(|| {
                format!(
                    "no --jwt-secret or --jwt-private-key-file, and no development secret kept in {} (`accord serve --demo` keeps one)",
                    args.database_url
                )
            })?
        };
        crate::adapter::http::Auth::hs256(&secret)?;
        (
            Algorithm::HS256,
            EncodingKey::from_secret(secret.as_bytes()),
        )
    };
    let mut header = Header::new(algorithm);
    header.kid.clone_from(&args.jwt_kid);
    jsonwebtoken::encode(&header, &claims, &key)
        .map_err(|e| format!("cannot sign the token: {e}").into())
}

/// The signing key of a PEM file and its algorithm, by the key's type.
fn private_key(path: &Path) -> Result<(Algorithm, EncodingKey), BoxError> {
    let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let not_a_key = || {
        format!(
            "{}: not a PEM private key of RSA, P-256 or Ed25519",
            path.display()
        )
    };
    // The PEM readers take any key of their type, public ones too (which
    // then fail to sign with a vaguer message).
    if !String::from_utf8_lossy(&pem).contains("PRIVATE KEY-----") {
        return Err(not_a_key().into());
    }
    if let Ok(key) = EncodingKey::from_ed_pem(&pem) {
        return Ok((Algorithm::EdDSA, key));
    }
    if let Ok(key) = EncodingKey::from_ec_pem(&pem) {
        return Ok((Algorithm::ES256, key));
    }
    if let Ok(key) = EncodingKey::from_rsa_pem(&pem) {
        return Ok((Algorithm::RS256, key));
    }
    Err(not_a_key().into())
}
