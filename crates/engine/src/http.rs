//! TLS and HTTP plumbing shared by the spec fetcher, the executor and the WebSocket handlers:
//! the TLS settings, the redirect policy (credentials never leave the configured origin) and
//! the one capped reader of answer bodies.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

/// How the server authenticates to Arcane.
#[derive(Clone)]
pub enum Auth {
    ApiKey(String),
    Bearer(String),
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the credential itself.
        match self {
            Auth::ApiKey(_) => f.write_str("ApiKey(***)"),
            Auth::Bearer(_) => f.write_str("Bearer(***)"),
        }
    }
}

impl Auth {
    /// The credential itself (the key or the token), e.g. to hold it for masking.
    pub fn secret(&self) -> &str {
        match self {
            Auth::ApiKey(k) | Auth::Bearer(k) => k,
        }
    }

    /// The header carrying the credential.
    pub fn header(&self) -> (&'static str, String) {
        match self {
            Auth::ApiKey(k) => ("X-API-Key", k.clone()),
            Auth::Bearer(t) => ("Authorization", format!("Bearer {t}")),
        }
    }
}

/// The one client to Arcane: every request of the engine (actions, lookups, the questions'
/// reads, the event feed, the probe) and the server's own (signing a person in) goes through
/// its clients, within its slots, and every answer body is read by this module, capped.
pub struct Arcane {
    /// GET/HEAD: follows redirects within the configured origin only.
    pub(crate) reads: reqwest::Client,
    /// Writes: follows no redirect, so a write is never repeated elsewhere.
    pub(crate) writes: reqwest::Client,
    /// Bounds the requests (and WebSocket sessions) to Arcane in flight at once.
    slots: Arc<tokio::sync::Semaphore>,
    /// TLS settings of WebSocket (`wss://`) connections: the configuration `reads` and
    /// `writes` are built on.
    pub(crate) ws_tls: Option<Arc<ClientConfig>>,
}

impl Arcane {
    /// The clients to `base_url` (redirects of reads kept to its origin), at most
    /// `concurrent` requests in flight, connecting within `timeout` (10 s at most).
    pub fn new(
        base_url: &str,
        timeout: std::time::Duration,
        concurrent: usize,
        tls: Arc<ClientConfig>,
    ) -> Result<Arcane> {
        ensure_crypto_provider();
        let origin = url::Url::parse(base_url)
            .map_err(|e| anyhow!("ARCANE_URL {base_url:?} is not a URL: {e}"))?
            .origin();
        let client = |redirects: reqwest::redirect::Policy| {
            client_builder(&tls)
                .connect_timeout(std::time::Duration::from_secs(10).min(timeout))
                // The engine's version is the server's (the engine's tests check it).
                .user_agent(concat!("arcane-mcp/", env!("CARGO_PKG_VERSION")))
                .redirect(redirects)
                .pool_max_idle_per_host(concurrent)
                .build()
        };
        let reads = client(same_origin_redirects(origin))?;
        let writes = client(reqwest::redirect::Policy::none())?;
        let ws_tls = base_url.starts_with("https://").then_some(tls);
        Ok(Arcane {
            reads,
            writes,
            slots: Arc::new(tokio::sync::Semaphore::new(concurrent.max(1))),
            ws_tls,
        })
    }

    /// A place among the requests in flight; waiting for one is traced.
    pub(crate) async fn slot(
        &self,
    ) -> Result<tokio::sync::SemaphorePermit<'_>, tokio::sync::AcquireError> {
        use tracing::Instrument;
        match self.slots.try_acquire() {
            Ok(slot) => Ok(slot),
            Err(_) => {
                self.slots
                    .acquire()
                    .instrument(crate::trace::slot_wait())
                    .await
            }
        }
    }

    /// The client of writes (no redirects), for the server's own requests to Arcane beside
    /// the catalog's actions (signing a person in).
    pub fn writes(&self) -> &reqwest::Client {
        &self.writes
    }
}

/// A small JSON answer read whole, up to `limit` bytes (the server's own requests: a sign-in,
/// a provider's documents); `Err` says what failed, without the body, as the predicate of a
/// sentence whose subject is the answer ("is larger than 1024 bytes").
pub async fn read_json(
    resp: reqwest::Response,
    limit: usize,
) -> std::result::Result<serde_json::Value, String> {
    let body = read_capped(resp, limit).await.map_err(|e| match e {
        BodyError::TooLarge { limit, .. } => format!("is larger than {limit} bytes"),
        other => format!("could not be read ({other})"),
    })?;
    serde_json::from_slice(&body).map_err(|e| format!("is not JSON ({e})"))
}

