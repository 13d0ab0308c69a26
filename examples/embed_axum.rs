//! Mounting Accord's router inside another axum application, next to the
//! host's own routes, with the services also called directly.
//! `docs/embedding.md` shows this file (a test keeps them equal).
//!
//! ```sh
//! ACCORD_JWT_SECRET=0123456789abcdef0123456789abcdef cargo run --example embed_axum
//! ```

// README:begin
use std::sync::Arc;

use accord::http::{router, Api, Auth};
use accord::store::memory::MemoryStore;
use accord::store::CampaignQuery;
use accord::SystemClock;
use axum::{routing::get, Router};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let auth = Auth::hs256(std::env::var("ACCORD_JWT_SECRET")?)?;
    let api = Api::new(Arc::new(MemoryStore::new()), Arc::new(SystemClock), auth);
    // The same service the routes use, for the host's own handlers.
    let campaigns = Arc::clone(api.campaigns());
    let app = Router::new()
        .route("/", get(|| async { "my shop" }))
        .route(
            "/internal/campaign-count",
            get(move || async move {
                match campaigns
                    .list_campaigns("shop", &CampaignQuery::default())
                    .await
                {
                    Ok(page) => page.total.to_string(),
                    Err(e) => e.to_string(),
                }
            }),
        )
        // Accord's routes under /promo: /promo/campaign/api/projects/{projId}/search, …
        .nest("/promo", router(api));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    axum::serve(listener, app).await?;
    Ok(())
}
// README:end
