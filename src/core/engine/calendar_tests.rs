//! The calendar names in a time zone: local midnight, DST changes in
//! Europe/Berlin, year ends and ISO weeks. One line per case.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::calendar;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

#[test]
fn calendar_names_roll_over_at_local_midnight() {
    let berlin = Tz::Europe__Berlin;
    let bangkok = Tz::Asia__Bangkok;
    // (zone, instant, "year-month-day week")
    let cases = [
        // Bangkok's day starts at 17:00 UTC, not at 07:00 local.
        (bangkok, "2026-06-14T16:59:59Z", "2026-6-14 2026-W24"),
        (bangkok, "2026-06-14T17:00:00Z", "2026-6-15 2026-W25"),
        (Tz::UTC, "2026-06-14T17:00:00Z", "2026-6-14 2026-W24"),
        // Spring forward (29 March 2026, 02:00 CET → 03:00 CEST): the day
        // before ends at 23:00 UTC, the short day at 22:00 UTC.
        (berlin, "2026-03-28T22:59:59Z", "2026-3-28 2026-W13"),
        (berlin, "2026-03-28T23:00:00Z", "2026-3-29 2026-W13"),
        (berlin, "2026-03-29T00:59:59Z", "2026-3-29 2026-W13"),
        (berlin, "2026-03-29T01:00:00Z", "2026-3-29 2026-W13"),
        (berlin, "2026-03-29T21:59:59Z", "2026-3-29 2026-W13"),
        (berlin, "2026-03-29T22:00:00Z", "2026-3-30 2026-W14"),
        // Fall back (25 October 2026, 03:00 CEST → 02:00 CET): a day of 25
        // hours, from 22:00 UTC to 23:00 UTC the next day.
        (berlin, "2026-10-24T21:59:59Z", "2026-10-24 2026-W43"),
        (berlin, "2026-10-24T22:00:00Z", "2026-10-25 2026-W43"),
        (berlin, "2026-10-25T00:30:00Z", "2026-10-25 2026-W43"),
        (berlin, "2026-10-25T01:30:00Z", "2026-10-25 2026-W43"),
        (berlin, "2026-10-25T22:59:59Z", "2026-10-25 2026-W43"),
        (berlin, "2026-10-25T23:00:00Z", "2026-10-26 2026-W44"),
        // Year end: the local year turns at local midnight; the ISO week
        // keeps its own year (2026 has 53 weeks, 1 January 2027 is in its
        // last; 30 December 2024 is in week 1 of 2025).
        (berlin, "2026-12-31T22:59:59Z", "2026-12-31 2026-W53"),
        (berlin, "2026-12-31T23:00:00Z", "2027-1-1 2026-W53"),
        (Tz::UTC, "2026-12-31T23:00:00Z", "2026-12-31 2026-W53"),
        (berlin, "2027-01-03T23:00:00Z", "2027-1-4 2027-W01"),
        (berlin, "2024-12-29T23:00:00Z", "2024-12-30 2025-W01"),
        (berlin, "2025-12-31T23:00:00Z", "2026-1-1 2026-W01"),
    ];
    for (zone, instant, want) in cases {
        let t = at(instant);
        let name = |n: &str| calendar(n, t, zone).unwrap();
        let got = format!(
            "{}-{}-{} {}",
            name("year"),
            name("month"),
            name("day"),
            name("week")
        );
        assert_eq!(got, want, "{instant} in {zone}");
    }
    assert_eq!(calendar("hour", at("2026-01-01T00:00:00Z"), berlin), None);
}
