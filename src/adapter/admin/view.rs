//! What every page shares: the header ([`Nav`]), times in the viewer's
//! offset, links with query strings, and paging.

use chrono::{DateTime, FixedOffset, NaiveDateTime, TimeZone, Utc};

use super::session::Flash;
use crate::adapter::http::scope;

/// The scope a data-subject lookup needs: the design's audit scope for
/// consent evidence (a subject's full history is more than the
/// application-facing `consent.r` shows).
pub const CONSENT_AUDIT: &str = scope::CONSENT_AUDIT;

/// The header of a signed-in page.
#[allow(clippy::struct_excessive_bools)] // one flag per section the template shows
#[derive(Debug, Clone)]
pub struct Nav {
    /// The token's `sub`.
    pub sub: String,
    /// The project of the page, if any.
    pub project: Option<String>,
    /// The session's CSRF token (sign-out and settings forms).
    pub csrf: String,
    /// The message left by the previous action.
    pub flash: Option<Flash>,
    /// Which section is current: `campaigns`, `try`, `redemptions`,
    /// `content`, `subjects`, or "".
    pub section: &'static str,
    /// Campaign administration (`campaign.admin`).
    pub campaigns: bool,
    /// Redemption list (`campaign.r`).
    pub redemptions: bool,
    /// Content store reads (`cms.r`).
    pub content: bool,
    /// Data-subject lookup.
    pub subjects: bool,
    /// The offsets to choose from, with the current one marked.
    pub offsets: Vec<(String, String, bool)>,
}

impl Nav {
    /// The base path of the project's pages: `/admin/p/{project}`.
    pub fn base(&self) -> String {
        self.project
            .as_deref()
            .map(project_base)
            .unwrap_or_default()
    }
}

/// `/admin/p/{project}` with the project id percent-encoded.
pub fn project_base(project: &str) -> String {
    format!("/admin/p/{}", encode(project))
}

/// Percent-encodes one path segment or query value.
pub fn encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// `?a=1&b=2` from the pairs whose value is not empty ("" when none).
pub fn query(pairs: &[(&str, &str)]) -> String {
    let mut ser = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
        ser.append_pair(k, v);
    }
    let q = ser.finish();
    if q.is_empty() {
        q
    } else {
        format!("?{q}")
    }
}

/// `UTC+07:00`.
pub fn offset_label(offset: FixedOffset) -> String {
    format!("UTC{}", offset_value(offset))
}

/// `+07:00`.
pub fn offset_value(offset: FixedOffset) -> String {
    let secs = offset.local_minus_utc();
    let sign = if secs < 0 { '-' } else { '+' };
    let m = secs.abs() / 60;
    format!("{sign}{:02}:{:02}", m / 60, m % 60)
}

/// Parses `+07:00`, `-03:30` or `Z`.
pub fn parse_offset(s: &str) -> Option<FixedOffset> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("z") || s.is_empty() {
        return FixedOffset::east_opt(0);
    }
    let (sign, rest) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => return None,
    };
    let (h, m) = rest.split_once(':')?;
    let (h, m): (i32, i32) = (h.parse().ok()?, m.parse().ok()?);
    if !(0..=14).contains(&h) || !(0..60).contains(&m) {
        return None;
    }
    FixedOffset::east_opt(sign * (h * 3600 + m * 60))
}

/// Every quarter-hour offset from UTC−12:00 to UTC+14:00: (value, label,
/// selected).
pub(crate) fn offset_choices(current: FixedOffset) -> Vec<(String, String, bool)> {
    (-48..=56)
        .filter_map(|q: i32| FixedOffset::east_opt(q * 15 * 60))
        .map(|o| (offset_value(o), offset_label(o), o == current))
        .collect()
}

/// A time as the viewer reads it: `2026-05-01 09:30` in their offset.
pub fn show(t: DateTime<Utc>, offset: FixedOffset) -> String {
    let local = t.with_timezone(&offset);
    if local.format("%S").to_string() == "00" {
        local.format("%Y-%m-%d %H:%M").to_string()
    } else {
        local.format("%Y-%m-%d %H:%M:%S").to_string()
    }
}

