//! A small, fast, non-cryptographic hasher for the engine's internal maps.
//!
//! The engine hashes short keys (attribute names, request values, slots) on
//! every search. The standard library's SipHash resists hash flooding, which
//! matters for maps whose keys an attacker chooses *and* grows; the engine's
//! maps are built from saved campaigns and only *probed* with request
//! values, so a flood can only make a probe slower, never make a map grow.
//! This is the multiply-rotate hash of rustc and Firefox ("FxHash"), written
//! here so that the core keeps its short dependency list.
//!
//! Also [`sha256_hex`], the one cryptographic digest as text (the consent
//! ledger's chain, campaign fingerprints, receipt key ids).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    sha256_hex_of(&[bytes])
}

/// Lowercase hex SHA-256 of the concatenation of `parts` (without
/// concatenating them).
pub fn sha256_hex_of(parts: &[&[u8]]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    let mut s = String::with_capacity(64);
    for b in hasher.finalize() {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    s
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// FxHash: one rotate, xor and multiply per 8 bytes of input.
#[derive(Debug, Clone, Copy, Default)]
pub struct FxHasher {
    hash: u64,
}

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// Builds [`FxHasher`]s.
pub type FxBuildHasher = BuildHasherDefault<FxHasher>;
/// A `HashMap` with [`FxHasher`].
pub type FxHashMap<K, V> = HashMap<K, V, FxBuildHasher>;
/// A `HashSet` with [`FxHasher`].
pub type FxHashSet<T> = HashSet<T, FxBuildHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash<T: Hash + ?Sized>(t: &T) -> u64 {
        FxBuildHasher::default().hash_one(t)
    }

    #[test]
    fn equal_keys_hash_equal_and_short_keys_differ() {
        assert_eq!(hash("country"), hash(&String::from("country")));
        assert_ne!(hash("a"), hash("b"));
        assert_ne!(hash("abcdefgh1"), hash("abcdefgh2"));
        let mut m: FxHashMap<Box<str>, u32> = FxHashMap::default();
        m.insert("tier".into(), 1);
        assert_eq!(m.get("tier"), Some(&1));
    }
}
