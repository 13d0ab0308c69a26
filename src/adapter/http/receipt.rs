//! Signed consent receipts: the receipt of an acceptance version as a JWS
//! (RFC 7515 compact serialization) signed with Ed25519 (`alg` `EdDSA`,
//! RFC 8037), the public key published as a JWK set at
//! `/.well-known/jwks.json`, and the verifier.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::signature::{Ed25519KeyPair, KeyPair, UnparsedPublicKey, ED25519};
use serde_json::{json, Value};

use crate::core::consent::ledger::{self, LedgerHead};
use crate::core::consent::receipt::{ConsentReceipt, EntryRef};
use crate::Error;
use crate::ErrorCode;

/// The key that signs receipts.
pub struct ReceiptSigner {
    pair: Ed25519KeyPair,
    kid: String,
}

impl std::fmt::Debug for ReceiptSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReceiptSigner")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl ReceiptSigner {
    /// A signer from a 32-byte Ed25519 seed (the private key); `kid` is the
    /// first 16 hex digits of the SHA-256 of the public key.
    pub fn from_seed(seed: &[u8]) -> Result<Self, Error> {
        let pair = Ed25519KeyPair::from_seed_unchecked(seed)
            .map_err(|_| Error::new(ErrorCode::InvalidReceiptKey, "an Ed25519 seed is 32 bytes"))?;
        let kid = ledger::sha256_hex(pair.public_key().as_ref())[..16].to_owned();
        Ok(ReceiptSigner { pair, kid })
    }

    /// The public key, raw (32 bytes).
    pub fn public_key(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }

    /// The key id in the JWS header and the JWK set.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The JWK set of the public key (RFC 8037 `OKP`, `Ed25519`).
    pub fn jwks(&self) -> Value {
        json!({"keys": [{
            "kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig",
            "kid": self.kid, "x": URL_SAFE_NO_PAD.encode(self.public_key()),
        }]})
    }

    /// The receipt as a compact JWS. Ed25519 signatures are deterministic:
    /// the same receipt always gives the same bytes.
    pub fn sign(&self, receipt: &ConsentReceipt) -> String {
        let header = json!({"alg": "EdDSA", "typ": "JWT", "kid": self.kid});
        let payload = serde_json::to_vec(receipt).unwrap_or_default();
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(payload)
        );
        let signature = self.pair.sign(signing_input.as_bytes());
        format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        )
    }
}

/// Why a receipt does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptError {
    /// Not three base64url parts, or a header or payload that is not the
    /// JSON of a receipt.
    #[error("not a consent receipt JWS: {0}")]
    Malformed(String),
    /// The header asks for another algorithm than EdDSA.
    #[error("the receipt is not signed with EdDSA")]
    Algorithm,
    /// The signature does not match the key.
    #[error("the signature does not verify with the key")]
    Signature,
    /// The ledger has no entry at the receipt's position with its hash, or
    /// the ledger itself does not verify.
    #[error("the receipt is not in the ledger: {0}")]
    NotInLedger(String),
}

/// Checks a receipt's signature with `public_key` (raw, 32 bytes) and
/// returns the receipt.
pub fn verify_receipt(jws: &str, public_key: &[u8]) -> Result<ConsentReceipt, ReceiptError> {
    let malformed = |m: &str| ReceiptError::Malformed(m.to_owned());
    let mut parts = jws.trim().split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed("three parts separated by dots"));
    };
    let decode = |part: &str| {
        URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| malformed("base64url"))
    };
    let header: Value =
        serde_json::from_slice(&decode(h)?).map_err(|_| malformed("header JSON"))?;
    if header.get("alg").and_then(Value::as_str) != Some("EdDSA") || header.get("crit").is_some() {
        return Err(ReceiptError::Algorithm);
    }
    UnparsedPublicKey::new(&ED25519, public_key)
        .verify(format!("{h}.{p}").as_bytes(), &decode(s)?)
        .map_err(|_| ReceiptError::Signature)?;
    serde_json::from_slice(&decode(p)?).map_err(|_| malformed("payload is not a receipt"))
}

/// Checks that `receipt` is in a ledger: `entries` are the ledger's texts
/// in order (an export), `head` its head when known. The ledger must
/// verify, and its entry at the receipt's position must carry the
/// receipt's hash.
pub fn receipt_in_ledger<'a>(
    receipt: &ConsentReceipt,
    entries: impl IntoIterator<Item = &'a str>,
    head: Option<&LedgerHead>,
) -> Result<(), ReceiptError> {
    let texts: Vec<&str> = entries.into_iter().collect();
    let report = ledger::verify(texts.iter().copied(), head);
    if let Some(p) = report.problem {
        return Err(ReceiptError::NotInLedger(p.detail));
    }
    let at = usize::try_from(receipt.ledger_position - 1)
        .ok()
        .and_then(|i| texts.get(i))
        .and_then(|t| EntryRef::parse(t));
    match at {
        Some(e) if e.hash == receipt.ledger_hash && e.subject == receipt.pii_principal_id => Ok(()),
        Some(_) => Err(ReceiptError::NotInLedger(format!(
            "entry {} has another hash",
            receipt.ledger_position
        ))),
        None => Err(ReceiptError::NotInLedger(format!(
            "the ledger has no entry {}",
            receipt.ledger_position
        ))),
    }
}
