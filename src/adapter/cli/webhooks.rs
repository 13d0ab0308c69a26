//! The webhook delivery worker of `accord serve`: its flags and its start.

use std::sync::Arc;
use std::time::Duration;

use super::parse_duration;
use crate::adapter::http::webhooks::worker::{HttpSender, Worker};
use crate::core::clock::Clock;
use crate::core::outbox::webhook::RetryPolicy;
use crate::service::outbox::{OutboxService, WorkerSettings};
use crate::store::OutboxStore;

/// How the server delivers webhooks (docs/events.md).
#[derive(Debug, Clone, clap::Args)]
pub struct WebhookFlags {
    /// Run the delivery worker in this server (`false`: events are still
    /// written, another server delivers them).
    #[arg(long, env = "ACCORD_WEBHOOK_WORKER", default_value_t = true, action = clap::ArgAction::Set)]
    pub webhook_worker: bool,
    /// Time between two rounds of the worker when nothing was due.
    #[arg(long, env = "ACCORD_WEBHOOK_INTERVAL", default_value = "1s", value_parser = parse_duration)]
    pub webhook_interval: Duration,
    /// How long a delivery being sent is held by its worker: a worker that
    /// stops mid-delivery gives it up to another after this.
    #[arg(long, env = "ACCORD_WEBHOOK_LEASE", default_value = "60s", value_parser = parse_duration)]
    pub webhook_lease: Duration,
    /// How long one attempt may take (connect and answer).
    #[arg(long, env = "ACCORD_WEBHOOK_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub webhook_timeout: Duration,
    /// The delay after the first failed attempt; it doubles after each.
    #[arg(long, env = "ACCORD_WEBHOOK_RETRY_BASE", default_value = "30s", value_parser = parse_duration)]
    pub webhook_retry_base: Duration,
    /// The longest delay between two attempts.
    #[arg(long, env = "ACCORD_WEBHOOK_RETRY_MAX", default_value = "1h", value_parser = parse_duration)]
    pub webhook_retry_max: Duration,
    /// Failed attempts after which a delivery is dead.
    #[arg(long, env = "ACCORD_WEBHOOK_MAX_ATTEMPTS", default_value_t = 12)]
    pub webhook_max_attempts: u16,
    /// Age after which a failing delivery is dead.
    #[arg(long, env = "ACCORD_WEBHOOK_MAX_AGE", default_value = "3d", value_parser = parse_duration)]
    pub webhook_max_age: Duration,
}

impl Default for WebhookFlags {
    /// The defaults of the flags (the environment is not read).
    fn default() -> Self {
        let retry = RetryPolicy::default();
        WebhookFlags {
            webhook_worker: true,
            webhook_interval: Duration::from_secs(1),
            webhook_lease: Duration::from_secs(60),
            webhook_timeout: Duration::from_secs(10),
            webhook_retry_base: retry.base,
            webhook_retry_max: retry.max_delay,
            webhook_max_attempts: 12,
            webhook_max_age: retry.max_age,
        }
    }
}

impl WebhookFlags {
    /// The worker's settings.
    pub fn settings(&self) -> WorkerSettings {
        WorkerSettings {
            interval: self.webhook_interval,
            lease: self.webhook_lease.max(self.webhook_timeout),
            batch: WorkerSettings::default().batch,
            retry: RetryPolicy {
                base: self.webhook_retry_base,
                max_delay: self.webhook_retry_max,
                max_attempts: i32::from(self.webhook_max_attempts.max(1)),
                max_age: self.webhook_max_age,
            },
            project: None,
        }
    }
}

/// Starts the worker over `store` unless the flags turn it off.
pub(crate) fn start<S: OutboxStore + 'static>(
    store: Arc<S>,
    clock: Arc<dyn Clock>,
    flags: &WebhookFlags,
) -> crate::Result<Option<Worker>> {
    if !flags.webhook_worker {
        return Ok(None);
    }
    let sender = HttpSender::new(flags.webhook_timeout)?;
    let service = OutboxService::new(store, clock);
    Ok(Some(Worker::start(service, sender, flags.settings())))
}
