//! The observer's page, embedded in the crate: plain HTML, CSS and JavaScript in one file
//! (`observer.html`), no framework and nothing fetched from another origin, so it works
//! on a machine without internet. It reads `observer/snapshot` once, then follows
//! `observer/events` (relative URLs: it works wherever the routes are mounted).

/// The page.
pub(super) const HTML: &str = include_str!("observer.html");
