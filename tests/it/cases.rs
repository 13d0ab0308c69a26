//! The behaviour cases of `tests/data/cases/`, run on the engine itself and
//! through the HTTP router (the store suite runs them on every store:
//! `suite/cases.rs`), and the problems of refused inputs as snapshots.
#![cfg(all(feature = "http", feature = "memory"))]

use std::sync::Arc;

use accord::campaign::{ActionMatch, SearchResponse};
use accord::engine::{CompiledCampaign, Engine};
use accord::store::memory::MemoryStore;
use accord::{CampaignService, SystemClock};
use reqwest::Method;
use serde::Deserialize;
use serde_json::Value;

use crate::http_support::{parts, start};
use crate::suite::cases::{action_line, explain_line, inputs, search_files};

/// The engine alone: the campaigns compiled into a snapshot, each search
/// made on it at the case's instant.
#[tokio::test]
async fn search_cases_hold_on_the_engine() {
    for (name, file) in search_files() {
        // The service turns inputs into campaigns (ids, defaults); the
        // engine then sees only what it compiles.
        let service = CampaignService::new(Arc::new(MemoryStore::new()), Arc::new(SystemClock));
        let mut compiled = Vec::new();
        for input in inputs(&file) {
            let campaign = service
                .create_campaign("cases", input, "cases")
                .await
                .unwrap();
            let cc = CompiledCampaign::compile(&campaign)
                .unwrap_or_else(|e| panic!("{name}: a saved campaign compiles: {e:?}"));
            compiled.push(Arc::new(cc));
        }
        let engine = Engine::new(compiled);
        for case in &file.cases {
            let request = case.search_request();
            let outcome = engine
                .search(&request, case.at, true)
                .unwrap_or_else(|e| panic!("{name}: {}: {e:?}", case.name));
            let actions: Vec<ActionMatch> = outcome
                .hits
                .iter()
                .flat_map(|hit| hit.actions.iter().map(|a| a.to_match(hit.campaign)))
                .collect();
            case.check(
                &format!("engine {name}"),
                &actions.iter().map(action_line).collect::<Vec<_>>(),
                outcome.explanations.iter().map(explain_line).collect(),
            );
        }
    }
}

/// The HTTP router: campaigns POSTed, searches POSTed with `explain` and
/// `at`.
#[tokio::test]
async fn search_cases_hold_through_the_router() {
    for (name, file) in search_files() {
        let s = start().await;
        for campaign in &file.campaigns {
            let res = s
                .req(Method::POST, &s.campaign_url("/campaigns"))
                .json(campaign)
                .send()
                .await
                .unwrap();
            let (status, body) = parts(res).await;
            assert_eq!(status, 201, "{name}: {body}");
        }
        for case in &file.cases {
            let at = case.at.to_rfc3339().replace('+', "%2B");
            let res = s
                .req(
                    Method::POST,
                    &s.campaign_url(&format!("/search?explain=true&at={at}")),
                )
                .json(&case.request)
                .send()
                .await
                .unwrap();
            let (status, body) = parts(res).await;
            assert_eq!(status, 200, "{name}: {}: {body}", case.name);
            let response: SearchResponse = serde_json::from_value(body).unwrap();
            case.check(
                &format!("http {name}"),
                &response.actions.iter().map(action_line).collect::<Vec<_>>(),
                response
                    .explain
                    .unwrap_or_default()
                    .iter()
                    .map(explain_line)
                    .collect(),
            );
        }
    }
}

/// A file of inputs the API refuses.
#[derive(Deserialize)]
struct ErrorFile {
    cases: Vec<ErrorCase>,
}

#[derive(Deserialize)]
struct ErrorCase {
    name: String,
    campaign: Value,
}

/// Each refused campaign's problem (status, code, detail, every field
/// error with its span) is the reviewed snapshot `snapshots/it__cases__<name>.snap`.
#[tokio::test]
async fn refused_campaigns_give_the_reviewed_problems() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/cases/errors/campaigns.json"
    );
    let file: ErrorFile = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let s = start().await;
    for case in file.cases {
        let res = s
            .req(Method::POST, &s.campaign_url("/campaigns"))
            .json(&case.campaign)
            .send()
            .await
            .unwrap();
        let (status, problem) = parts(res).await;
        assert!((400..500).contains(&status), "{}: {status}", case.name);
        let text = serde_json::to_string_pretty(&problem).unwrap();
        insta::assert_snapshot!(case.name.as_str(), text);
    }
}
