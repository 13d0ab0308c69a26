//! The duration of a rolling quota window (`"window": "PT24H"`).
//!
//! A window is an exact duration, not a calendar span: `P1D` is 24 hours
//! whatever the time zone's clocks do that day, so daylight saving time
//! never changes what a window covers. Its wire form is the ISO 8601
//! duration subset `P[nW][nD][T[nH][nM][nS]]` (whole numbers, no months or
//! years, whose lengths vary); it is written back in canonical form
//! (`P1DT2H`, `PT90M` as `PT1H30M`, `P7D` for a week).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest window: 366 days (a window is kept as seconds).
pub const MAX_WINDOW_SECONDS: i64 = 366 * 86_400;

/// The duration of a rolling quota window, in whole seconds (1 to
/// [`MAX_WINDOW_SECONDS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QuotaWindow(i64);

impl QuotaWindow {
    /// A window of `seconds` (1 to [`MAX_WINDOW_SECONDS`]).
    pub fn from_seconds(seconds: i64) -> Option<QuotaWindow> {
        (1..=MAX_WINDOW_SECONDS)
            .contains(&seconds)
            .then_some(QuotaWindow(seconds))
    }

    /// Its length in seconds.
    pub fn seconds(self) -> i64 {
        self.0
    }

    /// The instant until which a charge made at `at` counts (exclusive):
    /// `at` plus the window. A charge counts at `now` when
    /// `at <= now < until`, so one made exactly a window ago no longer does.
    pub fn until(self, at: DateTime<Utc>) -> DateTime<Utc> {
        at.checked_add_signed(Duration::seconds(self.0))
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }
}

/// Why a window's text is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowError(pub String);

impl fmt::Display for WindowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for QuotaWindow {
    type Err = WindowError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            WindowError(format!(
                "{s:?} is not a duration such as PT24H, P7D or PT30M (ISO 8601, days to seconds)"
            ))
        };
        let rest = s.strip_prefix('P').ok_or_else(bad)?;
        let mut seconds: i64 = 0;
        let mut in_time = false;
        let mut digits = String::new();
        let mut any = false;
        // Units in the order they must appear, each at most once.
        let mut last_unit = 0;
        for c in rest.chars() {
            if c.is_ascii_digit() {
                if digits.len() >= 12 {
                    return Err(bad());
                }
                digits.push(c);
                continue;
            }
            if c == 'T' {
                if in_time || !digits.is_empty() {
                    return Err(bad());
                }
                in_time = true;
                continue;
            }
            let (rank, unit) = match (in_time, c) {
                (false, 'W') => (1, 7 * 86_400),
                (false, 'D') => (2, 86_400),
                (true, 'H') => (3, 3_600),
                (true, 'M') => (4, 60),
                (true, 'S') => (5, 1),
                _ => return Err(bad()),
            };
            if digits.is_empty() || rank <= last_unit {
                return Err(bad());
            }
            last_unit = rank;
            let n: i64 = digits.parse().map_err(|_| bad())?;
            digits.clear();
            seconds = n
                .checked_mul(unit)
                .and_then(|v| seconds.checked_add(v))
                .ok_or_else(bad)?;
            any = true;
        }
        if !digits.is_empty() || !any || (in_time && last_unit < 3) {
            return Err(bad());
        }
        QuotaWindow::from_seconds(seconds).ok_or_else(|| {
            WindowError(format!(
                "a window lasts from 1 second to 366 days, not {s:?}"
            ))
        })
    }
}

impl fmt::Display for QuotaWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (days, rest) = (self.0 / 86_400, self.0 % 86_400);
        let (h, m, s) = (rest / 3_600, rest % 3_600 / 60, rest % 60);
        f.write_str("P")?;
        if days > 0 {
            write!(f, "{days}D")?;
        }
        if rest > 0 {
            f.write_str("T")?;
            for (n, unit) in [(h, 'H'), (m, 'M'), (s, 'S')] {
                if n > 0 {
                    write!(f, "{n}{unit}")?;
                }
            }
        }
        Ok(())
    }
}

impl Serialize for QuotaWindow {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for QuotaWindow {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_parse_and_print_canonically() {
        // (text, seconds, canonical text)
        let cases = [
            ("PT24H", 86_400, "P1D"),
            ("P1D", 86_400, "P1D"),
            ("P1W", 604_800, "P7D"),
            ("PT90M", 5_400, "PT1H30M"),
            ("PT1S", 1, "PT1S"),
            ("P1DT2H3M4S", 93_784, "P1DT2H3M4S"),
            ("P366D", MAX_WINDOW_SECONDS, "P366D"),
        ];
        for (text, seconds, canonical) in cases {
            let w: QuotaWindow = text.parse().unwrap();
            assert_eq!(w.seconds(), seconds, "{text}");
            assert_eq!(w.to_string(), canonical, "{text}");
            assert_eq!(canonical.parse::<QuotaWindow>().unwrap(), w);
        }
    }

    #[test]
    fn bad_windows_are_refused() {
        for text in [
            "",
            "P",
            "PT",
            "24H",
            "PT0S",
            "P0D",
            "P367D",
            "P1M",
            "P1Y",
            "PT1D",
            "P1H",
            "PT1H1H",
            "PT1M1H",
            "P1DT",
            "PT1.5H",
            "pt1h",
            "P-1D",
            "PT99999999999999H",
            " PT1H",
        ] {
            assert!(text.parse::<QuotaWindow>().is_err(), "{text:?} parsed");
        }
    }

    #[test]
    fn a_charge_counts_until_exactly_one_window_later() {
        let w = QuotaWindow::from_seconds(86_400).unwrap();
        let at = DateTime::from_timestamp(1_000, 5).unwrap();
        assert_eq!((w.until(at) - at).num_seconds(), 86_400);
        assert_eq!(w.until(DateTime::<Utc>::MAX_UTC), DateTime::<Utc>::MAX_UTC);
    }
}
