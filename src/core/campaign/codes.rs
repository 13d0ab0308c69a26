//! Unique code pools: the codes a campaign hands out, each usable a limited
//! number of times.
//!
//! A code is matched by its **normalized** form ([`normalize`]): surrounding
//! and inner whitespace and dashes are dropped, ASCII letters uppercased, so
//! `summer-7kx9 qm2p` finds `SUMMER-7KX9QM2P`. The normalized form is unique
//! within a project (two codes that differ only in case or dashes are one
//! code); the code as generated or imported is kept for display.
//!
//! Generated codes draw from an alphabet without look-alikes
//! ([`DEFAULT_ALPHABET`]: no `0`/`O`, `1`/`I`/`L`), through a counter-mode
//! SHA-256 stream over a random seed ([`CodeGenerator`]): the core stays
//! pure (the caller brings the seed) and a generator is a value the stores
//! can draw from again when a transaction is retried.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::core::error::ErrorCode;
use crate::{Error, FieldError};

/// The alphabet of generated codes: digits and uppercase letters without
/// `0`, `1`, `I`, `L` and `O`, which read alike (31 characters).
pub const DEFAULT_ALPHABET: &str = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";
/// The random part of a generated code when no length is given.
pub const DEFAULT_CODE_LENGTH: usize = 8;
/// Bounds of the random part's length.
pub const MIN_CODE_LENGTH: usize = 4;
/// Bounds of the random part's length.
pub const MAX_CODE_LENGTH: usize = 32;
/// Longest prefix or suffix of generated codes.
pub const MAX_AFFIX_LEN: usize = 16;
/// Longest code (as imported, before normalization).
pub const MAX_CODE_LEN: usize = 64;
/// Most characters of a custom alphabet.
pub const MAX_ALPHABET_LEN: usize = 36;
/// Highest per-code usage limit.
pub const MAX_USAGE_LIMIT: i64 = 1_000_000_000;
/// Most codes one generate call of the library or the command line makes.
pub const MAX_GENERATE: u64 = 10_000_000;
/// The code space (alphabet size to the power of the length) must hold
/// this many times the codes requested, so that a random draw rarely meets
/// a code already taken.
pub const SPACE_FACTOR: u128 = 1000;

/// One code of a pool, as stored and listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PromoCode {
    /// The code as generated or imported.
    pub code: String,
    /// The campaign whose pool holds the code.
    pub campaign_id: Uuid,
    /// How many redemptions may use the code.
    pub usage_limit: i64,
    /// How many (not cancelled) redemptions used it.
    pub used: i64,
    /// Deactivated codes are refused by redeem.
    pub active: bool,
    /// When generated or imported.
    pub created_date: DateTime<Utc>,
}

impl PromoCode {
    /// The form a code is matched by.
    pub fn normalized(&self) -> String {
        normalize(&self.code)
    }
}

