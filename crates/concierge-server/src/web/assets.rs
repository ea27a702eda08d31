//! The web chat's files, embedded in the binary at compile time (no
//! JavaScript toolchain: plain HTML, CSS and JavaScript modules under
//! `crates/concierge-server/web/`).

/// One embedded file.
#[derive(Debug)]
pub struct Asset {
    /// Its name under `/assets/` (the page itself is `index.html`).
    pub name: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its bytes.
    pub bytes: &'static [u8],
    /// Its entity tag: a hash of the bytes, computed at compile time, so a
    /// browser revalidates cheaply and never keeps a file of an older binary.
    pub etag: &'static str,
}

const HTML: &str = "text/html; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const SVG: &str = "image/svg+xml";

/// FNV-1a (64 bits) of `bytes`, at compile time.
const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

/// `"` + 16 hex digits of the hash + `"`, at compile time.
const fn etag_of(bytes: &[u8]) -> [u8; 18] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let hash = fnv1a(bytes);
    let mut tag = [b'"'; 18];
    let mut i = 0;
    while i < 16 {
        tag[1 + i] = HEX[((hash >> (60 - 4 * i)) & 0xf) as usize];
        i += 1;
    }
    tag
}

macro_rules! asset {
    ($name:literal, $content_type:expr) => {{
        const BYTES: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/web/", $name));
        const TAG: [u8; 18] = etag_of(BYTES);
        Asset {
            name: $name,
            content_type: $content_type,
            bytes: BYTES,
            etag: match std::str::from_utf8(&TAG) {
                Ok(tag) => tag,
                Err(_) => "\"0\"",
            },
        }
    }};
}

/// The page.
pub static INDEX: Asset = asset!("index.html", HTML);

/// The files under `/assets/`.
pub static ASSETS: &[Asset] = &[
    asset!("assets/app.css", CSS),
    asset!("assets/app.js", JS),
    asset!("assets/api.js", JS),
    asset!("assets/dom.js", JS),
    asset!("assets/stream.js", JS),
    asset!("assets/conversation.js", JS),
    asset!("assets/elicitation.js", JS),
    asset!("assets/panel.js", JS),
    asset!("assets/sidebar.js", JS),
    asset!("assets/resources.js", JS),
    asset!("assets/prompts.js", JS),
    asset!("assets/memory.js", JS),
    asset!("assets/icon.svg", SVG),
];

/// The file served at `/assets/{name}`.
pub fn find(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.name.strip_prefix("assets/") == Some(name))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn every_asset_is_found_by_its_name_and_tagged() {
        for asset in ASSETS {
            let name = asset.name.strip_prefix("assets/").unwrap();
            assert!(std::ptr::eq(find(name).unwrap(), asset));
            assert_eq!(asset.etag.len(), 18, "{}", asset.name);
            assert!(!asset.bytes.is_empty(), "{}", asset.name);
        }
        assert!(find("../index.html").is_none());
        assert!(find("missing.js").is_none());
    }

    #[test]
    fn the_tag_changes_with_the_bytes() {
        assert_ne!(etag_of(b"a"), etag_of(b"b"));
        assert_eq!(etag_of(b"a"), etag_of(b"a"));
    }
}
