//! The delivery worker (feature `webhooks`): a Tokio task that runs
//! [`OutboxService::deliver_due`] in a loop, posting through an HTTP client
//! (rustls, no redirects followed, a timeout per attempt). `accord serve`
//! starts one unless told not to; several servers on one PostgreSQL
//! database each run one safely (the claim skips what another holds).

use std::sync::Arc;
use std::time::Duration;

use crate::service::outbox::{OutboxService, SendOutcome, Sender, WorkerSettings};
use crate::store::OutboxStore;

/// Posts with `reqwest`.
#[derive(Debug, Clone)]
pub struct HttpSender {
    client: reqwest::Client,
}

impl HttpSender {
    /// A client whose every attempt gives up after `timeout`; redirects are
    /// not followed (a 3xx is a failed attempt).
    pub fn new(timeout: Duration) -> crate::Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("accord-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(crate::Error::internal)?;
        Ok(HttpSender { client })
    }
}

impl Sender for HttpSender {
    async fn send(
        &self,
        url: &str,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    ) -> SendOutcome {
        let mut request = self.client.post(url).body(body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        match request.send().await {
            Ok(response) => SendOutcome::Status(response.status().as_u16()),
            Err(e) => SendOutcome::Failed(error_chain(&e)),
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The running worker: dropping it (or [`stop`](Self::stop)) ends the
/// task. A delivery in flight when it ends is claimed again once its lease
/// expires, with the same event id.
#[derive(Debug)]
pub struct Worker {
    task: tokio::task::JoinHandle<()>,
}

impl Worker {
    /// Starts the worker on the current Tokio runtime.
    pub fn start<S: OutboxStore + 'static, T: Sender + 'static>(
        service: OutboxService<S>,
        sender: T,
        settings: WorkerSettings,
    ) -> Self {
        let sender = Arc::new(sender);
        let task = tokio::spawn(async move {
            loop {
                match service.deliver_due(&*sender, &settings).await {
                    // A full batch: more may be due at once.
                    Ok(n) if n >= settings.batch as usize => continue,
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "webhook delivery round failed"),
                }
                tokio::time::sleep(settings.interval).await;
            }
        });
        Worker { task }
    }

    /// Ends the task now.
    pub fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.task.abort();
    }
}
