//! Events out on every store: the outbox event is written in the
//! transaction of its change (none for a refused or replayed redeem), one
//! delivery per enabled endpoint whose filter takes it, claims that lease
//! and fence, retries with backoff, dead deliveries and redelivery.

use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use accord::campaign::{HoldRequest, RedeemRequest};
use accord::clock::ManualClock;
use accord::consent::erasure::PseudonymKey;
use accord::consent::ConsentService;
use accord::outbox::webhook::{Attempt, DeliveryState, Next, RetryPolicy};
use accord::outbox::{
    EndpointInput, EventType, OutboxEvent, OutboxService, SendOutcome, Sender, WorkerSettings,
};
use accord::store::{OutboxStore, Store};
use accord::{CampaignService, Clock};
use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use uuid::Uuid;

/// Runs each behaviour of this module as a test, on `$fixture`'s store.
macro_rules! outbox_tests {
    ($fixture:path) => {
        $crate::suite::behaviour_tests!(outbox, $fixture;
            redeem_and_cancel_write_their_events_atomically,
            hold_confirmation_writes_a_redemption_event,
            consent_changes_write_events_and_erasure_forgets_the_subject,
            claims_lease_and_fence,
            failures_back_off_then_deliver_or_die,
            disabled_endpoints_get_nothing,
            concurrent_claims_take_each_delivery_once,
        );
    };
}

pub(crate) use outbox_tests;

fn t0() -> DateTime<Utc> {
    "2026-03-01T10:00:00Z".parse().unwrap()
}

struct Fx<S: Store> {
    store: Arc<S>,
    project: String,
    clock: Arc<ManualClock>,
    campaigns: CampaignService<S>,
    outbox: OutboxService<S>,
}

fn fx<S: Store>(store: Arc<S>) -> Fx<S> {
    let clock = Arc::new(ManualClock::new(t0()));
    let dyn_clock = clock.clone() as Arc<dyn Clock>;
    Fx {
        project: Uuid::new_v4().to_string(),
        campaigns: CampaignService::new(Arc::clone(&store), Arc::clone(&dyn_clock))
            .with_refresh_interval(StdDuration::ZERO),
        outbox: OutboxService::new(Arc::clone(&store), dyn_clock),
        store,
        clock,
    }
}

fn input(types: &[&str], enabled: bool) -> EndpointInput {
    serde_json::from_value(json!({
        "url": "http://127.0.0.1:9/hook", "eventTypes": types, "enabled": enabled
    }))
    .unwrap()
}

impl<S: Store> Fx<S> {
    async fn campaign(&self, code: &str, limit: i64) {
        let c = json!({
            "name": code, "refCode": code,
            "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
            "quotas": [{"key": "${campaignCode}", "value": limit}],
            "rules": [{"name": "r", "when": [], "then": [{"action": "DISCOUNT",
                "data": [{"attribute": "amount", "value": "1"}]}]}]
        });
        self.campaigns
            .create_campaign(&self.project, serde_json::from_value(c).unwrap(), "admin")
            .await
            .unwrap();
    }

    async fn events(&self) -> Vec<OutboxEvent> {
        self.store
            .outbox_events(&self.project, None, 1000)
            .await
            .unwrap()
    }

    async fn types(&self) -> Vec<String> {
        self.events()
            .await
            .iter()
            .map(|e| e.event_type.as_str().to_owned())
            .collect()
    }

    async fn delivery_count(&self, endpoint: Uuid) -> u64 {
        self.outbox
            .deliveries(&self.project, endpoint, 0, 100)
            .await
            .unwrap()
            .total
    }
}

fn redeem(code: &str, user: &str, key: Option<&str>) -> RedeemRequest {
    serde_json::from_value(json!({
        "campaignCode": code, "attribute": {"userId": user}, "idempotencyKey": key
    }))
    .unwrap()
}

