//! Spec loading: find Arcane's OpenAPI document, parse it (JSON or YAML), and resolve `$ref`s.
//!
//! Where the document comes from, in order: an explicit path (`--spec`), then
//! `catalog/openapi.json|yaml` in the catalog directory, then `GET {ARCANE_URL}/api/openapi.json`
//! (public in Arcane, no key needed), cached on disk. A stale cache is used, with a warning,
//! when Arcane cannot be reached. The document's own `servers` URL is never used.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Map, Value};

/// A parsed OpenAPI document and where it came from.
#[derive(Debug, Clone)]
pub struct SpecDoc {
    /// The whole document as JSON (YAML documents are converted).
    pub root: Value,
    /// A human-readable origin: a file path or a URL.
    pub origin: String,
    /// The file to watch for hot reload, when the document came from a file.
    pub watch_path: Option<PathBuf>,
}

impl SpecDoc {
    /// `info.version`, e.g. `2.8.0`.
    pub fn version(&self) -> &str {
        self.root
            .pointer("/info/version")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
    }

    /// Parses a document from text. `origin` is used in error messages; JSON is tried first when
    /// the text starts with `{`, YAML otherwise.
    pub fn parse(text: &str, origin: &str) -> Result<SpecDoc> {
        let root: Value = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| {
                anyhow!(
                    "{origin}: invalid JSON at line {}, column {}: {e}",
                    e.line(),
                    e.column()
                )
            })?
        } else {
            yaml_serde::from_str(text).map_err(|e| anyhow!("{origin}: invalid YAML: {e}"))?
        };
        if !root.is_object() {
            bail!("{origin}: an OpenAPI document must be an object at the top level");
        }
        let openapi = root.get("openapi").and_then(Value::as_str).unwrap_or("");
        if !openapi.starts_with("3.") {
            bail!(
                "{origin}: not an OpenAPI 3.x document (`openapi` is {:?}); Arcane serves one at /api/openapi.json",
                root.get("openapi")
            );
        }
        if !root.get("paths").is_some_and(Value::is_object) {
            bail!("{origin}: the document has no `paths` object (at JSON Pointer /paths)");
        }
        Ok(SpecDoc {
            root,
            origin: origin.to_string(),
            watch_path: None,
        })
    }

    /// Reads and parses a document from a file.
    pub fn from_file(path: &Path) -> Result<SpecDoc> {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!(
                "cannot read the OpenAPI document {}; check --spec / ARCANE_MCP_SPEC",
                path.display()
            )
        })?;
        let mut doc = SpecDoc::parse(&text, &path.display().to_string())?;
        doc.watch_path = Some(path.to_path_buf());
        Ok(doc)
    }
}

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

/// Resolves `$ref`s against a document, inlining them so that the result is self-contained.
///
/// A reference that points back into one of the schemas being expanded (a cycle) is cut: it is
/// replaced by `{"type": "object", "description": "(recursive <Name>; cut)"}`. Dangling
/// references are replaced the same way, so no `$ref` survives.
pub struct RefResolver<'a> {
    root: &'a Value,
}

impl<'a> RefResolver<'a> {
    pub fn new(root: &'a Value) -> Self {
        RefResolver { root }
    }

    /// Returns `value` with every `$ref` inlined.
    pub fn inline(&self, value: &Value) -> Value {
        let mut stack = Vec::new();
        self.inline_inner(value, &mut stack)
    }

    /// Follows a single `$ref` at the top of `value` (used for parameters and request bodies,
    /// which may themselves be references).
    pub fn deref<'v>(&self, value: &'v Value) -> &'v Value
    where
        'a: 'v,
    {
        let mut cur = value;
        for _ in 0..16 {
            match cur.get("$ref").and_then(Value::as_str) {
                Some(r) => match self.lookup(r) {
                    Some(target) => cur = target,
                    None => return cur,
                },
                None => return cur,
            }
        }
        cur
    }

    fn lookup(&self, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer)
    }

    fn inline_inner(&self, value: &Value, stack: &mut Vec<String>) -> Value {
        match value {
            Value::Object(map) => {
                if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                    let name = reference
                        .rsplit('/')
                        .next()
                        .unwrap_or(reference)
                        .to_string();
                    if stack.iter().any(|r| r == reference) {
                        return cut_schema(&format!("recursive {name}; cut"));
                    }
                    let Some(target) = self.lookup(reference) else {
                        return cut_schema(&format!("unresolved reference {reference}"));
                    };
                    stack.push(reference.to_string());
                    let mut resolved = self.inline_inner(target, stack);
                    stack.pop();
                    // Sibling keywords of a $ref (allowed in 3.1) override the target's.
                    if let Value::Object(res) = &mut resolved {
                        for (k, v) in map {
                            if k != "$ref" {
                                res.insert(k.clone(), self.inline_inner(v, stack));
                            }
                        }
                    }
                    resolved
                } else {
                    let mut out = Map::with_capacity(map.len());
                    for (k, v) in map {
                        out.insert(k.clone(), self.inline_inner(v, stack));
                    }
                    Value::Object(out)
                }
            }
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.inline_inner(v, stack)).collect())
            }
            other => other.clone(),
        }
    }
}

fn cut_schema(why: &str) -> Value {
    serde_json::json!({ "type": "object", "description": format!("({why})") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inlines_and_cuts_cycles() {
        let root = json!({
            "components": {"schemas": {
                "Node": {"type": "object", "properties": {
                    "child": {"$ref": "#/components/schemas/Node"},
                    "leaf": {"$ref": "#/components/schemas/Leaf"}
                }},
                "Leaf": {"type": "string"}
            }}
        });
        let r = RefResolver::new(&root);
        let out = r.inline(&json!({"$ref": "#/components/schemas/Node"}));
        assert_eq!(out["properties"]["leaf"], json!({"type": "string"}));
        let child = &out["properties"]["child"];
        assert_eq!(child["type"], "object");
        assert!(
            child["description"]
                .as_str()
                .unwrap()
                .contains("recursive Node")
        );
        assert!(!out.to_string().contains("$ref"));
    }

    #[test]
    fn dangling_ref_is_replaced() {
        let root = json!({});
        let out = RefResolver::new(&root).inline(&json!({"$ref": "#/components/schemas/Nope"}));
        assert!(!out.to_string().contains("$ref"));
        assert!(out["description"].as_str().unwrap().contains("unresolved"));
    }

    #[test]
    fn rejects_non_openapi() {
        let err = SpecDoc::parse("{\"swagger\": \"2.0\", \"paths\": {}}", "x.json").unwrap_err();
        assert!(err.to_string().contains("x.json"));
        assert!(err.to_string().contains("OpenAPI 3"));
        let err = SpecDoc::parse("{\"openapi\": ", "y.json").unwrap_err();
        assert!(err.to_string().contains("y.json: invalid JSON at line 1"));
    }

    #[test]
    fn parses_yaml() {
        let doc = SpecDoc::parse(
            "openapi: 3.1.0\ninfo: {version: 1.2.3}\npaths: {}\n",
            "s.yaml",
        )
        .unwrap();
        assert_eq!(doc.version(), "1.2.3");
    }
}
