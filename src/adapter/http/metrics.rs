//! Prometheus metrics of the router, served at `GET /metrics` in the text
//! exposition format.
//!
//! | Metric | Labels | What |
//! |---|---|---|
//! | `accord_http_requests_total` | `method`, `route`, `status` | requests answered |
//! | `accord_http_request_duration_seconds` | `method`, `route` | latency histogram |
//! | `accord_search_total` | `outcome` (`matched`, `none`, or an error code) | campaign searches |
//! | `accord_redeem_total` | `outcome` (`redeemed`, `replayed`, or an error code) | redemptions asked |
//! | `accord_quota_refusals_total` | — | redeems refused because a quota is used up |
//! | `accord_rate_limited_total` | `limit` (`project`, `token`) | requests refused by a rate limit |
//! | `accord_db_pool_connections` | `state` (`open`, `idle`) | the SQL store's pool, at scrape time |
//!
//! **No personal data.** Labels take only fixed values: the route
//! TEMPLATE (never the raw path, which carries project and record ids and
//! could carry a `dataSubject`), the method, the status, and stable error
//! codes. No label holds a project, a token, a user or a request value.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    limit: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

/// A histogram of request latencies: 0.5 ms to about 16 s, doubling.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// The metrics of one router (one per [`Api`](super::Api)).
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<RouteLabels, Histogram, fn() -> Histogram>,
    searches: Family<OutcomeLabels, Counter>,
    redeems: Family<OutcomeLabels, Counter>,
    quota_refusals: Counter,
    rate_limited: Family<LimitLabels, Counter>,
    pool: Family<StateLabels, Gauge>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "accord_http_requests",
            "HTTP requests answered, by route template and status",
            requests.clone(),
        );
        let durations = Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        registry.register(
            "accord_http_request_duration_seconds",
            "HTTP request latency, by route template",
            durations.clone(),
        );
        let searches = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "accord_search",
            "Campaign searches, by outcome (matched, none, or an error code)",
            searches.clone(),
        );
        let redeems = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "accord_redeem",
            "Redemptions asked, by outcome (redeemed, replayed, or an error code)",
            redeems.clone(),
        );
        let quota_refusals = Counter::default();
        registry.register(
            "accord_quota_refusals",
            "Redeems refused because a quota is used up",
            quota_refusals.clone(),
        );
        let rate_limited = Family::<LimitLabels, Counter>::default();
        registry.register(
            "accord_rate_limited",
            "Requests refused by a rate limit (project or token)",
            rate_limited.clone(),
        );
        let pool = Family::<StateLabels, Gauge>::default();
        registry.register(
            "accord_db_pool_connections",
            "Connections of the SQL store's pool (open, idle)",
            pool.clone(),
        );
        Metrics {
            registry,
            requests,
            durations,
            searches,
            redeems,
            quota_refusals,
            rate_limited,
            pool,
        }
    }
}

impl Metrics {
    /// One request answered.
    pub(crate) fn request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_owned(),
                route: route.to_owned(),
                status,
            })
            .inc();
        self.durations
            .get_or_create(&RouteLabels {
                method: method.to_owned(),
                route: route.to_owned(),
            })
            .observe(seconds);
    }

    /// One search: `outcome` is `matched`, `none` or an error code.
    pub(crate) fn search(&self, outcome: &'static str) {
        self.searches
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    /// One redeem: `outcome` is `redeemed`, `replayed` or an error code.
    pub(crate) fn redeem(&self, outcome: &'static str) {
        self.redeems.get_or_create(&OutcomeLabels { outcome }).inc();
        if outcome == "quota_exceeded" {
            self.quota_refusals.inc();
        }
    }

    /// One request refused by the rate limit `limit` (`project`, `token`).
    pub(crate) fn rate_limited(&self, limit: &'static str) {
        self.rate_limited
            .get_or_create(&LimitLabels { limit })
            .inc();
    }

    /// The text exposition, with the pool's state `(open, idle)` if the
    /// store has a pool.
    pub(crate) fn render(&self, pool: Option<(u32, u32)>) -> String {
        if let Some((open, idle)) = pool {
            self.pool
                .get_or_create(&StateLabels { state: "open" })
                .set(i64::from(open));
            self.pool
                .get_or_create(&StateLabels { state: "idle" })
                .set(i64::from(idle));
        }
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
