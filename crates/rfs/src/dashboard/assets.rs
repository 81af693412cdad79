//! The page, embedded in the binary: plain HTML, CSS and JavaScript written for rfs (no
//! framework, no CDN, no build step).

pub const INDEX_HTML: &str = include_str!("assets/index.html");
pub const APP_JS: &str = include_str!("assets/app.js");
pub const STYLE_CSS: &str = include_str!("assets/style.css");
pub const FAVICON_SVG: &str = include_str!("assets/favicon.svg");
