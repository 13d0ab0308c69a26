//! Bearer-token authentication and per-route authorization.
//!
//! Every route except the operations routes needs `Authorization: Bearer
//! <JWT>`. The token is verified with ONE pinned algorithm — HS256 with a
//! shared secret, RS256 with an RSA public key, or ES256 with a P-256 public
//! key — so `alg: none` and algorithm confusion (an HS256 token "signed"
//! with the RSA public key as its secret) are rejected. Claims:
//!
//! | Claim | Meaning |
//! |---|---|
//! | `sub` | who calls; becomes `createdBy`/`lastModifiedBy` (required, not blank) |
//! | `exp` | expiry, seconds since the epoch (required, checked, [`LEEWAY_SECS`] leeway) |
//! | `scope` | space-separated scopes (see [`scope`]) |
//! | `projects` | project ids the token may use, or `["*"]` for all |
//!
//! The header may not ask for more than the verifier does: a `crit`
//! parameter (RFC 7515 §4.1.11: extensions the recipient must understand;
//! this verifier understands none) or an unencoded payload (`b64: false`,
//! RFC 7797) is refused rather than ignored.
//!
//! Missing, malformed, badly signed or expired token: 401 with
//! `WWW-Authenticate: Bearer` (and `error="invalid_token"` when a token was
//! sent). A path `{projId}` not in `projects`, or a missing scope: 403.

use std::sync::Arc;

use arc_swap::ArcSwap;
use axum::http::HeaderValue;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};

pub mod jwks;
mod principal;
use jwks::parse_jwks;
pub(crate) use principal::{guard, Guard};
pub use principal::{Claims, Principal};

use super::error::ApiError;
use crate::Error;
use crate::ErrorCode;

/// The scopes of the API.
pub mod scope {
    /// Campaign search and redemption list.
    pub const CAMPAIGN_READ: &str = "campaign.r";
    /// Redeem and cancel.
    pub const CAMPAIGN_WRITE: &str = "campaign.w";
    /// Campaign administration (CRUD, quota usage, search `explain`/`at`).
    pub const CAMPAIGN_ADMIN: &str = "campaign.admin";
    /// Consent reads of the application-facing group.
    pub const CONSENT_READ: &str = "consent.r";
    /// Consent writes of the application-facing group (with `consent.r`).
    pub const CONSENT_WRITE: &str = "consent.w";
    /// Content-store reads.
    pub const CMS_READ: &str = "cms.r";
    /// Content-store writes.
    pub const CMS_WRITE: &str = "cms.w";
    /// Consent evidence: a data subject's full history and state at a time
    /// (the admin console's data-subject lookup).
    pub const CONSENT_AUDIT: &str = "consent.audit";
    /// Consent administration: erasing a data subject.
    pub const CONSENT_ADMIN: &str = "consent.admin";
    /// Events out: webhook endpoints, their deliveries, redelivery.
    pub const EVENTS_ADMIN: &str = "events.admin";
    /// Every scope, for development tokens.
    pub const ALL: &[&str] = &[
        CAMPAIGN_READ,
        CAMPAIGN_WRITE,
        CAMPAIGN_ADMIN,
        CONSENT_READ,
        CONSENT_WRITE,
        CMS_READ,
        CMS_WRITE,
        CONSENT_AUDIT,
        CONSENT_ADMIN,
        EVENTS_ADMIN,
    ];
}

/// Shortest HS256 secret accepted, in bytes (RFC 7518 §3.2: at least the
/// hash size).
pub const MIN_SECRET_BYTES: usize = 32;

/// Clock skew tolerated on `exp` and `nbf`, in seconds: enough for hosts
/// whose clocks are kept by NTP, short enough that an expired token stops
/// working within half a minute. (At most 60 s, tested.)
pub const LEEWAY_SECS: u64 = 30;

/// The algorithms a verifier may accept, each only with a key of its kind.
const ALGORITHMS: [Algorithm; 4] = [
    Algorithm::HS256,
    Algorithm::RS256,
    Algorithm::ES256,
    Algorithm::EdDSA,
];

