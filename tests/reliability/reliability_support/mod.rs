//! Helpers of the reliability tests (crash safety, database faults, load):
//! the real `accord` server in a child process, and a
//! PostgreSQL schema of the test's own.
//!
//! Child processes: the test binary runs itself again
//! (`std::env::current_exe()`) as `<child test> --exact --ignored`, with a
//! [`ChildJob`] as JSON in [`CHILD_ENV`] (the pattern of
//! tests/it/suite/workers.rs). The child starts `server::start` — exactly what
//! `accord serve` runs — on 127.0.0.1 port 0, writes the
//! address it got to a file, and serves until it is killed.
//!
//! Every file including this module also includes examples/load/main.rs as
//! `mod load` (the server and the traffic come from there).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Held by the tests whose assertions depend on the machine's time (the
/// load smokes: no 5xx within the store's 4 s call bound) and by those
/// that load it most (two thousand half-open clients), so that on a
/// two-core machine none of them runs beside another.
pub static TIMING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The environment variable carrying a child server's job.
pub const CHILD_ENV: &str = "ACCORD_RELIABILITY_SERVER_JOB";

/// What a child server does.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChildJob {
    /// `sqlite://FILE` or `postgres://…`.
    pub database_url: String,
    /// HS256 secret of the tokens.
    pub secret: String,
    /// Where to write the address it listens on.
    pub addr_file: PathBuf,
}

/// The child side: when this process was started as a child server, serves
/// until killed; otherwise returns at once (a hand run of the ignored test).
pub fn serve_child() {
    let Ok(json) = std::env::var(CHILD_ENV) else {
        return;
    };
    let job: ChildJob = serde_json::from_str(&json).expect("child job JSON");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let started = crate::load::server::start(
            crate::load::server::Args {
                addr: ([127, 0, 0, 1], 0).into(),
                database_url: job.database_url.clone(),
                jwt_secret: Some(job.secret.clone()),
                jwt_public_key_file: None,
                demo: false,
                serve: crate::load::server::ServeFlags::default(),
                ..Default::default()
            },
            std::future::pending::<()>(),
        )
        .await
        .expect("the child server starts");
        // Written whole, then renamed: the parent never reads half a line.
        let tmp = job.addr_file.with_extension("tmp");
        std::fs::write(&tmp, started.addr.to_string()).unwrap();
        std::fs::rename(&tmp, &job.addr_file).unwrap();
        started.done.await.unwrap().unwrap();
    });
}

/// A server in a child process. Killed (SIGKILL) when dropped.
pub struct ServerProcess {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    stderr: PathBuf,
}

impl ServerProcess {
    /// Starts the child test `child_test` of this binary as a server over
    /// `database_url`; waits (30 s at most) until it listens.
    pub async fn spawn(
        child_test: &str,
        database_url: &str,
        secret: &str,
        dir: &Path,
        name: &str,
    ) -> ServerProcess {
        let addr_file = dir.join(format!("{name}.addr"));
        let stderr = dir.join(format!("{name}.stderr"));
        let _ = std::fs::remove_file(&addr_file);
        let job = ChildJob {
            database_url: database_url.to_owned(),
            secret: secret.to_owned(),
            addr_file: addr_file.clone(),
        };
        let child = Command::new(std::env::current_exe().unwrap())
            .args([child_test, "--exact", "--ignored", "--nocapture"])
            .arg("--test-threads=1")
            .env(CHILD_ENV, serde_json::to_string(&job).unwrap())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("spawn a server process");
        let mut p = ServerProcess {
            child,
            base: String::new(),
            stderr,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(addr) = std::fs::read_to_string(&addr_file) {
                p.base = format!("http://{}", addr.trim());
                return p;
            }
            if let Some(status) = p.child.try_wait().unwrap() {
                panic!("server {name} exited with {status}:\n{}", p.stderr_text());
            }
            assert!(
                Instant::now() < deadline,
                "server {name} did not start in 30 s:\n{}",
                p.stderr_text()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL (`Child::kill` on Unix), then reaps it. The process gets no
    /// chance to finish anything: requests in flight are cut.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// What the child wrote to stderr.
    pub fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

use crate::pg_support;

#[cfg(feature = "cli")]
pub mod two_servers;

/// The PostgreSQL URL, or `None` (after saying why) to skip; in CI a
/// missing URL fails the test (CI must never skip it silently).
pub fn pg_url() -> Option<String> {
    pg_support::database_url("the PostgreSQL reliability tests")
}

/// A new schema for one test (`accord_rel_<unix time>_<pid>_<tag>`, after
/// dropping stale ones): `url` with that schema as search path (libpq-style
/// `options`), for `PostgresStore::connect` and the server, and the guard
/// that drops the schema (keep it until the test's servers are gone).
pub async fn fresh_schema(url: &str, tag: &str) -> (String, pg_support::Schema) {
    let schema = pg_support::create_schema(url, "rel", tag).await;
    (pg_support::with_schema(url, &schema), schema)
}
