//! JSON Web Key Sets: parsing one into verification keys, and keeping a
//! verifier's keys in step with a file or (feature `jwks-url`) a URL, so
//! that keys rotate without a restart.
//!
//! Rotation: publish the new key in the set beside the old one, wait for
//! every instance to have read the set (one refresh interval), sign new
//! tokens with the new key, and remove the old key once the tokens it
//! signed have expired.

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};

use super::{key_error, Auth, Key};

#[cfg(feature = "jwks-url")]
mod url;
#[cfg(feature = "jwks-url")]
pub use url::JwksUrl;

/// The usable keys of the JWKS `json` (see [`Auth::jwks`]).
pub(super) fn parse_jwks(json: &[u8]) -> crate::Result<Vec<Key>> {
    #[derive(serde::Deserialize)]
    struct Set {
        keys: Vec<serde_json::Value>,
    }
    let set: Set = serde_json::from_slice(json)
        .map_err(|e| key_error(format!("not a JSON Web Key Set: {e}")))?;
    let mut keys = Vec::new();
    for value in set.keys {
        // A key of a kind this verifier does not know is skipped, not an
        // error: a set may hold keys for other uses.
        let Ok(jwk) = serde_json::from_value::<Jwk>(value) else {
            continue;
        };
        if let Some(key) = usable(&jwk) {
            keys.push(key);
        }
    }
    if keys.is_empty() {
        return Err(key_error(
            "the JSON Web Key Set has no RSA, P-256 or Ed25519 signature key",
        ));
    }
    Ok(keys)
}

/// The verification key of `jwk`, if it is a signature key of a kind this
/// verifier accepts, with its algorithm (RSA: RS256, P-256: ES256,
/// Ed25519: EdDSA; a differing `alg` skips the key).
fn usable(jwk: &Jwk) -> Option<Key> {
    if matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return None;
    }
    let (alg, named) = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => (Algorithm::RS256, KeyAlgorithm::RS256),
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => {
            (Algorithm::ES256, KeyAlgorithm::ES256)
        }
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => {
            (Algorithm::EdDSA, KeyAlgorithm::EdDSA)
        }
        _ => return None,
    };
    if jwk.common.key_algorithm.is_some_and(|a| a != named) {
        return None;
    }
    let decoding = DecodingKey::from_jwk(jwk).ok()?;
    Some(Key {
        kid: jwk.common.key_id.clone(),
        alg,
        decoding,
    })
}

impl Auth {
    /// A verifier over the JWKS in the file at `path` (see [`Auth::jwks`]);
    /// [`watch_file`] keeps it current.
    pub fn jwks_file(path: &std::path::Path) -> crate::Result<Auth> {
        let json =
            std::fs::read(path).map_err(|e| key_error(format!("{}: {e}", path.display())))?;
        Auth::jwks(&json).map_err(|e| key_error(format!("{}: {}", path.display(), e.message())))
    }
}

/// Re-reads the JWKS file at `path` every `every` and, when its content
/// changed, replaces the keys of `auth` (and of its clones) for the next
/// request. A file that cannot be read or holds no usable key leaves the
/// keys as they were (logged as a warning). Runs on the current Tokio
/// runtime until every clone of `auth` is dropped.
pub fn watch_file(auth: &Auth, path: PathBuf, every: Duration) -> tokio::task::JoinHandle<()> {
    let keys: Weak<ArcSwap<Vec<Key>>> = Arc::downgrade(&auth.keys);
    tokio::spawn(async move {
        let mut last: Option<Vec<u8>> = std::fs::read(&path).ok();
        loop {
            tokio::time::sleep(every).await;
            let Some(keys) = keys.upgrade() else { return };
            let read_path = path.clone();
            let read = tokio::task::spawn_blocking(move || std::fs::read(read_path)).await;
            let json = match read {
                Ok(Ok(json)) => json,
                Ok(Err(e)) => {
                    tracing::warn!(target: "accord::http", path = %path.display(), error = %e, "cannot read the JWKS file; keeping the keys");
                    continue;
                }
                Err(_) => continue,
            };
            if last.as_ref() == Some(&json) {
                continue;
            }
            match parse_jwks(&json) {
                Ok(new) => {
                    tracing::info!(target: "accord::http", path = %path.display(), keys = new.len(), "JWKS reloaded");
                    keys.store(Arc::new(new));
                    last = Some(json);
                }
                Err(e) => {
                    tracing::warn!(target: "accord::http", path = %path.display(), error = %e, "the JWKS file has no usable key; keeping the keys");
                }
            }
        }
    })
}
