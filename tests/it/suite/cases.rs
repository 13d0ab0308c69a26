//! The search cases of `tests/data/cases/search/`, read once and checked
//! the same way whoever runs them: the store suite (every store, through
//! the service), the engine directly and the HTTP router
//! (`tests/it/cases.rs`).

use std::sync::Arc;

use accord::campaign::{ActionMatch, CampaignInput, Explanation, SearchOptions, SearchRequest};
use accord::store::Store;
use accord::{CampaignService, SystemClock};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

/// One file of cases: campaigns as the API takes them, and searches.
#[derive(Debug, Deserialize)]
pub struct SearchFile {
    /// What the file covers.
    pub about: String,
    /// The campaigns, saved before the first search.
    pub campaigns: Vec<Value>,
    /// The searches.
    pub cases: Vec<SearchCase>,
}

/// One search and what it must give.
#[derive(Debug, Deserialize)]
pub struct SearchCase {
    /// What the case shows.
    pub name: String,
    /// The instant the search is made at.
    pub at: DateTime<Utc>,
    /// The search request, as the API takes it.
    pub request: Value,
    /// The actions, in response order: `<refCode> <action> <attr>=<value> …`.
    pub actions: Vec<String>,
    /// Why each running campaign that did not fire failed, in any order:
    /// `<refCode> <reason>`.
    pub explain: Vec<String>,
}

impl SearchCase {
    /// The request, typed.
    pub fn search_request(&self) -> SearchRequest {
        serde_json::from_value(self.request.clone())
            .unwrap_or_else(|e| panic!("{}: the request does not parse: {e}", self.name))
    }

    /// Compares what a runner got with what the case expects.
    pub fn check(&self, runner: &str, actions: &[String], mut explain: Vec<String>) {
        assert_eq!(
            actions, self.actions,
            "{runner}: {}: actions (explain: {explain:?})",
            self.name
        );
        let mut expected = self.explain.clone();
        expected.sort();
        explain.sort();
        assert_eq!(explain, expected, "{runner}: {}: explain", self.name);
    }
}

/// Every file of `tests/data/cases/search/`, with its name, in name order.
pub fn search_files() -> Vec<(String, SearchFile)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/cases/search");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no case files in {dir}");
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let file: SearchFile =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), file)
        })
        .collect()
}

/// The campaign inputs of a file, typed.
pub fn inputs(file: &SearchFile) -> Vec<CampaignInput> {
    file.campaigns
        .iter()
        .map(|c| serde_json::from_value(c.clone()).unwrap())
        .collect()
}

/// An action as the cases write it.
pub fn action_line(m: &ActionMatch) -> String {
    let action = m.action.action.as_deref().unwrap_or("-");
    let mut line = format!("{} {action}", m.campaign.ref_code);
    for d in &m.action.data {
        line = format!("{line} {}={}", d.attribute, d.value);
    }
    line
}

/// An explanation as the cases write it.
pub fn explain_line(e: &Explanation) -> String {
    format!("{} {}", e.ref_code, e.reason)
}

/// Every search case holds on `store`, through the service.
pub async fn search_cases_hold<S: Store>(store: Arc<S>) {
    for (name, file) in search_files() {
        let project = uuid::Uuid::new_v4().to_string();
        let service = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock));
        for input in inputs(&file) {
            service
                .create_campaign(&project, input, "cases")
                .await
                .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        }
        for case in &file.cases {
            let options = SearchOptions {
                explain: true,
                at: Some(case.at),
            };
            let response = service
                .search(&project, &case.search_request(), &options)
                .await
                .unwrap_or_else(|e| panic!("{name}: {}: {e:?}", case.name));
            case.check(
                &format!("store {name}"),
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
