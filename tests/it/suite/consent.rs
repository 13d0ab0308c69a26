//! The consent behaviour suite, through [`ConsentService`] over any
//! [`ConsentStore`], with a [`ManualClock`]: application-facing operations
//! ([`app`]), the content store ([`content`]), behaviours over time
//! ([`story`]), the purpose-flag proptest ([`props`]), lists equal to the
//! memory store's ([`lists`]) and the store contract itself ([`store`]:
//! races, one `seq` order, errors, durability). This file holds the macro that
//! instantiates the suite and the shared fixture.

pub mod agreement;
pub mod app;
pub mod cases;
pub mod content;
pub mod edits;
pub mod files;
pub mod imports;
pub mod integrity;
pub mod limits;
pub mod lists;
pub mod paging;
pub mod props;
pub mod revisions;
pub mod store;
pub mod story;

use std::sync::Arc;

use accord::consent::{
    AcceptConsentRequest, ConsentAcceptance, ConsentService, ContentRecord, PurposeRequest, Reason,
};
use accord::store::ConsentStore;
use accord::ManualClock;
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{json, Value};
use uuid::Uuid;

/// Expands to one test per behaviour of this suite; see the module docs of
/// `tests/it/suite/mod.rs`. `$fixture` is an `async fn() -> Option<(Arc<S>,
/// suite::Guard)>`, as for the campaign suite: `None` skips (after saying
/// why); the guard lives as long as the test.
macro_rules! consent_suite {
    ($fixture:path) => {
        $crate::suite::consent::consent_suite!(@tests $fixture;
            app::to_accept_before_and_after_acceptance,
            app::to_accept_after_new_revision,
            app::to_accept_after_expiry,
            app::withdrawal_through_content_store,
            app::other_app_and_project_never_appear,
            app::accept_consent_errors,
            app::app_acceptance_is_content,
            app::purpose_flags_over_a_sequence,
            app::purpose_acceptance_expires,
            app::purpose_catalogue_latest_wins,
            app::privacy_notice_details,
            story::state_at_before_between_after,
            cases::consent_cases_hold,
            story::history_in_recorded_order,
            story::history_events_and_state_by_app,
            paging::history_pages_are_pages_of_the_whole,
            paging::expired_acceptances_are_listed,
            paging::retention_purge_keeps_the_proof,
            story::the_ledger_has_one_entry_per_event,
            story::concurrent_acceptances,
            content::list_filters,
            content::list_paging,
            content::list_multi_key_sort,
            content::put_nulls_and_keeps_versions,
            edits::concurrent_puts_keep_every_version,
            content::content_errors,
            content::acceptance_via_content_store,
            integrity::forged_revision_is_refused,
            integrity::draft_or_archived_is_not_accepted,
            integrity::never_expiring_or_future_acceptance_is_refused,
            integrity::acceptance_for_another_app_is_refused,
            integrity::a_withdrawal_is_not_revived,
            integrity::back_dating_is_refused,
            integrity::an_edit_keeps_the_evidence,
            integrity::an_edit_cannot_null_or_rewrite_evidence,
            revisions::revisions_do_not_walk_backwards,
            revisions::a_new_notice_revision_asks_again,
            revisions::what_was_agreed_changes_only_with_a_revision,
            imports::an_import_cannot_forge_or_rewind_evidence,
            integrity::timestamp_filters_compare_instants,
            edits::the_check_reports_bent_records,
            edits::the_check_accepts_erased_records,
            limits::every_limit_at_its_boundary,
            lists::list_matches_memory_table,
            store::concurrent_replaces_of_one_version_one_wins,
            store::concurrent_acceptances_of_one_subject,
            store::store_errors,
            files::files_are_content_addressed,
            files::acceptances_pin_the_screen,
        );
        #[cfg(feature = "http")]
        $crate::suite::consent::consent_suite!(@tests $fixture;
            cases::consent_cases_hold_through_the_router,
        );
        $crate::suite::consent::consent_suite!(@blocking $fixture;
            props::purpose_flag_is_latest_event,
            agreement::views_agree_with_the_records,
            lists::list_matches_memory_proptest,
        );
    };
    (@tests $fixture:path; $($module:ident :: $name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some((store, _guard)) = $fixture().await else {
                    return;
                };
                $crate::suite::consent::$module::$name(store).await;
            }
        )*
    };
    // Proptests: their runner is synchronous, so they get a runtime of
    // their own to block on.
    (@blocking $fixture:path; $($module:ident :: $name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("runtime");
                let Some((store, _guard)) = rt.block_on($fixture()) else {
                    return;
                };
                $crate::suite::consent::$module::$name(&rt, &store);
            }
        )*
    };
}
pub(crate) use consent_suite;

/// The fixed start of every test's clock.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
}

