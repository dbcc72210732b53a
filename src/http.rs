//! HTTP plumbing shared by the spec fetcher and the executor.

/// Installs rustls' `ring` provider once per process (reqwest is built without a default one,
/// so that no C toolchain beyond `cc` is needed).
pub fn ensure_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