/// The form codes are matched by: whitespace and `-` dropped, ASCII
/// letters uppercased.
pub fn normalize(code: &str) -> String {
    code.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// Whether a character may appear in a code: ASCII letters and digits,
/// `-` and `_`.
fn code_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// A code as a caller sends it (import, lookup, redeem): trimmed; its
/// normalized form must be 1 to [`MAX_CODE_LEN`] characters of letters,
/// digits and `_`. Returns `(code, normalized)`.
pub fn parse_code(field: &str, input: &str) -> Result<(String, String), FieldError> {
    let code = input.trim();
    if code.is_empty() {
        return Err(FieldError::new(
            field,
            ErrorCode::Required,
            "a code is required",
        ));
    }
    if code.len() > MAX_CODE_LEN {
        return Err(FieldError::new(
            field,
            ErrorCode::TooLong,
            format!("a code has at most {MAX_CODE_LEN} characters"),
        ));
    }
    if let Some(bad) = code.chars().find(|c| !code_char(*c)) {
        return Err(FieldError::new(
            field,
            ErrorCode::InvalidCode,
            format!("a code holds letters, digits, '-' and '_' only, not {bad:?}"),
        ));
    }
    let normalized = normalize(code);
    if normalized.is_empty() {
        return Err(FieldError::new(
            field,
            ErrorCode::InvalidCode,
            "a code needs a letter, digit or '_' besides dashes",
        ));
    }
    Ok((code.to_owned(), normalized))
}

/// A code a customer typed (redeem, lookup): as [`parse_code`], with
/// whitespace anywhere dropped first. Returns the normalized form.
pub fn lookup_code(field: &str, input: &str) -> Result<String, FieldError> {
    let compact: String = input.chars().filter(|c| !c.is_whitespace()).collect();
    parse_code(field, &compact).map(|(_, normalized)| normalized)
}

/// How to generate codes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GenerateCodes {
    /// How many codes (1 to 10,000,000; an HTTP request at most 100,000).
    pub count: u64,
    /// Characters of the random part (4 to 32, default 8).
    #[serde(default)]
    pub length: Option<usize>,
    /// The characters drawn from (default `23456789ABCDEFGHJKMNPQRSTUVWXYZ`).
    #[serde(default)]
    pub charset: Option<String>,
    /// Text before the random part (letters, digits, `-`, `_`; at most 16).
    #[serde(default)]
    pub prefix: Option<String>,
    /// Text after the random part (letters, digits, `-`, `_`; at most 16).
    #[serde(default)]
    pub suffix: Option<String>,
    /// How many redemptions may use each code (default 1).
    #[serde(default)]
    pub usage_limit: Option<i64>,
}

/// A pure source of random codes: code `i` of a generator is a function of
/// its seed and `i` (SHA-256 of the seed, `i` and a block counter, its bytes
/// mapped onto the alphabet by rejection sampling, so every character is
/// equally likely).
#[derive(Clone, PartialEq, Eq)]
pub struct CodeGenerator {
    alphabet: Vec<u8>,
    length: usize,
    prefix: String,
    suffix: String,
    seed: [u8; 32],
}

impl std::fmt::Debug for CodeGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The seed stays out of logs: it would give every code away.
        f.debug_struct("CodeGenerator")
            .field("alphabet", &String::from_utf8_lossy(&self.alphabet))
            .field("length", &self.length)
            .field("prefix", &self.prefix)
            .field("suffix", &self.suffix)
            .finish_non_exhaustive()
    }
}

impl CodeGenerator {
    /// Code number `i`.
    pub fn code(&self, i: u64) -> String {
        let n = self.alphabet.len();
        // Bytes at or above the largest multiple of n are redrawn: no bias.
        let accept = 256 - 256 % n;
        let mut out = String::with_capacity(self.prefix.len() + self.length + self.suffix.len());
        out.push_str(&self.prefix);
        let mut left = self.length;
        let mut block = 0u32;
        while left > 0 {
            let digest = Sha256::new()
                .chain_update(self.seed)
                .chain_update(i.to_le_bytes())
                .chain_update(block.to_le_bytes())
                .finalize();
            for b in digest {
                if left == 0 {
                    break;
                }
                if usize::from(b) < accept {
                    out.push(char::from(self.alphabet[usize::from(b) % n]));
                    left -= 1;
                }
            }
            block += 1;
        }
        out.push_str(&self.suffix);
        out
    }

    /// How many draws a pool of `count` codes may take before giving up:
    /// every draw that meets a taken code is drawn again, and this bounds
    /// the retries when the space is fuller than [`SPACE_FACTOR`] assumes
    /// (codes imported or generated earlier with the same affixes).
    pub fn max_draws(count: u64) -> u64 {
        count.saturating_add(count / 10).saturating_add(1000)
    }
}

/// A checked generate request: the generator, the count, the usage limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodePlan {
    /// Where the codes come from.
    pub generator: CodeGenerator,
    /// How many.
    pub count: u64,
    /// Each code's usage limit.
    pub usage_limit: i64,
}

