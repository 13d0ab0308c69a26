//! The keys of consent evidence: erasure's pseudonym key and the key that
//! signs consent receipts, with the controller receipts name.
//!
//! Each key comes from configuration; when one is not configured, the
//! server keeps a random one with the data (table `accord_settings`, as
//! `--demo` keeps its development secret), so pseudonyms stay the same and
//! receipts keep verifying across restarts. Only the memory store, which
//! keeps nothing, draws fresh keys at every start.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use super::open::{random_secret, Opened};
use super::BoxError;
use crate::adapter::http::receipt::ReceiptSigner;
use crate::adapter::http::{Api, HttpStore};
use crate::core::consent::erasure::PseudonymKey;
use crate::core::consent::receipt::Controller;

/// The names under which unconfigured keys are kept.
const PSEUDONYM_KEY: &str = "pseudonym_key";
const RECEIPT_KEY: &str = "receipt_signing_key";

/// The keys and the controller of consent evidence.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EvidenceFlags {
    /// Secret key of erasure's pseudonyms (at least 32 bytes); default: one
    /// kept in the database.
    #[arg(long, env = "ACCORD_PSEUDONYM_KEY", hide_env_values = true)]
    pub pseudonym_key: Option<String>,
    /// Ed25519 private key (32-byte seed, 64 hex digits) that signs consent
    /// receipts; default: one kept in the database.
    #[arg(long, env = "ACCORD_RECEIPT_KEY", hide_env_values = true)]
    pub receipt_key: Option<String>,
    /// A key that signed receipts before `--receipt-key`, still published
    /// in `/.well-known/jwks.json`: its seed (64 hex digits) or its public
    /// key (the JWK's `x`, base64url). Repeat, or comma-separate, for
    /// several.
    #[arg(
        long = "receipt-retired-key",
        env = "ACCORD_RECEIPT_RETIRED_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub receipt_retired_keys: Vec<String>,
    /// The controller named in receipts (`piiController`; default `Accord`).
    #[arg(long, env = "ACCORD_RECEIPT_CONTROLLER")]
    pub receipt_controller: Option<String>,
    /// How to reach the controller (`contact` in receipts).
    #[arg(long, env = "ACCORD_RECEIPT_CONTACT")]
    pub receipt_contact: Option<String>,
    /// The controller's jurisdiction (`jurisdiction` in receipts, e.g. `TH`).
    #[arg(long, env = "ACCORD_RECEIPT_JURISDICTION")]
    pub receipt_jurisdiction: Option<String>,
    /// The controller's privacy policy (`policyUrl` in receipts).
    #[arg(long, env = "ACCORD_RECEIPT_POLICY_URL")]
    pub receipt_policy_url: Option<String>,
    /// How many days an acceptance's personal data is kept after it ended
    /// (withdrawn or expired); `POST …/retention/purge` removes it after.
    /// Default: none (a purge answers 409 `retention_not_configured`).
    #[arg(long, env = "ACCORD_CONSENT_RETENTION_DAYS", value_parser = clap::value_parser!(u32).range(1..=36500))]
    pub consent_retention_days: Option<u32>,
}

impl EvidenceFlags {
    /// The controller of the flags, defaults for the fields not given.
    fn controller(&self) -> Controller {
        let mut c = Controller::default();
        let set = |field: &mut String, flag: &Option<String>| {
            if let Some(v) = flag {
                field.clone_from(v);
            }
        };
        set(&mut c.pii_controller, &self.receipt_controller);
        set(&mut c.contact, &self.receipt_contact);
        set(&mut c.jurisdiction, &self.receipt_jurisdiction);
        set(&mut c.policy_url, &self.receipt_policy_url);
        c
    }
}