/// One verification key: its id (`kid`), if any, and its one algorithm.
struct Key {
    kid: Option<String>,
    alg: Algorithm,
    decoding: DecodingKey,
}

/// Fetches a key set again when a token names a key the verifier does
/// not know (a JWKS URL: the issuer may have rotated its key since the
/// last fetch). Implementations bound how often that may happen.
trait RefreshKeys: Send + Sync {
    fn refresh(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>;
}

/// Why a token was refused: its key is not known (a refresh of the key
/// set may help), or anything else.
enum Refusal {
    UnknownKid(ApiError),
    Other(ApiError),
}

impl From<ApiError> for Refusal {
    fn from(e: ApiError) -> Self {
        Refusal::Other(e)
    }
}

impl Refusal {
    fn into_error(self) -> ApiError {
        match self {
            Refusal::UnknownKid(e) | Refusal::Other(e) => e,
        }
    }
}

/// How tokens are verified: keys, each pinned to one algorithm — one
/// HS256 secret or one public key, or the keys of a JWKS (selected by the
/// token's `kid`, and replaced while serving when the set is refreshed).
#[derive(Clone)]
pub struct Auth {
    keys: Arc<ArcSwap<Vec<Key>>>,
    /// One validation per algorithm of [`ALGORITHMS`], in that order.
    validations: Arc<Vec<Validation>>,
    jwks: bool,
    /// For a JWKS URL: fetches the set again on an unknown `kid`.
    refresher: Option<Arc<dyn RefreshKeys>>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys = self.keys.load();
        f.debug_struct("Auth")
            .field(
                "keys",
                &keys
                    .iter()
                    .map(|k| format!("{:?} {:?}", k.alg, k.kid))
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

fn key_error(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidJwtKey, message)
}

impl Auth {
    fn with_keys(keys: Vec<Key>, jwks: bool) -> Self {
        let validations = ALGORITHMS
            .iter()
            .map(|&alg| {
                let mut validation = Validation::new(alg);
                validation.algorithms = vec![alg];
                validation.set_required_spec_claims(&["exp", "sub"]);
                validation.validate_exp = true;
                validation.validate_nbf = true;
                validation.validate_aud = false;
                validation.leeway = LEEWAY_SECS;
                validation
            })
            .collect();
        Auth {
            keys: Arc::new(ArcSwap::from_pointee(keys)),
            validations: Arc::new(validations),
            jwks,
            refresher: None,
        }
    }

    fn pinned(key: DecodingKey, alg: Algorithm) -> Self {
        Auth::with_keys(
            vec![Key {
                kid: None,
                alg,
                decoding: key,
            }],
            false,
        )
    }

    fn validations_mut(&mut self) -> &mut Vec<Validation> {
        Arc::make_mut(&mut self.validations)
    }

    /// HS256 with a shared secret of at least [`MIN_SECRET_BYTES`] bytes.
    pub fn hs256(secret: impl AsRef<[u8]>) -> crate::Result<Self> {
        let secret = secret.as_ref();
        if secret.len() < MIN_SECRET_BYTES {
            return Err(key_error(format!(
                "an HS256 secret needs at least {MIN_SECRET_BYTES} bytes, got {}",
                secret.len()
            )));
        }
        Ok(Auth::pinned(
            DecodingKey::from_secret(secret),
            Algorithm::HS256,
        ))
    }

    /// RS256 with an RSA public key in PEM (`BEGIN PUBLIC KEY` or
    /// `BEGIN RSA PUBLIC KEY`).
    pub fn rs256_pem(pem: &[u8]) -> crate::Result<Self> {
        let key = DecodingKey::from_rsa_pem(pem)
            .map_err(|e| key_error(format!("not an RSA public key in PEM: {e}")))?;
        Ok(Auth::pinned(key, Algorithm::RS256))
    }

    /// ES256 with a P-256 public key in PEM.
    pub fn es256_pem(pem: &[u8]) -> crate::Result<Self> {
        let key = DecodingKey::from_ec_pem(pem)
            .map_err(|e| key_error(format!("not an EC public key in PEM: {e}")))?;
        Ok(Auth::pinned(key, Algorithm::ES256))
    }