/// A service over the store, in a fresh project, with a manual clock at [`t0`].
pub struct Fx<S> {
    /// The service.
    pub svc: ConsentService<S>,
    /// Its clock.
    pub clock: Arc<ManualClock>,
    /// This test's project.
    pub project: String,
}

impl<S: ConsentStore + 'static> Fx<S> {
    /// A fixture in its own project.
    pub fn new(store: Arc<S>) -> Self {
        let clock = Arc::new(ManualClock::new(t0()));
        Fx {
            svc: ConsentService::new(store, clock.clone()),
            clock,
            project: format!("p-{}", Uuid::new_v4()),
        }
    }

    /// Another project on the same store and clock.
    pub fn other_project(&self) -> Self {
        Fx {
            svc: self.svc.clone(),
            clock: self.clock.clone(),
            project: format!("p-{}", Uuid::new_v4()),
        }
    }

    /// Moves the clock.
    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }

    /// Now.
    pub fn now(&self) -> DateTime<Utc> {
        accord::Clock::now(&*self.clock)
    }

    /// Creates content, expecting success.
    pub async fn create(&self, t: &str, data: Value) -> ContentRecord {
        self.svc
            .create_content(&self.project, t, data, "admin")
            .await
            .expect("create content")
    }

    /// Replaces content, expecting success.
    pub async fn replace(&self, t: &str, id: &str, data: Value) -> ContentRecord {
        self.svc
            .replace_content(&self.project, t, id, data, "editor")
            .await
            .expect("replace content")
    }

    /// A published privacy notice.
    pub async fn notice(&self, revision: i64) -> ContentRecord {
        self.create(
            "svc-privacy-notice-v1",
            json!({"name": "Privacy", "descriptionEn": "How we use data", "revision": revision, "status": "PUBLISHED"}),
        )
        .await
    }

    /// A published consent of `app` (with its own privacy notice, revision 4).
    pub async fn consent(
        &self,
        app: &str,
        purposes: &[&str],
        lifespan: Option<i64>,
    ) -> ContentRecord {
        let notice = self.notice(4).await;
        self.create(
            "svc-consent-v1",
            json!({"name": format!("{app} consent"), "descriptionEn": "Please agree", "application": app,
                   "purposes": purposes, "lifespan": lifespan, "privacyNoticeRef": notice.id,
                   "revision": 1, "status": "PUBLISHED", "ref1": "r1"}),
        )
        .await
    }

    /// An accept-consent request with every context field.
    pub fn request(
        app: &str,
        subject: &str,
        consent_id: &str,
        purposes: Option<&[&str]>,
    ) -> AcceptConsentRequest {
        AcceptConsentRequest {
            app: Some(app.into()),
            data_subject: Some(subject.into()),
            consent_id: Some(consent_id.into()),
            purposes: purposes.map(|p| p.iter().map(|s| (*s).to_owned()).collect()),
            user_agent: Some("Mozilla/5.0".into()),
            country: Some("TH".into()),
            local_ip: Some("192.168.1.10".into()),
            os_version: Some("iOS 17".into()),
            model: Some("iPhone".into()),
            device_fingerprint_id: Some("fp-1".into()),
            note: Some("signup".into()),
            ..Default::default()
        }
    }

    /// Accepts a consent, expecting success.
    pub async fn accept(
        &self,
        app: &str,
        subject: &str,
        consent_id: &str,
        purposes: Option<&[&str]>,
    ) -> ConsentAcceptance {
        self.svc
            .accept_consent(
                &self.project,
                Self::request(app, subject, consent_id, purposes),
                "app-backend",
            )
            .await
            .expect("accept consent")
    }

    /// The to-accept list as (consent id, reason).
    pub async fn to_accept(&self, app: &str, subject: &str) -> Vec<(String, Reason)> {
        let list = self
            .svc
            .to_accept(&self.project, app, subject)
            .await
            .expect("to-accept");
        list.into_iter().map(|e| (e.consent.id, e.reason)).collect()
    }

    /// The purpose flags as (code, accepted).
    pub async fn flags(&self, app: &str, subject: &str) -> Vec<(String, bool)> {
        let list = self
            .svc
            .purpose_options(&self.project, app, subject)
            .await
            .expect("purpose options");
        list.into_iter().map(|o| (o.code, o.accepted)).collect()
    }

    /// A purpose request.
    pub fn purpose(app: &str, subject: &str, code: &str) -> PurposeRequest {
        PurposeRequest {
            app: Some(app.into()),
            data_subject: Some(subject.into()),
            purpose_code: Some(code.into()),
        }
    }
}

/// `[(code, flag)]` from literals.
pub fn flags(pairs: &[(&str, bool)]) -> Vec<(String, bool)> {
    pairs.iter().map(|(c, f)| ((*c).to_owned(), *f)).collect()
}
