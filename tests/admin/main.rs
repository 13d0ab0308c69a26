//! The admin console: server-side tests (sessions, CSRF, escaping, headers,
//! scopes, every page) through the router without a browser, so that a
//! failure names its cause; and browser tests driving headless Chromium
//! through WebDriver.

mod support;

mod server;

mod campaigns;

mod codes;

mod consent;

mod browser;
