//! TLS for model providers and MCP servers: rustls on `ring`.
//!
//! reqwest is built without a crypto provider of its own (its default,
//! aws-lc, compiles a C library that is most of a cold build), so rustls
//! needs one installed for the process before an HTTP client is built. The
//! facade installs it wherever it builds a client and when a runtime is
//! built; code that builds its own `reqwest::Client` (or rmcp's HTTP client)
//! without a runtime calls [`install_crypto_provider`] first.

use std::sync::Once;

/// Installs `ring` as the process's rustls crypto provider, once; keeps a
/// provider someone installed before. Cheap to call again.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An error only says a provider is installed already: that one stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_client_builds_after_the_provider_is_installed() {
        install_crypto_provider();
        install_crypto_provider();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
        assert!(reqwest::Client::builder().build().is_ok());
    }

    #[tokio::test]
    async fn an_https_url_fails_to_connect_rather_than_panicking() {
        install_crypto_provider();
        let client = reqwest::Client::builder().build().unwrap();
        // Port 9 on loopback: nothing listens, so the TLS handshake never starts.
        let error = client.get("https://127.0.0.1:9/").send().await.unwrap_err();
        assert!(error.is_connect(), "{error}");
    }
}
