//! Spec loading: find Arcane's OpenAPI document and read it; parsing it (JSON or YAML) and
//! resolving its `$ref`s is [`arcane_catalog::SpecDoc`] and [`arcane_catalog::RefResolver`].
//!
//! Where the document comes from, in order: an explicit path (`--spec`), then a document built
//! into the binary when the caller chose one (the demo's Arcane 2.8.0, [`Builtin`]), then
//! `catalog/openapi.json|yaml` in the catalog directory, then `GET {ARCANE_URL}/api/openapi.json`
//! (public in Arcane, no key needed), cached on disk once a catalog was built from it (so a
//! document that fails, however it fails, never replaces the last good copy). A stale cache is
//! used, with a warning, when Arcane cannot be reached. The document's own `servers` URL is
//! never used.
//!
//! The fetched document is bounded like a file: at most `arcane_catalog::MAX_SPEC_BYTES` are
//! read, and it is parsed as the format its `Content-Type` names (JSON or YAML; anything else,
//! such as a login page's HTML, is refused), with the YAML budgets of `arcane_catalog`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use arcane_catalog::{MAX_SPEC_BYTES, SpecDoc, SpecFormat};

/// A document compiled into the binary: `arcane-mcp demo`'s default when no spec is given
/// (`arcane_sim::builtin_spec`, Arcane 2.8.0). A function, so that this module does not
/// depend on the simulator, which builds without the `demo` feature do not link.
#[derive(Clone, Copy)]
pub struct Builtin {
    /// How logs and errors name it (the catalog's `origin`).
    pub name: &'static str,
    /// Bytes that identify it in the catalog cache's key (the compressed form: cheap to hash).
    pub identity: &'static [u8],
    /// Its text (inflated on first use).
    pub text: fn() -> Result<&'static str>,
}

impl std::fmt::Debug for Builtin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Builtin").field(&self.name).finish()
    }
}

/// Where to look for the spec, in order of precedence.
#[derive(Debug, Clone, Default)]
pub struct SpecSource {
    /// `--spec PATH`.
    pub explicit: Option<PathBuf>,
    /// A built-in document, used when there is no explicit path (before the catalog directory).
    pub builtin: Option<Builtin>,
    /// Directory holding `openapi.json` or `openapi.yaml` (the catalog directory).
    pub catalog_dir: Option<PathBuf>,
    /// Arcane's base URL, to fetch `/api/openapi.json` from.
    pub arcane_url: Option<String>,
    /// Where the fetched document is cached.
    pub cache_path: Option<PathBuf>,
    /// The TLS configuration of the fetch (`arcane_engine::tls_config`: `--ca-cert`,
    /// `--insecure-skip-verify`); the platform's trust store when not given.
    pub tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

impl SpecSource {
    /// The local file that will be used, if any (explicit path or catalog directory; none when
    /// the built-in document is).
    pub fn local_file(&self) -> Option<PathBuf> {
        if let Some(p) = &self.explicit {
            return Some(p.clone());
        }
        if self.builtin.is_some() {
            return None;
        }
        let dir = self.catalog_dir.as_ref()?;
        ["openapi.json", "openapi.yaml", "openapi.yml"]
            .iter()
            .map(|n| dir.join(n))
            .find(|p| p.is_file())
    }

    /// Whether the document is read without a network fetch (a local file or the built-in one).
    pub fn is_local(&self) -> bool {
        self.builtin.is_some() || self.local_file().is_some()
    }

    /// The built-in document that will be used, if any (no explicit path overrides it).
    pub fn builtin_used(&self) -> Option<Builtin> {
        self.builtin.filter(|_| self.explicit.is_none())
    }

    /// Loads the spec from the first source that has one.
    pub fn load(&self) -> Result<SpecDoc> {
        if let Some(path) = self.local_file() {
            return SpecDoc::from_file(&path);
        }
        if let Some(builtin) = self.builtin_used() {
            return SpecDoc::parse((builtin.text)()?, builtin.name);
        }
        let Some(url) = &self.arcane_url else {
            bail!(
                "no OpenAPI document: pass --spec PATH (ARCANE_MCP_SPEC), put openapi.json in the catalog directory, or set ARCANE_URL so it can be fetched from Arcane"
            );
        };
        let endpoint = endpoint(url);
        match fetch_blocking(&endpoint, self.tls.clone()) {
            Ok((text, format)) => SpecDoc::parse_as(&text, &endpoint, format),
            Err(fetch_err) => match &self.cache_path {
                Some(cache) if cache.is_file() => {
                    let mut doc = SpecDoc::from_file(cache)?;
                    // Another Arcane's document (a wrong host or port) is not this one's.
                    if doc.root.get(SOURCE_MARK).and_then(|v| v.as_str())
                        != Some(source_mark(&endpoint).as_str())
                    {
                        return Err(fetch_err.context(format!(
                            "cannot fetch the OpenAPI document from {endpoint}, and the cached copy at {} was fetched from another Arcane URL, so it is not used; check ARCANE_URL (host and port) or pass --spec PATH",
                            cache.display()
                        )));
                    }
                    tracing::warn!(
                        url = %crate::logging::masked_url(&endpoint),
                        cache = %cache.display(),
                        error = %crate::logging::without_url_password(&format!("{fetch_err:#}"), &endpoint),
                        "Arcane is unreachable; using the cached OpenAPI document, which may be stale"
                    );
                    doc.watch_path = None;
                    Ok(doc)
                }
                _ => Err(fetch_err.context(format!(
                    "cannot fetch the OpenAPI document from {endpoint} and there is no cached copy; check ARCANE_URL or pass --spec PATH"
                ))),
            },
        }
    }

