//! Per-project and per-token rate limits (off unless configured).
//!
//! Each limit is a rate with a burst: `rate` requests a second on average,
//! up to `burst` at once. The algorithm is GCRA (the generic cell rate
//! algorithm, equivalent to a token bucket): each key keeps one instant,
//! its "theoretical arrival time"; a request is let through when that
//! instant is less than `burst` intervals ahead of now, and moves it one
//! interval on. A refused request gets a 429 problem `rate_limited` with
//! `Retry-After`: the seconds until it would be let through.
//!
//! Limits are kept in this process's memory: with several instances
//! behind a balancer, each instance applies them to what it receives.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One limit: `per_second` requests a second, up to `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Requests a second, on average (at least 1).
    pub per_second: u32,
    /// Requests let through at once (at least 1).
    pub burst: u32,
}

impl Rate {
    /// `per_second` requests a second, bursts of as many.
    pub fn per_second(per_second: u32) -> Self {
        Rate {
            per_second,
            burst: per_second,
        }
    }

    fn interval(self) -> Duration {
        Duration::from_secs(1) / self.per_second.max(1)
    }
}

/// The limits of a router: per project (every token on it) and per token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimits {
    /// Requests for one project (the path's `{projId}`), all tokens.
    pub per_project: Option<Rate>,
    /// Requests with one token (the same bearer token string).
    pub per_token: Option<Rate>,
}

/// Keys kept before the expired ones are swept.
const SWEEP_AT: usize = 10_000;

/// One limit's state: the theoretical arrival time of each key.
#[derive(Debug)]
struct Cells {
    rate: Rate,
    tat: Mutex<HashMap<u64, Instant>>,
}

impl Cells {
    fn new(rate: Rate) -> Self {
        Cells {
            rate,
            tat: Mutex::new(HashMap::new()),
        }
    }

    /// Lets one request of `key` through, or says how long to wait.
    fn check(&self, key: u64, now: Instant) -> Result<(), Duration> {
        let interval = self.rate.interval();
        let tolerance = interval * self.rate.burst.max(1).saturating_sub(1);
        let mut tat = self
            .tat
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if tat.len() >= SWEEP_AT {
            tat.retain(|_, t| *t > now);
        }
        let at = tat.get(&key).copied().unwrap_or(now).max(now);
        let ahead = at.saturating_duration_since(now);
        if ahead > tolerance {
            return Err(ahead.saturating_sub(tolerance));
        }
        tat.insert(key, at + interval);
        Ok(())
    }
}

/// The rate limiter of one router.
#[derive(Debug)]
pub(crate) struct RateLimiter {
    project: Option<Cells>,
    token: Option<Cells>,
    hasher: RandomState,
}

impl RateLimiter {
    pub(crate) fn new(limits: RateLimits) -> Self {
        RateLimiter {
            project: limits.per_project.map(Cells::new),
            token: limits.per_token.map(Cells::new),
            hasher: RandomState::new(),
        }
    }

    /// Lets a request of `token` on `project` through, or names the limit
    /// it hit (`project` or `token`) and how long to wait. The token is
    /// checked first, so that one busy token is refused before it uses up
    /// its project's allowance.
    pub(crate) fn check(&self, project: &str, token: &str) -> Result<(), (&'static str, Duration)> {
        let now = Instant::now();
        if let Some(cells) = &self.token {
            cells
                .check(self.hasher.hash_one(("token", token)), now)
                .map_err(|wait| ("token", wait))?;
        }
        if let Some(cells) = &self.project {
            cells
                .check(self.hasher.hash_one(("project", project)), now)
                .map_err(|wait| ("project", wait))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_one_per_interval() {
        let cells = Cells::new(Rate {
            per_second: 10,
            burst: 3,
        });
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(cells.check(1, t0).is_ok());
        }
        let wait = cells.check(1, t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(100));
        // Another key has its own allowance.
        assert!(cells.check(2, t0).is_ok());
        // After one interval, one more.
        let t1 = t0 + Duration::from_millis(100);
        assert!(cells.check(1, t1).is_ok());
        assert!(cells.check(1, t1).is_err());
        // After a long pause, a full burst again (no credit piles up).
        let t2 = t0 + Duration::from_secs(60);
        for _ in 0..3 {
            assert!(cells.check(1, t2).is_ok());
        }
        assert!(cells.check(1, t2).is_err());
    }
}
