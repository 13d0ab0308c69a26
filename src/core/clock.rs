//! Time, injected.
//!
//! Every decision that depends on "now" (is a campaign running, has an
//! acceptance expired, which day's quota key) takes the time from a
//! [`Clock`], so tests run at fixed instants and an administrator can preview
//! a future moment.
//!
//! Timestamps are kept to **microsecond** precision everywhere: that is what
//! PostgreSQL stores, and truncating once at the source means a value read
//! back from any store equals the value written.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, DurationRound, Utc};

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// The current instant, truncated to microseconds.
    fn now(&self) -> DateTime<Utc>;
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> DateTime<Utc> {
        (**self).now()
    }
}

/// Truncates a timestamp to microseconds, the precision of every store.
pub fn truncate_micros(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(Duration::microseconds(1)).unwrap_or(t)
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        truncate_micros(Utc::now())
    }
}

/// A clock that only moves when told to; for tests and previews.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
}

impl ManualClock {
    /// A clock standing at `now`.
    pub fn new(now: DateTime<Utc>) -> Self {
        ManualClock {
            now: Mutex::new(truncate_micros(now)),
        }
    }

    /// Moves the clock to `now`.
    pub fn set(&self, now: DateTime<Utc>) {
        *self.lock() = truncate_micros(now);
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.lock();
        *now = truncate_micros(*now + by);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DateTime<Utc>> {
        // A poisoned lock only means another thread panicked while holding a
        // plain value; the value itself is always valid.
        self.now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let clock = ManualClock::new(t0);
        assert_eq!(clock.now(), t0);
        clock.advance(Duration::days(2));
        assert_eq!(clock.now(), t0 + Duration::days(2));
    }

    #[test]
    fn system_clock_is_truncated_to_micros() {
        let now = SystemClock.now();
        assert_eq!(now.timestamp_subsec_nanos() % 1000, 0);
    }
}