    /// RS256 or ES256, by the type of the PEM public key.
    pub fn public_key_pem(pem: &[u8]) -> crate::Result<Self> {
        Auth::rs256_pem(pem).or_else(|_| {
            Auth::es256_pem(pem).map_err(|_| {
                key_error("expected an RSA or P-256 EC public key in PEM (BEGIN PUBLIC KEY)")
            })
        })
    }

    /// The public keys of a JSON Web Key Set (RFC 7517): RSA keys verify
    /// RS256, P-256 keys ES256, Ed25519 keys EdDSA; a token names its key
    /// with `kid` (a set of one key also takes tokens without). Symmetric
    /// keys, encryption keys and other kinds are skipped; a set with no
    /// usable key is an error. The keys stay until
    /// [`replace_jwks`](Self::replace_jwks) replaces them;
    /// [`jwks::watch_file`] does so whenever a file changes.
    pub fn jwks(json: &[u8]) -> crate::Result<Self> {
        Ok(Auth::with_keys(parse_jwks(json)?, true))
    }

    /// Replaces the keys of a JWKS verifier (and of every clone of it) with
    /// those of `json`, at once for the next request; on an error the keys
    /// stay as they were.
    pub fn replace_jwks(&self, json: &[u8]) -> crate::Result<()> {
        if !self.jwks {
            return Err(key_error("this verifier does not use a JWKS"));
        }
        self.keys.store(Arc::new(parse_jwks(json)?));
        Ok(())
    }

    /// Also requires `iss` to be `issuer`.
    #[must_use]
    pub fn with_issuer(mut self, issuer: &str) -> Self {
        for validation in self.validations_mut() {
            validation.set_issuer(&[issuer]);
            validation.required_spec_claims.insert("iss".to_owned());
        }
        self
    }

    /// Also requires `aud` to contain `audience`.
    #[must_use]
    pub fn with_audience(mut self, audience: &str) -> Self {
        for validation in self.validations_mut() {
            validation.set_audience(&[audience]);
            validation.validate_aud = true;
            validation.required_spec_claims.insert("aud".to_owned());
        }
        self
    }

    /// The algorithm accepted: `HS256`, `RS256` or `ES256`; `JWKS` for a
    /// key set.
    pub fn algorithm(&self) -> String {
        if self.jwks {
            return "JWKS".to_owned();
        }
        self.keys
            .load()
            .first()
            .map(|k| format!("{:?}", k.alg))
            .unwrap_or_default()
    }

    /// Verifies an `Authorization` header value.
    pub fn authenticate(&self, authorization: Option<&HeaderValue>) -> Result<Principal, ApiError> {
        self.verify(authorization).map_err(Refusal::into_error)
    }

    /// Verifies an `Authorization` header value like
    /// [`authenticate`](Self::authenticate); for a verifier over a JWKS
    /// URL (`JwksUrl`, feature `jwks-url`), a token naming a key the set lacks
    /// first has the set fetched again (at most once per the URL's
    /// interval for unknown keys), so that a key the issuer has just
    /// rotated in is accepted at once.
    pub async fn authenticate_fresh(
        &self,
        authorization: Option<&HeaderValue>,
    ) -> Result<Principal, ApiError> {
        match (self.verify(authorization), &self.refresher) {
            (Err(Refusal::UnknownKid(_)), Some(refresher)) => {
                refresher.refresh().await;
                self.authenticate(authorization)
            }
            (result, _) => result.map_err(Refusal::into_error),
        }
    }