/// An answer's body as a stream of chunks, for the readers of streams (`jsonlines.rs`, the
/// event feed), which bound each message themselves.
pub fn body_stream(
    resp: reqwest::Response,
) -> impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> {
    resp.bytes_stream()
}

/// Default cap of one answer body read into memory (`--max-response-bytes`).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;
/// Most of an error body that is read: only its message is used.
pub const MAX_ERROR_BODY: usize = 64 * 1024;
/// Longest time spent reading an error body (see [`read_prefix`]).
pub const ERROR_BODY_TIME: std::time::Duration = std::time::Duration::from_secs(10);
/// Same-origin redirects followed in a row before giving up.
const MAX_REDIRECTS: usize = 5;

/// The redirect policy of reads (GET/HEAD): a redirect within `origin` (the configured
/// ARCANE_URL's scheme, host and port) is followed, at most `MAX_REDIRECTS` times; any
/// other is not, and the 3xx answer is handed back for [`redirect_text`]. Writes use
/// [`reqwest::redirect::Policy::none`]: a write is never repeated at another address.
pub fn same_origin_redirects(origin: url::Origin) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects in a row"))
        } else if attempt.url().origin() == origin {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// The absolute target of a redirect answer (its `Location` resolved against the request URL),
/// or the raw header when it does not parse; `None` without a `Location`.
pub fn redirect_location(resp: &reqwest::Response) -> Option<String> {
    let raw = resp
        .headers()
        .get(reqwest::header::LOCATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())?;
    Some(
        resp.url()
            .join(&raw)
            .map(String::from)
            .unwrap_or(raw)
            .chars()
            .take(300)
            .collect(),
    )
}

/// The text of a redirect that was not followed. `write` says whether the request was a write
/// (never repeated anywhere) or a read sent elsewhere than the configured origin.
pub fn redirect_text(status: u16, location: Option<&str>, write: bool) -> String {
    let shown = location
        .map(arcane_markdown::code_span)
        .unwrap_or_else(|| "another address (no Location header)".into());
    if write {
        format!(
            "Arcane answered HTTP {status}, redirecting this write to {shown}. The server does not \
             repeat a write at another address, so the request was not sent there. If Arcane has \
             moved, set ARCANE_URL to its new address."
        )
    } else {
        format!(
            "Arcane redirected to {shown} (HTTP {status}); the server does not follow redirects to \
             another origin, so the credential was not sent there. If that is where Arcane now \
             lives, set ARCANE_URL to it."
        )
    }
}

/// A body that could not be read whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// More than the cap arrived (or was announced); reading stopped there.
    #[error(
        "the answer is larger than the limit of {} ({limit} bytes, --max-response-bytes / ARCANE_MCP_MAX_RESPONSE_BYTES){}; reading stopped there",
        arcane_markdown::human_bytes(*.limit as u64),
        .declared.map(|d| format!("; Arcane announced {}", arcane_markdown::human_bytes(d))).unwrap_or_default()
    )]
    TooLarge { limit: usize, declared: Option<u64> },
    /// The body broke off (connection lost, or the request's time cap passed).
    #[error("the answer broke off after {received} bytes ({detail})")]
    Read {
        received: usize,
        detail: String,
        timeout: bool,
    },
}

/// Reads a whole answer body, stopping as soon as it passes `limit` bytes (a declared
/// `Content-Length` over the limit fails before reading). The one reader of answer bodies:
/// memory never holds more than `limit` plus one chunk, whatever the upstream sends.
pub async fn read_capped(mut resp: reqwest::Response, limit: usize) -> Result<Vec<u8>, BodyError> {
    if let Some(len) = resp.content_length()
        && len > limit as u64
    {
        return Err(BodyError::TooLarge {
            limit,
            declared: Some(len),
        });
    }
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > limit {
                    return Err(BodyError::TooLarge {
                        limit,
                        declared: None,
                    });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => {
                return Err(BodyError::Read {
                    received: body.len(),
                    timeout: e.is_timeout(),
                    detail: root_cause(&e),
                });
            }
        }
    }
}

/// Reads at most `limit` bytes of a body, for at most [`ERROR_BODY_TIME`], and drops the rest:
/// for error answers (and HTML pages), whose message is all that is used. A broken or slow body
/// gives what arrived. The time bound matters for streams, whose request may run for
/// 20 × `--timeout`: a body trickling in a byte at a time would otherwise hold the call that long.
pub async fn read_prefix(mut resp: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    let _ = tokio::time::timeout(ERROR_BODY_TIME, async {
        while let Ok(Some(chunk)) = resp.chunk().await {
            let room = limit.saturating_sub(body.len());
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if body.len() >= limit {
                break;
            }
        }
    })
    .await;
    body
}