/// A redeem writes `redemption.created` with it; a refused redeem and a
/// replay write nothing; a cancel writes `redemption.cancelled` once. The
/// deliveries follow the endpoints: the enabled catch-all gets each event,
/// the disabled one and the one filtered to consent events none.
pub async fn redeem_and_cancel_write_their_events_atomically<S: Store>(store: Arc<S>) {
    let f = fx(store);
    let all = f
        .outbox
        .create_endpoint(&f.project, input(&[], true))
        .await
        .unwrap();
    let off = f
        .outbox
        .create_endpoint(&f.project, input(&[], false))
        .await
        .unwrap();
    let consent_only = f
        .outbox
        .create_endpoint(&f.project, input(&["consent.accepted"], true))
        .await
        .unwrap();
    f.campaign("ONE", 1).await;
    let r = f
        .campaigns
        .redeem(&f.project, &redeem("ONE", "u1", Some("k1")))
        .await
        .unwrap();
    let refused = f
        .campaigns
        .redeem(&f.project, &redeem("ONE", "u2", Some("k2")))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "quota_exceeded");
    f.campaigns
        .redeem(&f.project, &redeem("ONE", "u1", Some("k1")))
        .await
        .unwrap();
    let events = f.events().await;
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e.event_type, EventType::RedemptionCreated);
    assert_eq!(e.payload["redemptionId"], json!(r.redemption.id));
    assert_eq!(e.payload["campaignCode"], "ONE");
    assert_eq!(e.payload["userId"], "u1");
    assert_eq!(e.occurred_at, t0());
    assert_eq!(e.data_subject, None);

    f.clock.advance(Duration::seconds(5));
    f.campaigns
        .cancel_redemption(&f.project, r.redemption.id)
        .await
        .unwrap();
    f.campaigns
        .cancel_redemption(&f.project, r.redemption.id)
        .await
        .unwrap();
    assert_eq!(
        f.types().await,
        ["redemption.created", "redemption.cancelled"]
    );
    let cancelled = &f.events().await[1];
    assert_eq!(cancelled.occurred_at, t0() + Duration::seconds(5));
    assert!(cancelled.id > e.id, "ids are ordered by time");
    assert_eq!(f.delivery_count(all.id).await, 2);
    assert_eq!(f.delivery_count(off.id).await, 0);
    assert_eq!(f.delivery_count(consent_only.id).await, 0);
    // Another project's endpoints get nothing.
    let other = fx(Arc::clone(&f.store));
    assert!(other.events().await.is_empty());
}

/// Confirming a hold records its redemption and writes its event (once,
/// however often it is confirmed); placing it writes none.
pub async fn hold_confirmation_writes_a_redemption_event<S: Store>(store: Arc<S>) {
    let f = fx(store);
    f.campaign("H", 5).await;
    let hold = f
        .campaigns
        .place_hold(
            &f.project,
            &HoldRequest {
                redeem: redeem("H", "u1", None),
                ttl: Some(json!(60)),
            },
        )
        .await
        .unwrap();
    assert!(f.events().await.is_empty());
    let confirmed = f.campaigns.confirm_hold(&f.project, hold.id).await.unwrap();
    f.campaigns.confirm_hold(&f.project, hold.id).await.unwrap();
    let events = f.events().await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event_type, EventType::RedemptionCreated);
    assert_eq!(
        events[0].payload["redemptionId"],
        json!(confirmed.redemption.id)
    );
}

/// An acceptance, its withdrawal and a purpose acceptance each write their
/// event with the subject kept apart from the payload; an erasure puts the
/// pseudonym in its place in every event and writes `consent.erased`.
pub async fn consent_changes_write_events_and_erasure_forgets_the_subject<S: Store>(store: Arc<S>) {
    use crate::suite::consent::Fx as ConsentFx;
    let c = ConsentFx::new(Arc::clone(&store));
    let key = PseudonymKey::new(&[7; 32]).unwrap();
    let svc: ConsentService<S> = c.svc.clone().with_pseudonym_key(key);
    let consent = c.consent("shop", &["email", "sms"], None).await;
    let events_of = |project: String| {
        let store = Arc::clone(&store);
        async move { store.outbox_events(&project, None, 100).await.unwrap() }
    };
    assert!(
        events_of(c.project.clone()).await.is_empty(),
        "content writes other than acceptances write none"
    );
    let accepted = c
        .accept("shop", "alice@example.com", &consent.id, None)
        .await;
    c.svc
        .accept_purpose(
            &c.project,
            ConsentFx::<S>::purpose("shop", "alice@example.com", "sms"),
        )
        .await
        .unwrap();
    let body = json!({"dataSubject": "alice@example.com", "consentId": consent.id, "application": "shop",
        "acceptanceDate": accepted.acceptance_date, "status": "WITHDRAWN", "withdrawalDate": c.now(), "note": "by phone"});
    c.replace("svc-consent-acceptance-v1", &accepted.id, body)
        .await;
    let events = events_of(c.project.clone()).await;
    let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        types,
        [
            "consent.accepted",
            "consent.purpose_changed",
            "consent.withdrawn"
        ]
    );
    for e in &events {
        assert_eq!(e.data_subject.as_deref(), Some("alice@example.com"));
        assert!(
            !serde_json::to_string(&e.payload).unwrap().contains("alice"),
            "{e:?}"
        );
    }
    assert_eq!(events[0].payload["acceptanceId"], json!(accepted.id));
    assert_eq!(events[0].payload["consentId"], json!(consent.id));
    assert_eq!(events[1].payload["purposeCode"], "sms");
    let body: serde_json::Value = serde_json::from_slice(&events[0].body()).unwrap();
    assert_eq!(body["data"]["dataSubject"], "alice@example.com");

    let report = svc
        .erase_subject(&c.project, "alice@example.com")
        .await
        .unwrap();
    let events = events_of(c.project.clone()).await;
    assert_eq!(events.len(), 4);
    assert_eq!(events[3].event_type, EventType::ConsentErased);
    for e in &events {
        assert_eq!(e.data_subject.as_deref(), Some(report.pseudonym.as_str()));
        assert!(!String::from_utf8(e.body()).unwrap().contains("alice"));
    }
}

