//! A JWKS fetched from a URL (an identity provider's `jwks_uri`) and kept
//! current: fetched at start (a failure is an error: a server that can
//! verify no token should not start), again periodically — every
//! configured interval, or as the response's `Cache-Control: max-age`
//! says — and when a token names a key the set lacks, at most once per
//! interval for unknown keys, so that a flood of made-up `kid`s cannot
//! make the verifier hammer the provider. A failed fetch, or a set with no
//! usable key, leaves the keys as they were (logged as a warning) and is
//! retried within a minute.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::super::{key_error, Auth, RefreshKeys};
use super::parse_jwks;

/// The largest key set read, in bytes: a provider's set is a few kB.
const MAX_BYTES: usize = 1 << 20;
/// The interval without a configured one or a `max-age`.
const DEFAULT_REFRESH: Duration = Duration::from_secs(300);
/// Bounds of an interval taken from `max-age`.
const MIN_MAX_AGE: Duration = Duration::from_secs(60);
const MAX_MAX_AGE: Duration = Duration::from_secs(86_400);
/// After a failed fetch, the next one comes at most this much later.
const RETRY: Duration = Duration::from_secs(60);

/// A JWKS at a URL, and how to keep it current; [`JwksUrl::start`] makes
/// the verifier.
///
/// ```no_run
/// # async fn f() -> accord::Result<()> {
/// use accord::http::auth::jwks::JwksUrl;
/// let auth = JwksUrl::new("https://id.example/.well-known/jwks.json")
///     .start()
///     .await?
///     .with_issuer("https://id.example");
/// # let _ = auth; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct JwksUrl {
    url: String,
    refresh: Option<Duration>,
    unknown_kid_interval: Duration,
    timeout: Duration,
}

impl JwksUrl {
    /// The set at `url` (`https://…`, or `http://…` on a trusted
    /// network), refreshed by the response's `max-age` (between one minute
    /// and a day; five minutes without one), fetched again on an unknown
    /// `kid` at most every 30 seconds, each fetch bounded by 10 seconds.
    pub fn new(url: impl Into<String>) -> Self {
        JwksUrl {
            url: url.into(),
            refresh: None,
            unknown_kid_interval: Duration::from_secs(30),
            timeout: Duration::from_secs(10),
        }
    }

    /// Fetches the set every `every` (at least a second), whatever the
    /// response's `max-age` says.
    #[must_use]
    pub fn refresh_every(mut self, every: Duration) -> Self {
        self.refresh = Some(every.max(Duration::from_secs(1)));
        self
    }

    /// A token with an unknown `kid` has the set fetched again only when
    /// the last fetch is at least `interval` old.
    #[must_use]
    pub fn unknown_kid_interval(mut self, interval: Duration) -> Self {
        self.unknown_kid_interval = interval;
        self
    }

