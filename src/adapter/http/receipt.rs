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
use crate::core::error::ErrorCode;
use crate::Error;

/// The key that signs receipts, and the public keys of earlier signing
/// keys, still published so that the receipts they signed verify.
pub struct ReceiptSigner {
    pair: Ed25519KeyPair,
    kid: String,
    /// The JWS header, base64url-encoded: the same for every receipt.
    header: String,
    retired: Vec<Vec<u8>>,
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
        let kid = kid_of(pair.public_key().as_ref());
        let header = json!({"alg": "EdDSA", "typ": "JWT", "kid": kid});
        Ok(ReceiptSigner {
            pair,
            header: URL_SAFE_NO_PAD.encode(header.to_string()),
            kid,
            retired: Vec::new(),
        })
    }

    /// The public key (raw, 32 bytes) of a 32-byte Ed25519 seed: what a
    /// retired signing key leaves published.
    pub fn public_key_of_seed(seed: &[u8]) -> Result<Vec<u8>, Error> {
        Ok(Self::from_seed(seed)?.public_key().to_vec())
    }

    /// Also publishes `public_key` (raw, 32 bytes), a key that signed
    /// receipts before this one: after a rotation the receipts it signed
    /// still verify against the JWK set. Its own key, or one already
    /// listed, is not listed twice.
    pub fn with_retired_key(mut self, public_key: &[u8]) -> Result<Self, Error> {
        if public_key.len() != 32 {
            return Err(Error::new(
                ErrorCode::InvalidReceiptKey,
                "an Ed25519 public key is 32 bytes",
            ));
        }
        if public_key != self.public_key() && !self.retired.iter().any(|k| k == public_key) {
            self.retired.push(public_key.to_vec());
        }
        Ok(self)
    }

    /// The public key, raw (32 bytes).
    pub fn public_key(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }

    /// The key id in the JWS header and the JWK set.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The JWK set (RFC 8037 `OKP`, `Ed25519`): the signing key first,
    /// then the retired ones.
    pub fn jwks(&self) -> Value {
        let keys: Vec<Value> = std::iter::once(self.public_key())
            .chain(self.retired.iter().map(Vec::as_slice))
            .map(|key| {
                json!({
                    "kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig",
                    "kid": kid_of(key), "x": URL_SAFE_NO_PAD.encode(key),
                })
            })
            .collect();
        json!({ "keys": keys })
    }

    /// The receipt as a compact JWS. Ed25519 signatures are deterministic:
    /// the same receipt always gives the same bytes.
    pub fn sign(&self, receipt: &ConsentReceipt) -> String {
        let payload = serde_json::to_vec(receipt).unwrap_or_default();
        // header.payload, then .signature appended to the same text.
        let mut jws = String::with_capacity(self.header.len() + payload.len() * 4 / 3 + 100);
        jws.push_str(&self.header);
        jws.push('.');
        URL_SAFE_NO_PAD.encode_string(payload, &mut jws);
        let signature = self.pair.sign(jws.as_bytes());
        jws.push('.');
        URL_SAFE_NO_PAD.encode_string(signature.as_ref(), &mut jws);
        jws
    }
}

/// A key's id: the first 16 hex digits of the SHA-256 of the public key.
fn kid_of(public_key: &[u8]) -> String {
    crate::core::hash::sha256_hex(public_key)[..16].to_owned()
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

/// Checks a receipt's signature with the key of a JWK set (as served at
/// `/.well-known/jwks.json`) that its header's `kid` names, and returns the
/// receipt. A set of several keys (after rotations) thus verifies receipts
/// of every key it still lists.
pub fn verify_receipt_with_jwks(jws: &str, jwks: &Value) -> Result<ConsentReceipt, ReceiptError> {
    let header = jws
        .trim()
        .split('.')
        .next()
        .and_then(|h| URL_SAFE_NO_PAD.decode(h).ok())
        .and_then(|h| serde_json::from_slice::<Value>(&h).ok())
        .ok_or_else(|| ReceiptError::Malformed("header JSON".to_owned()))?;
    let kid = header.get("kid").and_then(Value::as_str);
    let key = jwks
        .get("keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|k| kid.is_some() && k.get("kid").and_then(Value::as_str) == kid)
        .and_then(|k| k.get("x").and_then(Value::as_str))
        .and_then(|x| URL_SAFE_NO_PAD.decode(x).ok())
        .ok_or(ReceiptError::Signature)?;
    verify_receipt(jws, &key)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rotated_signer_publishes_its_retired_keys() {
        let old = ReceiptSigner::from_seed(&[1; 32]).unwrap();
        let retired = ReceiptSigner::public_key_of_seed(&[1; 32]).unwrap();
        assert_eq!(retired, old.public_key());
        let new = ReceiptSigner::from_seed(&[2; 32])
            .unwrap()
            .with_retired_key(&retired)
            .unwrap()
            .with_retired_key(&retired)
            .unwrap();
        let jwks = new.jwks();
        let kids: Vec<&str> = jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap())
            .collect();
        assert_eq!(kids, [new.kid(), old.kid()]);
        // A signer's own key is not listed twice; a short key is refused.
        let same = ReceiptSigner::from_seed(&[2; 32]).unwrap();
        let own = same.public_key().to_vec();
        assert_eq!(
            same.with_retired_key(&own).unwrap().jwks()["keys"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        assert!(ReceiptSigner::from_seed(&[2; 32])
            .unwrap()
            .with_retired_key(&[0; 31])
            .is_err());
    }

    #[test]
    fn receipts_of_every_published_key_verify_by_kid() {
        let receipt = ConsentReceipt {
            version: crate::core::consent::receipt::VERSION.to_owned(),
            consent_receipt_id: "a.1".into(),
            jurisdiction: "TH".into(),
            consent_timestamp: 1_700_000_000,
            collection_method: "recorded by app".into(),
            language: "und".into(),
            pii_principal_id: "c0ffee".into(),
            pii_controllers: vec![crate::core::consent::receipt::Controller::default()],
            policy_url: String::new(),
            services: Vec::new(),
            sensitive: false,
            status: "ACCEPTED".into(),
            project_id: "p".into(),
            consent_id: "c".into(),
            consent_revision: Some(1),
            privacy_notice_id: None,
            privacy_notice_revision: None,
            acceptance_id: Some("a".into()),
            acceptance_version: Some(1),
            event: "consentAcceptance".into(),
            purpose_event_id: None,
            form_screen: None,
            ledger_position: 1,
            ledger_hash: "00".into(),
        };
        let old = ReceiptSigner::from_seed(&[1; 32]).unwrap();
        let old_jws = old.sign(&receipt);
        let new = ReceiptSigner::from_seed(&[2; 32])
            .unwrap()
            .with_retired_key(old.public_key())
            .unwrap();
        let new_jws = new.sign(&receipt);
        let jwks = new.jwks();
        assert!(verify_receipt_with_jwks(&old_jws, &jwks).is_ok());
        assert!(verify_receipt_with_jwks(&new_jws, &jwks).is_ok());
        // Without the retired key, the old receipt has no key.
        let alone = ReceiptSigner::from_seed(&[2; 32]).unwrap().jwks();
        assert_eq!(
            verify_receipt_with_jwks(&old_jws, &alone).unwrap_err(),
            ReceiptError::Signature
        );
    }
}