/// The innermost cause of an error, which is the useful part of reqwest's chains.
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// A local resource the operating system ran out of, found in an error's chain: too many open
/// files, no buffer space, no free local port. `None` when the failure is elsewhere.
pub fn local_resource_error(e: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if let Some(what) = io.raw_os_error().and_then(os_resource) {
                return Some(what);
            }
            // An io::Error wrapping another error hides it from `source()`.
            if let Some(inner) = io.get_ref() {
                cur = Some(inner as &(dyn std::error::Error + 'static));
                continue;
            }
        }
        cur = err.source();
    }
    None
}

fn os_resource(code: i32) -> Option<&'static str> {
    // errno values shared by Linux and the BSDs/macOS, except EADDRNOTAVAIL.
    match code {
        24 => Some("too many open files in this process (EMFILE)"),
        23 => Some("too many open files on this system (ENFILE)"),
        55 if cfg!(target_os = "macos") => Some("no buffer space (ENOBUFS)"),
        105 if cfg!(target_os = "linux") => Some("no buffer space (ENOBUFS)"),
        99 if cfg!(target_os = "linux") => Some("no free local port (EADDRNOTAVAIL)"),
        49 if cfg!(target_os = "macos") => Some("no free local port (EADDRNOTAVAIL)"),
        12 => Some("out of memory (ENOMEM)"),
        _ => None,
    }
}

/// Installs rustls' `ring` provider once per process (reqwest is built without a default one,
/// so that no C toolchain beyond `cc` is needed).
pub fn ensure_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The one TLS configuration of every connection to Arcane: HTTP requests (through
/// [`client_builder`]), WebSocket (`wss://`) sessions and the spec fetch. The platform's trust
/// store plus an optional extra CA (`--ca-cert`), or no verification at all when the operator
/// asked for it (`--insecure-skip-verify`, logged loudly at startup). The CA file is read and
/// checked either way, so a wrong path is reported even with verification off.
pub fn tls_config(ca_cert: Option<&Path>, insecure: bool) -> Result<Arc<ClientConfig>> {
    ensure_crypto_provider();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut extra: Vec<CertificateDer<'static>> = Vec::new();
    if let Some(path) = ca_cert {
        let pem = std::fs::read(path)
            .with_context(|| format!("cannot read CA certificate {}", path.display()))?;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            extra.push(
                cert.map_err(|e| anyhow!("{} is not a PEM certificate: {e}", path.display()))?,
            );
        }
        if extra.is_empty() {
            bail!(
                "{} is not a PEM certificate: it holds no CERTIFICATE block",
                path.display()
            );
        }
    }
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
            .with_no_client_auth()
    } else {
        let verifier = rustls_platform_verifier::Verifier::new_with_extra_roots(extra, provider)
            .context("loading the platform's trust store")?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth()
    };
    Ok(Arc::new(config))
}

/// A reqwest client builder over the shared TLS configuration ([`tls_config`]). It offers
/// HTTP/2 and HTTP/1.1 by ALPN, as reqwest's own configuration would; the WebSocket
/// connector uses the configuration without ALPN (a WebSocket upgrade is HTTP/1.1).
pub fn client_builder(tls: &ClientConfig) -> reqwest::ClientBuilder {
    let mut tls = tls.clone();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    reqwest::Client::builder().tls_backend_preconfigured(tls)
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
    fn local_resource_errors_are_named() {
        let e = std::io::Error::from_raw_os_error(24);
        let wrapped = std::io::Error::other(e);
        assert!(
            local_resource_error(&wrapped)
                .unwrap()
                .contains("too many open files")
        );
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(local_resource_error(&refused), None);
    }

    #[test]
    fn redirect_texts_name_the_location_and_the_fix() {
        let t = redirect_text(302, Some("https://sso.example.com/login"), false);
        assert!(t.contains("`https://sso.example.com/login`"), "{t}");
        assert!(t.contains("set ARCANE_URL to it"), "{t}");
        let t = redirect_text(307, Some("http://a/x"), true);
        assert!(t.contains("not sent there"), "{t}");
    }

    #[test]
    fn builds_configs_and_rejects_a_bad_ca_file() {
        assert!(tls_config(None, true).is_ok());
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.pem");
        let err = tls_config(Some(&missing), false).unwrap_err();
        assert!(format!("{err:#}").contains("nope.pem"));
        // Checked with verification off too, so a wrong path is not hidden.
        let err = tls_config(Some(&missing), true).unwrap_err();
        assert!(format!("{err:#}").contains("nope.pem"));
        let not_pem = dir.path().join("ca.pem");
        std::fs::write(&not_pem, "hello").unwrap();
        let err = tls_config(Some(&not_pem), false).unwrap_err();
        assert!(
            format!("{err:#}").contains("not a PEM certificate"),
            "{err:#}"
        );
    }
}
