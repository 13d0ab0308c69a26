//! The admin console: server-side tests (sessions, CSRF, escaping, headers,
//! scopes, every page) through the router without a browser, so that a
//! failure names its cause; and browser tests driving headless Chromium
//! through WebDriver.

#[path = "admin/support.rs"]
mod support;

#[path = "admin/server.rs"]
mod server;

#[path = "admin/campaigns.rs"]
mod campaigns;

#[path = "admin/consent.rs"]
mod consent;

#[path = "admin/browser.rs"]
mod browser;