    /// Keeps a fetched document as the cache, once a catalog was built from it: a document
    /// that does not parse or build never replaces the last good copy. Nothing to do for a
    /// document read from a file (or from the cache).
    pub fn remember(&self, doc: &SpecDoc) {
        let (Some(url), Some(cache)) = (&self.arcane_url, &self.cache_path) else {
            return;
        };
        if self.local_file().is_some() || doc.origin != endpoint(url) {
            return;
        }
        if let Some(dir) = cache.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // Marked with where it came from (a digest: ARCANE_URL may hold a password), so a
        // start against another Arcane never mistakes it for its own.
        let mut root = doc.root.clone();
        if let Some(map) = root.as_object_mut() {
            map.insert(SOURCE_MARK.into(), source_mark(&endpoint(url)).into());
        }
        let written = serde_json::to_vec(&root)
            .map_err(std::io::Error::other)
            .and_then(|text| {
                // A temporary file renamed into place: a reader never sees half a document.
                let tmp = cache.with_extension(format!("tmp.{}", std::process::id()));
                std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, cache))
            });
        if let Err(e) = written {
            tracing::warn!(path = %cache.display(), error = %e, "cannot write the spec cache");
        }
    }
}

/// The cached document's mark of the URL it was fetched from (an OpenAPI `x-` extension).
const SOURCE_MARK: &str = "x-arcane-mcp-fetched-from";

/// The mark of an endpoint: its SHA-256, hex.
fn source_mark(endpoint: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(endpoint.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The default cache file of the document fetched from `url`: one per Arcane URL, so two
/// Arcanes (or a mistyped port) never share one.
pub fn default_cache_file(dir: &std::path::Path, url: &str) -> PathBuf {
    dir.join(format!(
        "openapi-{}.json",
        &source_mark(&endpoint(url))[..16]
    ))
}

/// Where Arcane serves its document.
fn endpoint(url: &str) -> String {
    format!("{}/api/openapi.json", url.trim_end_matches('/'))
}

/// The format a `Content-Type` names: JSON (`application/json`, `…+json`) or YAML
/// (`application/yaml`, `text/yaml`, `…+yaml`, `x-yaml`); anything else is an error.
fn format_of(content_type: Option<&str>, url: &str) -> Result<SpecFormat> {
    let essence = content_type
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let (kind, sub) = essence.split_once('/').unwrap_or(("", ""));
    match (kind, sub) {
        ("application", s) if s == "json" || s.ends_with("+json") => Ok(SpecFormat::Json),
        ("application" | "text", s)
            if matches!(s, "yaml" | "x-yaml" | "vnd.oai.openapi") || s.ends_with("+yaml") =>
        {
            Ok(SpecFormat::Yaml)
        }
        _ => bail!(
            "{url} answered with Content-Type {:?}, not an OpenAPI document (JSON or YAML); check that ARCANE_URL is Arcane's address (not a login page or proxy), or pass --spec PATH",
            content_type.unwrap_or("(none)")
        ),
    }
}

/// Fetches a URL on a private runtime so that it works both inside and outside tokio.
fn fetch_blocking(
    url: &str,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
) -> Result<(String, SpecFormat)> {
    let url = url.to_string();
    std::thread::spawn(move || -> Result<(String, SpecFormat)> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(async {
            let tls = match tls {
                Some(tls) => tls,
                None => arcane_engine::tls_config(None, false)?,
            };
            let origin = url::Url::parse(&url)
                .map_err(|e| anyhow!("{url} is not a URL: {e}"))?
                .origin();
            let client = arcane_engine::client_builder(&tls)
                .timeout(Duration::from_secs(15))
                .redirect(arcane_engine::same_origin_redirects(origin))
                .build()?;
            let resp = client.get(&url).send().await?;
            let status = resp.status();
            if status.is_redirection() {
                let location = arcane_engine::redirect_location(&resp);
                bail!(
                    "{}",
                    arcane_engine::redirect_text(status.as_u16(), location.as_deref(), false)
                );
            }
            if !status.is_success() {
                bail!("{url} answered {status}");
            }
            let format = format_of(
                resp.headers()
                    .get(reqwest::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok()),
                &url,
            )?;
            // The document is about 0.6 MB; the cap is a file's (`MAX_SPEC_BYTES`).
            let body = arcane_engine::read_capped(resp, MAX_SPEC_BYTES)
                .await
                .map_err(|e| match e {
                    arcane_engine::BodyError::TooLarge { .. } => anyhow!(
                        "{url}: the OpenAPI document is larger than the limit of {MAX_SPEC_BYTES} bytes (Arcane's is under 1 MB); check that ARCANE_URL is Arcane's address, or pass --spec PATH"
                    ),
                    other => other.into(),
                })?;
            Ok((String::from_utf8_lossy(&body).into_owned(), format))
        })
    })
    .join()
    .map_err(|_| anyhow!("the spec fetch thread panicked"))?
}
