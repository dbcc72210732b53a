//! Spec loading: find Arcane's OpenAPI document and read it; parsing it (JSON or YAML) and
//! resolving its `$ref`s is [`arcane_catalog::SpecDoc`] and [`arcane_catalog::RefResolver`].
//!
//! Where the document comes from, in order: an explicit path (`--spec`), then
//! `catalog/openapi.json|yaml` in the catalog directory, then `GET {ARCANE_URL}/api/openapi.json`
//! (public in Arcane, no key needed), cached on disk. A stale cache is used, with a warning,
//! when Arcane cannot be reached. The document's own `servers` URL is never used.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
// Transitional: `crate::spec::{SpecDoc, RefResolver}` paths keep compiling (ARCHITECTURE.md).
pub use arcane_catalog::{RefResolver, SpecDoc};

/// Where to look for the spec, in order of precedence.
#[derive(Debug, Clone, Default)]
pub struct SpecSource {
    /// `--spec PATH`.
    pub explicit: Option<PathBuf>,
    /// Directory holding `openapi.json` or `openapi.yaml` (the catalog directory).
    pub catalog_dir: Option<PathBuf>,
    /// Arcane's base URL, to fetch `/api/openapi.json` from.
    pub arcane_url: Option<String>,
    /// Where the fetched document is cached.
    pub cache_path: Option<PathBuf>,
    /// The TLS configuration of the fetch (`crate::http::tls_config`: `--ca-cert`,
    /// `--insecure-skip-verify`); the platform's trust store when not given.
    pub tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

impl SpecSource {
    /// The local file that will be used, if any (explicit path or catalog directory).
    pub fn local_file(&self) -> Option<PathBuf> {
        if let Some(p) = &self.explicit {
            return Some(p.clone());
        }
        let dir = self.catalog_dir.as_ref()?;
        ["openapi.json", "openapi.yaml", "openapi.yml"]
            .iter()
            .map(|n| dir.join(n))
            .find(|p| p.is_file())
    }

    /// Loads the spec from the first source that has one.
    pub fn load(&self) -> Result<SpecDoc> {
        if let Some(path) = self.local_file() {
            return SpecDoc::from_file(&path);
        }
        let Some(url) = &self.arcane_url else {
            bail!(
                "no OpenAPI document: pass --spec PATH (ARCANE_MCP_SPEC), put openapi.json in the catalog directory, or set ARCANE_URL so it can be fetched from Arcane"
            );
        };
        let endpoint = format!("{}/api/openapi.json", url.trim_end_matches('/'));
        match fetch_blocking(&endpoint, self.tls.clone()) {
            Ok(text) => {
                let doc = SpecDoc::parse(&text, &endpoint)?;
                if let Some(cache) = &self.cache_path {
                    if let Some(dir) = cache.parent() {
                        let _ = std::fs::create_dir_all(dir);
                    }
                    if let Err(e) = std::fs::write(cache, &text) {
                        tracing::warn!(path = %cache.display(), error = %e, "cannot write the spec cache");
                    }
                }
                Ok(doc)
            }
            Err(fetch_err) => match &self.cache_path {
                Some(cache) if cache.is_file() => {
                    tracing::warn!(
                        url = %crate::logging::masked_url(&endpoint),
                        cache = %cache.display(),
                        error = %crate::logging::without_url_password(&format!("{fetch_err:#}"), &endpoint),
                        "Arcane is unreachable; using the cached OpenAPI document, which may be stale"
                    );
                    let mut doc = SpecDoc::from_file(cache)?;
                    doc.watch_path = None;
                    Ok(doc)
                }
                _ => Err(fetch_err.context(format!(
                    "cannot fetch the OpenAPI document from {endpoint} and there is no cached copy; check ARCANE_URL or pass --spec PATH"
                ))),
            },
        }
    }
}

/// Fetches a URL on a private runtime so that it works both inside and outside tokio.
fn fetch_blocking(url: &str, tls: Option<std::sync::Arc<rustls::ClientConfig>>) -> Result<String> {
    let url = url.to_string();
    std::thread::spawn(move || -> Result<String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(async {
            let tls = match tls {
                Some(tls) => tls,
                None => crate::http::tls_config(None, false)?,
            };
            let origin = url::Url::parse(&url)
                .map_err(|e| anyhow!("{url} is not a URL: {e}"))?
                .origin();
            let client = crate::http::client_builder(&tls)
                .timeout(Duration::from_secs(15))
                .redirect(crate::http::same_origin_redirects(origin))
                .build()?;
            let resp = client.get(&url).send().await?;
            let status = resp.status();
            if status.is_redirection() {
                let location = crate::http::redirect_location(&resp);
                bail!(
                    "{}",
                    crate::http::redirect_text(status.as_u16(), location.as_deref(), false)
                );
            }
            if !status.is_success() {
                bail!("{url} answered {status}");
            }
            // The document is about 0.6 MB; the default answer cap leaves room to grow.
            let body =
                crate::http::read_capped(resp, crate::http::DEFAULT_MAX_RESPONSE_BYTES).await?;
            Ok(String::from_utf8_lossy(&body).into_owned())
        })
    })
    .join()
    .map_err(|_| anyhow!("the spec fetch thread panicked"))?
}
