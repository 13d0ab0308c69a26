//! What the two-server races on PostgreSQL share: two server processes on
//! one fresh schema, a project and a token of their own, and a POST that
//! reports the status, the body and whether it was a replay.

use std::time::Duration;

use accord::http::Claims;
use serde_json::{json, Value};

use super::{fresh_schema, pg_url, ServerProcess};
use crate::load;
use crate::pg_support;

/// The child server of the crash tests serves these too.
const CHILD: &str = "crash_safety::crash_server_child";

/// Two servers on one database. Dropping it kills both, then drops the
/// schema.
pub struct TwoServers {
    /// The database URL (the schema as search path).
    pub url: String,
    /// The project every request names.
    pub project: String,
    /// A token with every scope for `project`.
    pub token: String,
    /// The servers' `http://127.0.0.1:PORT`.
    pub bases: [String; 2],
    // Fields drop in order: the servers before their directory and schema.
    _servers: [ServerProcess; 2],
    _dir: tempfile::TempDir,
    _schema: pg_support::Schema,
}

impl TwoServers {
    /// Starts them, or `None` (after saying why) without PostgreSQL.
    /// `tag` names the schema, the project and the token's subject.
    pub async fn start(tag: &str) -> Option<TwoServers> {
        let base_url = pg_url()?;
        let (url, schema) = fresh_schema(&base_url, tag).await;
        let dir = tempfile::tempdir().unwrap();
        let secret = load::new_secret();
        let project = format!("{tag}-{}", &load::new_secret()[..12]);
        let token = Claims::all_scopes(tag, &[&project], Duration::from_secs(3600))
            .sign_hs256(secret.as_bytes())
            .unwrap();
        let a = ServerProcess::spawn(CHILD, &url, &secret, dir.path(), "a").await;
        let b = ServerProcess::spawn(CHILD, &url, &secret, dir.path(), "b").await;
        Some(TwoServers {
            url,
            project,
            token,
            bases: [a.base.clone(), b.base.clone()],
            _servers: [a, b],
            _dir: dir,
            _schema: schema,
        })
    }

    /// The campaign API path `rest` of the project on server `i % 2`.
    pub fn api(&self, i: usize, rest: &str) -> String {
        format!(
            "{}/campaign/api/projects/{}{rest}",
            self.bases[i % 2],
            self.project
        )
    }
}

/// POSTs `body` to `url`: the status and the JSON body, with
/// `"replayed": true` added when the answer was an idempotent replay.
pub async fn post(client: &reqwest::Client, url: String, token: &str, body: Value) -> (u16, Value) {
    let res = client
        .post(url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let replayed = res.headers().contains_key("idempotent-replayed");
    let mut body: Value = res.json().await.unwrap_or(Value::Null);
    if replayed {
        body["replayed"] = json!(true);
    }
    (status, body)
}