    fn verify(&self, authorization: Option<&HeaderValue>) -> Result<Principal, Refusal> {
        let Some(value) = authorization else {
            return Err(ApiError::unauthorized(
                false,
                "this route needs an Authorization: Bearer token",
            )
            .into());
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| {
                let (scheme, rest) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
            })
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                ApiError::unauthorized(true, "the Authorization header is not \"Bearer <token>\"")
            })?;
        check_header(token).map_err(|why| ApiError::unauthorized(true, why))?;
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| ApiError::unauthorized(true, "the token is malformed"))?;
        let keys = self.keys.load();
        let key = match &header.kid {
            Some(kid) => keys
                .iter()
                .find(|k| k.kid.as_deref() == Some(kid.as_str()))
                .or_else(|| keys.first().filter(|k| keys.len() == 1 && k.kid.is_none())),
            None => keys.first().filter(|_| keys.len() == 1),
        }
        .ok_or_else(|| {
            Refusal::UnknownKid(ApiError::unauthorized(
                true,
                "the token's key (kid) is not known",
            ))
        })?;
        if header.alg != key.alg {
            return Err(
                ApiError::unauthorized(true, "the token's algorithm is not accepted").into(),
            );
        }
        let validation = ALGORITHMS
            .iter()
            .position(|&a| a == key.alg)
            .and_then(|i| self.validations.get(i))
            .ok_or_else(|| ApiError::from(Error::internal("a key without its validation")))?;
        let data =
            jsonwebtoken::decode::<Claims>(token, &key.decoding, validation).map_err(|e| {
                use jsonwebtoken::errors::ErrorKind as K;
                let why = match e.kind() {
                    K::ExpiredSignature => "the token has expired",
                    K::ImmatureSignature => "the token is not valid yet",
                    K::InvalidSignature => "the token's signature is invalid",
                    K::InvalidAlgorithm | K::InvalidAlgorithmName => {
                        "the token's algorithm is not accepted"
                    }
                    K::MissingRequiredClaim(_) => "the token lacks a required claim (exp, sub)",
                    K::InvalidIssuer => "the token's issuer is not accepted",
                    K::InvalidAudience => "the token's audience is not accepted",
                    _ => "the token is malformed",
                };
                ApiError::unauthorized(true, why)
            })?;
        if data.claims.sub.trim().is_empty() {
            return Err(ApiError::unauthorized(true, "the token's sub is empty").into());
        }
        Ok(Principal::from_claims(data.claims))
    }
}

/// Refuses a token whose header asks for processing this verifier does not
/// do (jsonwebtoken reads only the parameters it knows and would ignore
/// these): any `crit` entry — every one names an extension the verifier
/// would have to understand, and it understands none — and `b64` other
/// than `true` (an unencoded payload: the signature would cover other
/// bytes than the ones decoded).
fn check_header(token: &str) -> Result<(), &'static str> {
    use base64::Engine as _;
    const MALFORMED: &str = "the token is malformed";
    let encoded = token.split('.').next().unwrap_or_default();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|_| MALFORMED)?;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&bytes).map_err(|_| MALFORMED)?;
    if header.contains_key("crit") {
        return Err("the token's header lists critical extensions (crit), which are not accepted");
    }
    if header
        .get("b64")
        .is_some_and(|b64| b64 != &serde_json::Value::Bool(true))
    {
        return Err("the token's payload is not base64url encoded (b64), which is not accepted");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leeway_is_at_most_a_minute() {
        const { assert!(LEEWAY_SECS <= 60) };
        assert!(Auth::hs256([7u8; 32])
            .unwrap()
            .validations
            .iter()
            .all(|v| v.leeway == LEEWAY_SECS));
    }

    /// `check_header` over the header JSON `h`.
    fn header(h: &str) -> Result<(), &'static str> {
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(h);
        check_header(&format!("{encoded}.e30.sig"))
    }

    #[test]
    fn headers_asking_for_more_are_refused() {
        assert!(header(r#"{"alg":"HS256","typ":"JWT"}"#).is_ok());
        assert!(header(r#"{"alg":"HS256","b64":true}"#).is_ok());
        for bad in [
            r#"{"alg":"HS256","crit":["exp"]}"#,
            r#"{"alg":"HS256","crit":[]}"#,
            r#"{"alg":"HS256","crit":"b64","b64":false}"#,
            r#"{"alg":"HS256","b64":false}"#,
            r#"{"alg":"HS256","b64":"false"}"#,
            r#"["alg"]"#,
            "not json",
        ] {
            assert!(header(bad).is_err(), "{bad}");
        }
        assert!(check_header("%%%.e30.sig").is_err());
    }
}