/// `api` with the pseudonym key and the receipt signer of `flags`, or
/// those kept in the store of `opened`.
pub(super) async fn with_evidence_keys<S: HttpStore>(
    api: Api<S>,
    flags: &EvidenceFlags,
    opened: &Opened,
) -> Result<Api<S>, BoxError> {
    let pseudonym = match &flags.pseudonym_key {
        Some(key) => key.clone(),
        None => kept_or_random(opened, PSEUDONYM_KEY, "erasure's pseudonym key").await?,
    };
    let key = PseudonymKey::new(pseudonym.as_bytes())
        .ok_or("--pseudonym-key: a key of at least 32 bytes")?;
    let mut signer = if let Some(seed) = &flags.receipt_key {
        let signer = ReceiptSigner::from_seed(&seed_bytes(seed, "--receipt-key")?)?;
        // Receipts signed by the key kept before one was configured keep
        // verifying.
        match opened.setting(RECEIPT_KEY).await? {
            Some(kept) => signer.with_retired_key(&public_key(&kept, "the kept key")?)?,
            None => signer,
        }
    } else {
        let seed = kept_or_random(opened, RECEIPT_KEY, "the receipt signing key").await?;
        ReceiptSigner::from_seed(&seed_bytes(&seed, "the kept receipt key")?)?
    };
    for retired in &flags.receipt_retired_keys {
        signer = signer.with_retired_key(&public_key(retired, "--receipt-retired-key")?)?;
    }
    tracing::info!(kid = signer.kid(), "consent receipts are signed");
    let api = match flags.consent_retention_days {
        Some(days) => api.with_consent_retention(chrono::Duration::days(i64::from(days))),
        None => api,
    };
    Ok(api
        .with_pseudonym_key(key)
        .with_receipt_signer(signer, flags.controller()))
}

/// The key kept under `name` (a random one stored first if none), or a
/// random one for the memory store.
async fn kept_or_random(opened: &Opened, name: &str, what: &str) -> Result<String, BoxError> {
    let fresh = random_secret()?;
    if let Some(kept) = opened.setting_or_insert(name, &fresh).await? {
        tracing::info!("{what} is not configured: using the one kept in the database");
        return Ok(kept);
    }
    tracing::warn!(
        "{what} is not configured and the memory store keeps nothing: a random key until the server stops"
    );
    Ok(fresh)
}

/// 64 hex digits as 32 bytes.
fn seed_bytes(text: &str, what: &str) -> Result<[u8; 32], BoxError> {
    let text = text.trim();
    let bad = || format!("{what}: an Ed25519 seed is 64 hex digits");
    if text.len() != 64 || !text.is_ascii() {
        return Err(bad().into());
    }
    let mut seed = [0u8; 32];
    for (i, byte) in seed.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(seed)
}

/// A retired key's public key: from its seed (64 hex digits) or as
/// published (base64url, 32 bytes).
fn public_key(text: &str, what: &str) -> Result<Vec<u8>, BoxError> {
    let text = text.trim();
    if text.len() == 64 {
        return Ok(ReceiptSigner::public_key_of_seed(&seed_bytes(text, what)?)?);
    }
    match URL_SAFE_NO_PAD.decode(text) {
        Ok(key) if key.len() == 32 => Ok(key),
        _ => Err(format!(
            "{what}: a seed (64 hex digits) or a public key (43 base64url characters)"
        )
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_and_public_keys_are_read_or_refused() {
        let hex = "01".repeat(32);
        assert_eq!(seed_bytes(&hex, "k").unwrap(), [1; 32]);
        assert!(seed_bytes(&"0g".repeat(32), "k").is_err());
        assert!(seed_bytes("0101", "k").is_err());
        assert!(seed_bytes(&"é".repeat(32), "k").is_err());
        let from_seed = public_key(&hex, "k").unwrap();
        let published = URL_SAFE_NO_PAD.encode(&from_seed);
        assert_eq!(public_key(&published, "k").unwrap(), from_seed);
        let err = public_key("short", "--receipt-retired-key").unwrap_err();
        assert!(
            err.to_string().starts_with("--receipt-retired-key"),
            "{err}"
        );
    }

    #[test]
    fn the_controller_takes_what_is_given() {
        let flags = EvidenceFlags {
            receipt_controller: Some("Example Co.".into()),
            receipt_jurisdiction: Some("TH".into()),
            ..EvidenceFlags::default()
        };
        let c = flags.controller();
        assert_eq!(c.pii_controller, "Example Co.");
        assert_eq!(c.jurisdiction, "TH");
        assert_eq!(c.contact, Controller::default().contact);
    }
}