/// A time as a `datetime-local` input holds it, in the viewer's offset.
pub fn input_value(t: DateTime<Utc>, offset: FixedOffset) -> String {
    let local = t.with_timezone(&offset);
    if local.format("%S").to_string() == "00" {
        local.format("%Y-%m-%dT%H:%M").to_string()
    } else {
        local.format("%Y-%m-%dT%H:%M:%S").to_string()
    }
}

/// Reads a `datetime-local` value (or a full RFC 3339 time) entered in the
/// viewer's offset. `Ok(None)` for an empty input.
pub fn parse_input(s: &str, offset: FixedOffset) -> Result<Option<DateTime<Utc>>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(Some(t.with_timezone(&Utc)));
    }
    let naive = [
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%d %H:%M:%S",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
    .ok_or_else(|| format!("{s:?} is not a date and time (2026-05-01T09:30)"))?;
    offset
        .from_local_datetime(&naive)
        .single()
        .map(|t| Some(t.with_timezone(&Utc)))
        .ok_or_else(|| format!("{s:?} is not a valid time"))
}

/// Links of a paged list.
#[derive(Debug, Clone)]
pub struct Pager {
    /// "Showing 21–40 of 95".
    pub summary: String,
    /// Link to the previous page, when there is one.
    pub prev: Option<String>,
    /// Link to the next page, when there is one.
    pub next: Option<String>,
}

impl Pager {
    /// The pager of page `page` (zero-based) of `size` among `total`;
    /// `link(n)` is the address of page `n`.
    pub fn new(page: u32, size: u32, total: u64, link: impl Fn(u32) -> String) -> Pager {
        let first = u64::from(page) * u64::from(size);
        let shown = total.saturating_sub(first).min(u64::from(size));
        let summary = if shown == 0 {
            if total == 0 {
                "Nothing found".to_owned()
            } else {
                format!("Past the end: {total} in all")
            }
        } else {
            format!("Showing {}–{} of {total}", first + 1, first + shown)
        };
        Pager {
            summary,
            prev: (page > 0).then(|| link(page - 1)),
            next: (first + shown < total).then(|| link(page + 1)),
        }
    }
}

/// A zero-based page number from the query (absent or bad: 0).
pub fn page_of(s: Option<&str>) -> u32 {
    s.and_then(|p| p.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_round_trip() {
        for s in ["+07:00", "-03:30", "+00:00", "+05:45", "-12:00", "+14:00"] {
            assert_eq!(offset_value(parse_offset(s).expect(s)), s);
        }
        assert!(parse_offset("+7").is_none());
        assert!(parse_offset("07:00").is_none());
    }

    #[test]
    fn times_are_entered_and_shown_in_the_viewer_offset() {
        let bkk = parse_offset("+07:00").expect("offset");
        let t = parse_input("2026-05-01T09:30", bkk)
            .expect("parses")
            .expect("given");
        assert_eq!(t.to_rfc3339(), "2026-05-01T02:30:00+00:00");
        assert_eq!(input_value(t, bkk), "2026-05-01T09:30");
        assert_eq!(show(t, bkk), "2026-05-01 09:30");
        assert_eq!(parse_input(" ", bkk), Ok(None));
        assert!(parse_input("tomorrow", bkk).is_err());
    }

    #[test]
    fn pager_links() {
        let p = Pager::new(1, 20, 45, |n| format!("p{n}"));
        assert_eq!(p.summary, "Showing 21–40 of 45");
        assert_eq!(p.prev.as_deref(), Some("p0"));
        assert_eq!(p.next.as_deref(), Some("p2"));
        let last = Pager::new(2, 20, 45, |n| format!("p{n}"));
        assert_eq!(last.next, None);
        assert_eq!(
            Pager::new(0, 20, 0, |n| n.to_string()).summary,
            "Nothing found"
        );
    }

    #[test]
    fn query_skips_empty_values_and_encodes() {
        assert_eq!(query(&[("q", "a b&c"), ("status", "")]), "?q=a+b%26c");
        assert_eq!(query(&[("q", "")]), "");
    }
}