    /// How long one fetch may take (connecting included).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Fetches the set and returns a verifier over its keys (see
    /// [`Auth::jwks`]), kept current on the current Tokio runtime until
    /// every clone of it is dropped. An unreachable URL, an answer other
    /// than 2xx, or a body that is not a key set with a usable key is an
    /// error naming the URL.
    pub async fn start(self) -> crate::Result<Auth> {
        let url = reqwest::Url::parse(&self.url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| {
                key_error(format!(
                    "the JWKS URL {:?} is not an http:// or https:// URL",
                    self.url
                ))
            })?;
        let client = reqwest::Client::builder()
            .timeout(self.timeout)
            .connect_timeout(self.timeout)
            .user_agent(concat!("accord/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| key_error(format!("cannot make the JWKS client: {}", chain(&e))))?;
        let fetcher = Fetcher {
            url,
            client,
            refresh: self.refresh,
            unknown_kid_interval: self.unknown_kid_interval,
            last: tokio::sync::Mutex::new(Instant::now()),
            keys: None,
        };
        let (keys, max_age) = fetcher
            .fetch()
            .await
            .map_err(|why| key_error(format!("the JWKS at {}: {why}", fetcher.url.as_str())))?;
        let first = fetcher.interval(max_age);
        let mut auth = Auth::with_keys(keys, true);
        let fetcher = Arc::new(Fetcher {
            keys: Some(Arc::downgrade(&auth.keys)),
            ..fetcher
        });
        auth.refresher = Some(Arc::clone(&fetcher) as Arc<dyn RefreshKeys>);
        tokio::spawn(scheduled(Arc::downgrade(&fetcher), first));
        Ok(auth)
    }
}

/// Fetches the set every interval until the verifier is dropped.
async fn scheduled(fetcher: Weak<Fetcher>, first: Duration) {
    let mut next = first;
    loop {
        tokio::time::sleep(next).await;
        let Some(fetcher) = fetcher.upgrade() else {
            return;
        };
        let mut last = fetcher.last.lock().await;
        *last = Instant::now();
        next = fetcher.fetch_and_store("scheduled").await;
    }
}

struct Fetcher {
    url: reqwest::Url,
    client: reqwest::Client,
    refresh: Option<Duration>,
    unknown_kid_interval: Duration,
    /// When the last fetch began; held during a fetch, so that fetches
    /// never overlap and requests with an unknown `kid` wait for the one
    /// under way instead of starting another.
    last: tokio::sync::Mutex<Instant>,
    /// The verifier's keys (weak: the verifier owns the fetcher).
    keys: Option<Weak<arc_swap::ArcSwap<Vec<super::Key>>>>,
}

impl Fetcher {
    /// The set's usable keys and the response's `max-age`.
    async fn fetch(&self) -> Result<(Vec<super::Key>, Option<Duration>), String> {
        let mut res = self
            .client
            .get(self.url.clone())
            .header(
                reqwest::header::ACCEPT,
                "application/jwk-set+json, application/json",
            )
            .send()
            .await
            .map_err(|e| format!("cannot fetch it: {}", chain(&e)))?;
        let status = res.status();
        if !status.is_success() {
            return Err(format!("the server answered {status}"));
        }
        let max_age = res
            .headers()
            .get_all(reqwest::header::CACHE_CONTROL)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(max_age);
        let mut body = Vec::new();
        while let Some(chunk) = res
            .chunk()
            .await
            .map_err(|e| format!("cannot read it: {}", chain(&e)))?
        {
            if body.len() + chunk.len() > MAX_BYTES {
                return Err(format!("it is larger than {MAX_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        let keys = parse_jwks(&body).map_err(|e| e.message().to_owned())?;
        Ok((keys, max_age))
    }

    /// Fetches the set and, when it has a usable key, replaces the keys;
    /// returns when the next scheduled fetch should come.
    async fn fetch_and_store(&self, why: &'static str) -> Duration {
        let Some(keys) = self.keys.as_ref().and_then(Weak::upgrade) else {
            return self.interval(None);
        };
        match self.fetch().await {
            Ok((new, max_age)) => {
                tracing::info!(target: "accord::http", url = %self.url, keys = new.len(), why, "JWKS fetched");
                keys.store(Arc::new(new));
                self.interval(max_age)
            }
            Err(error) => {
                tracing::warn!(target: "accord::http", url = %self.url, %error, why, "cannot refresh the JWKS; keeping the keys");
                self.interval(None).min(RETRY)
            }
        }
    }

    /// The interval until the next scheduled fetch.
    fn interval(&self, max_age: Option<Duration>) -> Duration {
        match (self.refresh, max_age) {
            (Some(every), _) => every,
            (None, Some(age)) => age.clamp(MIN_MAX_AGE, MAX_MAX_AGE),
            (None, None) => DEFAULT_REFRESH,
        }
    }
}

impl RefreshKeys for Fetcher {
    fn refresh(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            let mut last = self.last.lock().await;
            if last.elapsed() < self.unknown_kid_interval {
                return;
            }
            *last = Instant::now();
            self.fetch_and_store("unknown kid").await;
        })
    }
}

/// The `max-age` of a `Cache-Control` value, unless it forbids caching.
fn max_age(value: &str) -> Option<Duration> {
    let directives: Vec<&str> = value.split(',').map(str::trim).collect();
    if directives
        .iter()
        .any(|d| d.eq_ignore_ascii_case("no-store") || d.eq_ignore_ascii_case("no-cache"))
    {
        return None;
    }
    directives.iter().find_map(|d| {
        let (name, seconds) = d.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("max-age")
            .then(|| seconds.trim().trim_matches('"').parse().ok())
            .flatten()
            .map(Duration::from_secs)
    })
}

/// An error with its causes: reqwest's own message alone rarely says why
/// (refused, timed out, certificate).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_control_max_age() {
        let s = Duration::from_secs;
        assert_eq!(max_age("max-age=300"), Some(s(300)));
        assert_eq!(
            max_age("public, Max-Age = 60, must-revalidate"),
            Some(s(60))
        );
        assert_eq!(max_age("max-age=\"120\""), Some(s(120)));
        assert_eq!(max_age("public"), None);
        assert_eq!(max_age("max-age=soon"), None);
        assert_eq!(max_age("no-store, max-age=300"), None);
        assert_eq!(max_age("no-cache"), None);
    }

    #[test]
    fn intervals() {
        let s = Duration::from_secs;
        let fetcher = |refresh| Fetcher {
            url: reqwest::Url::parse("https://id.example/jwks").unwrap(),
            client: reqwest::Client::new(),
            refresh,
            unknown_kid_interval: s(30),
            last: tokio::sync::Mutex::new(Instant::now()),
            keys: None,
        };
        let by_age = fetcher(None);
        assert_eq!(by_age.interval(None), DEFAULT_REFRESH);
        assert_eq!(by_age.interval(Some(s(600))), s(600));
        assert_eq!(by_age.interval(Some(s(5))), MIN_MAX_AGE);
        assert_eq!(by_age.interval(Some(s(10_000_000))), MAX_MAX_AGE);
        let fixed = fetcher(Some(s(20)));
        assert_eq!(fixed.interval(Some(s(600))), s(20));
    }
}
