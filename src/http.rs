//! TLS and HTTP plumbing shared by the spec fetcher, the executor and the WebSocket handlers.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

/// Installs rustls' `ring` provider once per process (reqwest is built without a default one,
/// so that no C toolchain beyond `cc` is needed).
pub fn ensure_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The TLS settings of WebSocket connections (`wss://`), matching the HTTP client's: the
/// platform's trust store plus an optional extra CA, or no verification at all when the
/// operator asked for it (`--insecure-skip-verify`, logged loudly at startup).
pub fn ws_tls_config(ca_cert: Option<&Path>, insecure: bool) -> Result<Arc<ClientConfig>> {
    ensure_crypto_provider();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
            .with_no_client_auth()
    } else {
        let mut extra: Vec<CertificateDer<'static>> = Vec::new();
        if let Some(path) = ca_cert {
            let pem = std::fs::read(path)
                .with_context(|| format!("cannot read CA certificate {}", path.display()))?;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                extra.push(
                    cert.map_err(|e| anyhow!("{} is not a PEM certificate: {e}", path.display()))?,
                );
            }
        }
        let verifier = rustls_platform_verifier::Verifier::new_with_extra_roots(extra, provider)
            .context("loading the platform's trust store")?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth()
    };
    Ok(Arc::new(config))
}

/// Accepts any certificate: only for `--insecure-skip-verify`.
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_configs_and_rejects_a_bad_ca_file() {
        assert!(ws_tls_config(None, true).is_ok());
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.pem");
        let err = ws_tls_config(Some(&missing), false).unwrap_err();
        assert!(format!("{err:#}").contains("nope.pem"));
    }
}