fn check_affix(field: &str, value: Option<&str>, problems: &mut Vec<FieldError>) -> String {
    let v = value.unwrap_or_default();
    if v.len() > MAX_AFFIX_LEN {
        problems.push(FieldError::new(
            field,
            ErrorCode::TooLong,
            format!("at most {MAX_AFFIX_LEN} characters"),
        ));
    } else if let Some(bad) = v.chars().find(|c| !code_char(*c)) {
        problems.push(FieldError::new(
            field,
            ErrorCode::InvalidCode,
            format!("letters, digits, '-' and '_' only, not {bad:?}"),
        ));
    }
    v.to_owned()
}

/// Checks a usage limit (`None`: 1).
pub fn check_usage_limit(field: &str, limit: Option<i64>) -> Result<i64, FieldError> {
    match limit {
        None => Ok(1),
        Some(n) if (1..=MAX_USAGE_LIMIT).contains(&n) => Ok(n),
        Some(_) => Err(FieldError::new(
            field,
            ErrorCode::Invalid,
            format!("a usage limit is a whole number from 1 to {MAX_USAGE_LIMIT}"),
        )),
    }
}

impl GenerateCodes {
    /// Checks the request (every problem at once) and builds its plan with
    /// `seed`, which must be random and secret: the codes follow from it.
    pub fn plan(&self, seed: [u8; 32], max_count: u64) -> Result<CodePlan, Error> {
        let mut problems = Vec::new();
        if self.count == 0 || self.count > max_count {
            problems.push(FieldError::new(
                "count",
                ErrorCode::Invalid,
                format!("count is a whole number from 1 to {max_count}"),
            ));
        }
        let length = self.length.unwrap_or(DEFAULT_CODE_LENGTH);
        if !(MIN_CODE_LENGTH..=MAX_CODE_LENGTH).contains(&length) {
            problems.push(FieldError::new(
                "length",
                ErrorCode::Invalid,
                format!("length is from {MIN_CODE_LENGTH} to {MAX_CODE_LENGTH}"),
            ));
        }
        let alphabet = self.charset.as_deref().unwrap_or(DEFAULT_ALPHABET);
        let distinct: HashSet<u8> = alphabet.bytes().map(|b| b.to_ascii_uppercase()).collect();
        if !alphabet.bytes().all(|b| b.is_ascii_alphanumeric())
            || distinct.len() != alphabet.len()
            || !(2..=MAX_ALPHABET_LEN).contains(&alphabet.len())
        {
            problems.push(FieldError::new(
                "charset",
                ErrorCode::Invalid,
                format!(
                    "a charset is 2 to {MAX_ALPHABET_LEN} distinct letters or digits \
                     (letters are uppercased)"
                ),
            ));
        }
        let prefix = check_affix("prefix", self.prefix.as_deref(), &mut problems);
        let suffix = check_affix("suffix", self.suffix.as_deref(), &mut problems);
        let usage_limit = check_usage_limit("usageLimit", self.usage_limit)
            .map_err(|e| problems.push(e))
            .unwrap_or(1);
        if problems.is_empty() {
            let space =
                (distinct.len() as u128).saturating_pow(u32::try_from(length).unwrap_or(u32::MAX));
            if space < u128::from(self.count).saturating_mul(SPACE_FACTOR) {
                problems.push(FieldError::new(
                    "length",
                    ErrorCode::CodeSpaceTooSmall,
                    format!(
                        "{} characters of a {}-character alphabet make {space} codes, \
                         fewer than {SPACE_FACTOR} times the {} asked for: make the codes longer",
                        length,
                        distinct.len(),
                        self.count
                    ),
                ));
            }
        }
        if !problems.is_empty() {
            return Err(Error::validation(problems));
        }
        let mut alphabet: Vec<u8> = alphabet.bytes().map(|b| b.to_ascii_uppercase()).collect();
        alphabet.sort_unstable();
        Ok(CodePlan {
            generator: CodeGenerator {
                alphabet,
                length,
                prefix,
                suffix,
                seed,
            },
            count: self.count,
            usage_limit,
        })
    }
}