/// A claim leases what it takes: a second claim before the lease ends gets
/// nothing, one after it gets the delivery again (its attempt counted);
/// the first worker's late outcome is then refused (fenced), the second's
/// recorded. A redelivery makes it pending again.
pub async fn claims_lease_and_fence<S: Store>(store: Arc<S>) {
    let f = fx(store);
    let project = f.project.clone();
    let hook = f
        .outbox
        .create_endpoint(&f.project, input(&[], true))
        .await
        .unwrap();
    f.campaign("C", 10).await;
    f.campaigns
        .redeem(&f.project, &redeem("C", "u1", None))
        .await
        .unwrap();
    let lease = StdDuration::from_secs(60);
    let mine = |v: Vec<accord::outbox::webhook::Claimed>| {
        v.into_iter()
            .filter(|c| c.delivery.project_id == f.project)
            .collect::<Vec<_>>()
    };
    let first = mine(
        f.store
            .claim_deliveries(t0(), lease, 1000, Some(&project))
            .await
            .unwrap(),
    );
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].delivery.attempts, 1);
    assert_eq!(first[0].url, "http://127.0.0.1:9/hook");
    assert_eq!(first[0].secret, hook.secret);
    let again = mine(
        f.store
            .claim_deliveries(t0() + Duration::seconds(59), lease, 1000, Some(&project))
            .await
            .unwrap(),
    );
    assert!(again.is_empty(), "leased");
    let later = t0() + Duration::seconds(61);
    let second = mine(
        f.store
            .claim_deliveries(later, lease, 1000, Some(&project))
            .await
            .unwrap(),
    );
    assert_eq!(second.len(), 1, "the lease expired: claimed again");
    assert_eq!(second[0].delivery.attempts, 2);
    assert_eq!(second[0].event.id, first[0].event.id, "the same event id");
    let attempt = |n: i32, status: i32| Attempt {
        attempt: n,
        at: later,
        status: Some(status),
        error: None,
        duration_ms: 3,
    };
    assert!(
        !f.store
            .finish_delivery(&first[0].delivery, &attempt(1, 200), Next::Delivered)
            .await
            .unwrap(),
        "the first claim's outcome comes too late"
    );
    assert!(f
        .store
        .finish_delivery(&second[0].delivery, &attempt(2, 204), Next::Delivered)
        .await
        .unwrap());
    let event = first[0].event.id;
    let (d, attempts) = f.outbox.delivery(&f.project, hook.id, event).await.unwrap();
    assert_eq!(d.state, DeliveryState::Delivered);
    assert_eq!(d.delivered_at, Some(later));
    assert_eq!(d.last_status, Some(204));
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].attempt, 2);
    assert!(mine(
        f.store
            .claim_deliveries(later + Duration::hours(1), lease, 1000, Some(&project))
            .await
            .unwrap()
    )
    .is_empty());

    f.clock.set(later + Duration::minutes(5));
    let d = f
        .outbox
        .redeliver(&f.project, hook.id, event)
        .await
        .unwrap();
    assert_eq!(d.state, DeliveryState::Pending);
    assert_eq!(d.next_at, Some(later + Duration::minutes(5)));
    let third = mine(
        f.store
            .claim_deliveries(later + Duration::minutes(5), lease, 1000, Some(&project))
            .await
            .unwrap(),
    );
    assert_eq!(third.len(), 1);
    assert_eq!(third[0].delivery.attempts, 3);
    let missing = f
        .outbox
        .redeliver(&f.project, hook.id, Uuid::new_v4())
        .await
        .unwrap_err();
    assert_eq!(missing.code(), "delivery_not_found");
}

/// (url, headers, body) of one send.
pub type Sent = (String, Vec<(&'static str, String)>, Vec<u8>);

/// A sender that answers from a script, recording what it was sent.
#[derive(Default)]
pub struct Scripted {
    /// The answers, in order (the last one repeats).
    pub answers: Mutex<Vec<SendOutcome>>,
    /// (url, headers, body) of every send.
    pub sent: Mutex<Vec<Sent>>,
}

impl Sender for Scripted {
    async fn send(
        &self,
        url: &str,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    ) -> SendOutcome {
        self.sent
            .lock()
            .unwrap()
            .push((url.to_owned(), headers, body));
        let mut answers = self.answers.lock().unwrap();
        if answers.len() > 1 {
            answers.remove(0)
        } else {
            answers[0].clone()
        }
    }
}

/// Failures wait 10 s, 20 s, 40 s (less jitter) before the next attempt;
/// a 2xx delivers; a delivery failing `max_attempts` times is dead. Each
/// send is signed and names the event.
pub async fn failures_back_off_then_deliver_or_die<S: Store>(store: Arc<S>) {
    let f = fx(store);
    let hook = f
        .outbox
        .create_endpoint(&f.project, input(&[], true))
        .await
        .unwrap();
    f.campaign("R", 10).await;
    f.campaigns
        .redeem(&f.project, &redeem("R", "u1", None))
        .await
        .unwrap();
    let settings = WorkerSettings {
        interval: StdDuration::from_millis(10),
        lease: StdDuration::from_secs(30),
        batch: 1000,
        retry: RetryPolicy {
            base: StdDuration::from_secs(10),
            max_delay: StdDuration::from_secs(3600),
            max_attempts: 3,
            max_age: StdDuration::from_secs(86_400),
        },
        project: Some(f.project.clone()),
    };
    let sender = Scripted {
        answers: Mutex::new(vec![
            SendOutcome::Status(500),
            SendOutcome::Failed("connection refused".into()),
            SendOutcome::Status(200),
        ]),
        ..Scripted::default()
    };
    let event = f.events().await[0].id;
    let state = || async { f.outbox.delivery(&f.project, hook.id, event).await.unwrap() };
    f.outbox.deliver_due(&sender, &settings).await.unwrap();
    let (d, attempts) = state().await;
    assert_eq!(
        (d.state.clone(), d.failures, d.last_status),
        (DeliveryState::Pending, 1, Some(500))
    );
    let wait = d.next_at.unwrap() - t0();
    assert!(
        wait > Duration::seconds(7) && wait <= Duration::seconds(10),
        "{wait}"
    );
    assert_eq!(attempts[0].error.as_deref(), Some("HTTP status 500"));
    // Not due yet: nothing is sent.
    f.clock.set(d.next_at.unwrap() - Duration::milliseconds(1));
    f.outbox.deliver_due(&sender, &settings).await.unwrap();
    assert_eq!(sender.sent.lock().unwrap().len(), 1);
    f.clock.set(d.next_at.unwrap());
    f.outbox.deliver_due(&sender, &settings).await.unwrap();
    let (d2, _) = state().await;
    assert_eq!((d2.failures, d2.last_status), (2, None));
    let wait = d2.next_at.unwrap() - d.next_at.unwrap();
    assert!(
        wait > Duration::seconds(15) && wait <= Duration::seconds(20),
        "{wait}"
    );
    f.clock.set(d2.next_at.unwrap());
    f.outbox.deliver_due(&sender, &settings).await.unwrap();
    let (d3, attempts) = state().await;
    assert_eq!(d3.state, DeliveryState::Delivered);
    assert_eq!(attempts.len(), 3);
    let sent = sender.sent.lock().unwrap().clone();
    for (url, headers, body) in &sent {
        assert_eq!(url, "http://127.0.0.1:9/hook");
        let h = |n: &str| headers.iter().find(|(k, _)| *k == n).unwrap().1.clone();
        assert_eq!(h("accord-event-id"), event.to_string());
        let now = accord::Clock::now(&*f.clock).timestamp();
        assert!(accord::outbox::webhook::verify(
            &hook.secret,
            &h("accord-signature"),
            body,
            now,
            3600
        ));
    }

    // Always failing: dead after 3 failures.
    f.campaigns
        .redeem(&f.project, &redeem("R", "u2", None))
        .await
        .unwrap();
    let failing = Scripted {
        answers: Mutex::new(vec![SendOutcome::Status(503)]),
        ..Scripted::default()
    };
    for _ in 0..5 {
        f.outbox.deliver_due(&failing, &settings).await.unwrap();
        f.clock.advance(Duration::hours(1));
    }
    let second = f.events().await[1].id;
    let (dead, attempts) = f
        .outbox
        .delivery(&f.project, hook.id, second)
        .await
        .unwrap();
    assert_eq!(dead.state, DeliveryState::Dead);
    assert_eq!((dead.failures, attempts.len()), (3, 3));
}

/// A disabled endpoint gets no delivery of what happens while it is off,
/// and its pending deliveries wait until it is enabled again.
pub async fn disabled_endpoints_get_nothing<S: Store>(store: Arc<S>) {
    let f = fx(store);
    let hook = f
        .outbox
        .create_endpoint(&f.project, input(&[], true))
        .await
        .unwrap();
    f.campaign("D", 10).await;
    f.campaigns
        .redeem(&f.project, &redeem("D", "u1", None))
        .await
        .unwrap();
    let mut off = input(&[], false);
    f.outbox
        .update_endpoint(&f.project, hook.id, off.clone())
        .await
        .unwrap();
    f.campaigns
        .redeem(&f.project, &redeem("D", "u2", None))
        .await
        .unwrap();
    assert_eq!(f.delivery_count(hook.id).await, 1);
    let claim = |at| {
        let (store, project) = (Arc::clone(&f.store), f.project.clone());
        async move {
            store
                .claim_deliveries(at, StdDuration::from_secs(60), 1000, Some(&project))
                .await
                .unwrap()
                .into_iter()
                .filter(|c| c.delivery.project_id == project)
                .count()
        }
    };
    assert_eq!(claim(t0()).await, 0, "pending, but the endpoint is off");
    off.enabled = true;
    let on = f
        .outbox
        .update_endpoint(&f.project, hook.id, off)
        .await
        .unwrap();
    assert!(on.enabled);
    assert_eq!(on.secret, hook.secret, "the secret is kept");
    assert_eq!(claim(t0()).await, 1);
    // Deleting removes its deliveries; it is gone.
    f.outbox.delete_endpoint(&f.project, hook.id).await.unwrap();
    assert_eq!(
        f.outbox
            .endpoint(&f.project, hook.id)
            .await
            .unwrap_err()
            .code(),
        "webhook_not_found"
    );
    assert_eq!(
        f.outbox
            .delivery(&f.project, hook.id, f.events().await[0].id)
            .await
            .unwrap_err()
            .code(),
        "delivery_not_found"
    );
}

/// Eight workers claiming at once (on PostgreSQL, eight connections: the
/// claims skip the rows another holds) take each due delivery exactly once.
pub async fn concurrent_claims_take_each_delivery_once<S: Store>(store: Arc<S>) {
    let f = fx(store);
    f.outbox
        .create_endpoint(&f.project, input(&[], true))
        .await
        .unwrap();
    f.campaign("MANY", 1000).await;
    for i in 0..40 {
        f.campaigns
            .redeem(&f.project, &redeem("MANY", &format!("u{i}"), None))
            .await
            .unwrap();
    }
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (store, project) = (Arc::clone(&f.store), f.project.clone());
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            for _ in 0..20 {
                let claimed = store
                    .claim_deliveries(
                        t0() + Duration::seconds(1),
                        StdDuration::from_secs(60),
                        3,
                        Some(&project),
                    )
                    .await
                    .unwrap();
                mine.extend(
                    claimed
                        .into_iter()
                        .filter(|c| c.delivery.project_id == project)
                        .map(|c| c.event.id),
                );
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), n, "a delivery claimed twice");
    assert_eq!(n, 40, "every due delivery claimed");
}