/// One row of an imported CSV file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedCode {
    /// The code as written.
    pub code: String,
    /// Its normalized form.
    pub normalized: String,
    /// Its usage limit (the column `usageLimit`, else the import's default).
    pub usage_limit: i64,
}

/// The header of an exported file (and of an imported one, which may
/// carry only `code`, or `code,usageLimit`, or no header at all).
pub const CSV_HEADER: &str = "code,usageLimit,used,active,createdDate";

/// Reads a CSV file of codes: one code a line, in the first column; an
/// optional second column `usageLimit` (else `usage_limit`); further
/// columns (as [`CSV_HEADER`] writes them) are ignored. A first line whose
/// first column is `code` is the header. Blank lines are skipped; fields
/// may be quoted. Every problem is reported (`line 3` as the field),
/// including codes that repeat within the file after normalization.
pub fn parse_csv(text: &str, usage_limit: i64) -> Result<Vec<ImportedCode>, Error> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let field = format!("line {}", i + 1);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut cols = line.split(',').map(|c| c.trim().trim_matches('"').trim());
        let first = cols.next().unwrap_or_default();
        if i == 0 && first.eq_ignore_ascii_case("code") {
            continue;
        }
        let limit = match cols.next().filter(|c| !c.is_empty()) {
            None => Ok(usage_limit),
            Some(c) => match c.parse::<i64>() {
                Ok(n) => check_usage_limit(&field, Some(n)),
                Err(_) => check_usage_limit(&field, Some(0)),
            },
        };
        match (parse_code(&field, first), limit) {
            (Ok((code, normalized)), Ok(usage_limit)) => {
                if seen.insert(normalized.clone()) {
                    out.push(ImportedCode {
                        code,
                        normalized,
                        usage_limit,
                    });
                } else {
                    problems.push(FieldError::new(
                        field,
                        ErrorCode::DuplicateCode,
                        format!("{code:?} repeats a code of an earlier line"),
                    ));
                }
            }
            (Err(e), _) | (_, Err(e)) => problems.push(e),
        }
        if problems.len() >= 100 {
            break;
        }
    }
    if !problems.is_empty() {
        return Err(Error::validation(problems));
    }
    if out.is_empty() {
        return Err(Error::validation(vec![FieldError::new(
            "body",
            ErrorCode::Required,
            "the file holds no code",
        )]));
    }
    Ok(out)
}

/// One line of an exported file, as [`CSV_HEADER`] names its columns.
pub fn csv_line(code: &PromoCode) -> String {
    format!(
        "{},{},{},{},{}\n",
        code.code,
        code.usage_limit,
        code.used,
        code.active,
        code.created_date
            .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(json: serde_json::Value) -> Result<CodePlan, Error> {
        serde_json::from_value::<GenerateCodes>(json)
            .unwrap()
            .plan([7; 32], MAX_GENERATE)
    }

    #[test]
    fn normalizes() {
        // (input, normalized)
        let cases = [
            ("summer-7kx9 qm2p", "SUMMER7KX9QM2P"),
            ("  AbC_1 ", "ABC_1"),
            ("--a--", "A"),
        ];
        for (input, expected) in cases {
            assert_eq!(normalize(input), expected, "{input:?}");
        }
    }

    #[test]
    fn parses_codes() {
        // (input, Ok(normalized) or Err(code))
        let cases: [(&str, Result<&str, ErrorCode>); 6] = [
            (" ab-12 ", Ok("AB12")),
            ("", Err(ErrorCode::Required)),
            ("---", Err(ErrorCode::InvalidCode)),
            ("a b", Err(ErrorCode::InvalidCode)),
            ("é", Err(ErrorCode::InvalidCode)),
            (&"A".repeat(65), Err(ErrorCode::TooLong)),
        ];
        for (input, expected) in cases {
            let got = parse_code("code", input)
                .map(|(_, n)| n)
                .map_err(|e| e.code);
            assert_eq!(got.as_deref().map_err(|e| *e), expected, "{input:?}");
        }
    }

    #[test]
    fn generates_from_the_alphabet_with_affixes() {
        let p = plan(serde_json::json!({"count": 1000, "prefix": "SUM-", "suffix": "-X"})).unwrap();
        let mut seen = HashSet::new();
        for i in 0..1000 {
            let code = p.generator.code(i);
            assert_eq!(code.len(), 4 + 8 + 2, "{code}");
            let middle = &code[4..12];
            assert!(
                middle
                    .bytes()
                    .all(|b| DEFAULT_ALPHABET.as_bytes().contains(&b)),
                "{code}"
            );
            assert!(code.starts_with("SUM-") && code.ends_with("-X"));
            seen.insert(code);
        }
        assert_eq!(seen.len(), 1000);
        // A value: the same seed gives the same codes.
        assert_eq!(p.generator.code(3), p.generator.code(3));
    }

    #[test]
    fn every_character_is_drawn() {
        let p = plan(serde_json::json!({"count": 1, "length": 32})).unwrap();
        let mut counts = [0u32; 256];
        for i in 0..2000 {
            for b in p.generator.code(i).bytes() {
                counts[usize::from(b)] += 1;
            }
        }
        // 64,000 draws over 31 characters: about 2064 each.
        for b in DEFAULT_ALPHABET.bytes() {
            let n = counts[usize::from(b)];
            assert!(
                (1800..2350).contains(&n),
                "{} drawn {n} times",
                char::from(b)
            );
        }
        for b in "01ILO".bytes() {
            assert_eq!(counts[usize::from(b)], 0);
        }
    }

    #[test]
    fn refuses_bad_requests_with_every_problem() {
        let err = plan(serde_json::json!({
            "count": 0, "length": 2, "charset": "AAB", "prefix": "a b", "usageLimit": 0
        }))
        .unwrap_err();
        let fields: Vec<&str> = err.fields().iter().map(|f| f.field.as_str()).collect();
        assert_eq!(
            fields,
            ["count", "length", "charset", "prefix", "usageLimit"]
        );
        let err = plan(serde_json::json!({"count": 1_000_000, "length": 4})).unwrap_err();
        assert_eq!(err.fields()[0].code, ErrorCode::CodeSpaceTooSmall);
        // 31^6 = 887,503,681 >= 1000 × 100,000.
        assert!(plan(serde_json::json!({"count": 100_000, "length": 6})).is_ok());
    }

    #[test]
    fn reads_csv() {
        let text = "code,usageLimit\nab-1\n\"CD2\",5\n\n ef3 ,\n";
        let codes = parse_csv(text, 2).unwrap();
        let got: Vec<(&str, &str, i64)> = codes
            .iter()
            .map(|c| (c.code.as_str(), c.normalized.as_str(), c.usage_limit))
            .collect();
        assert_eq!(
            got,
            [("ab-1", "AB1", 2), ("CD2", "CD2", 5), ("ef3", "EF3", 2)]
        );
        let err = parse_csv("A1\na-1\nB 2\nC3,0\n", 1).unwrap_err();
        let fields: Vec<(&str, ErrorCode)> = err
            .fields()
            .iter()
            .map(|f| (f.field.as_str(), f.code))
            .collect();
        assert_eq!(
            fields,
            [
                ("line 2", ErrorCode::DuplicateCode),
                ("line 3", ErrorCode::InvalidCode),
                ("line 4", ErrorCode::Invalid)
            ]
        );
        assert_eq!(
            parse_csv("code\n", 1).unwrap_err().fields()[0].code,
            ErrorCode::Required
        );
    }
}
