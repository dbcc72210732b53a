//! Sources: every file the catalog is built from (the spec, the declaration and overlay
//! directories), and the build from them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use arcane_catalog::{BuildInput, Catalog, Layers, SpecDoc, build_catalog};

use crate::config::CatalogSourceArgs;
use crate::load::dirs;
use crate::load::spec::SpecSource;

/// Every file the catalog is built from.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub spec: SpecSource,
    /// An operator's overlay directory (`--overrides`), layered over the built-in overlays.
    pub overrides_dir: Option<PathBuf>,
    /// The catalog directory: `openapi.json|yaml` and extra declaration files (`*.yaml`).
    pub catalog_dir: Option<PathBuf>,
}

impl Sources {
    /// The catalog of Arcane 2.8.0's document with the built-in layers: the unit tests' catalog.
    #[cfg(test)]
    pub(crate) fn test_catalog() -> arcane_catalog::Catalog {
        Sources::of_spec(arcane_test_support::spec_v2())
            .build()
            .expect("the 2.8.0 catalog")
    }

    /// The built-in layers over the OpenAPI document at `spec`, and nothing else: no operator
    /// directories, nothing fetched. Add them with [`Sources::with_overrides`] and
    /// [`Sources::with_catalog_dir`].
    pub fn of_spec(spec: impl Into<PathBuf>) -> Sources {
        Sources {
            spec: SpecSource {
                explicit: Some(spec.into()),
                ..SpecSource::default()
            },
            overrides_dir: None,
            catalog_dir: None,
        }
    }

    /// The same sources with an operator overlay directory (`--overrides`).
    pub fn with_overrides(mut self, dir: impl Into<PathBuf>) -> Sources {
        self.overrides_dir = Some(dir.into());
        self
    }

    /// The same sources with a catalog directory (`--catalog-dir`).
    pub fn with_catalog_dir(mut self, dir: impl Into<PathBuf>) -> Sources {
        self.catalog_dir = Some(dir.into());
        self
    }

    /// The sources the settings name: `--spec`, `--overrides`, `--catalog-dir`, and the spec
    /// fetched from `arcane_url` (cached at `--spec-cache`) when no file is found.
    pub fn from_args(args: &CatalogSourceArgs, arcane_url: Option<&str>) -> Sources {
        let cache = args.spec_cache.clone().or_else(|| {
            Some(crate::load::spec::default_cache_file(
                &dirs::cache_home()?,
                arcane_url?,
            ))
        });
        Sources {
            spec: SpecSource {
                explicit: args.spec.clone(),
                catalog_dir: Some(args.catalog_dir.clone()),
                arcane_url: arcane_url.map(str::to_string),
                cache_path: cache,
                tls: None,
                builtin: None,
            },
            overrides_dir: args.overrides.clone(),
            catalog_dir: Some(args.catalog_dir.clone()),
        }
    }

    /// Loads the spec and every layer and builds a catalog.
    pub fn build(&self) -> Result<Catalog> {
        // The document and the overlay files are independent: read them on two threads (each
        // is a good part of the startup).
        let (doc, layers) = std::thread::scope(|s| {
            match std::thread::Builder::new()
                .name("overlays".into())
                .spawn_scoped(s, || self.layers())
            {
                Ok(layers) => {
                    let doc = self.load_spec();
                    let layers = layers.join().unwrap_or_else(|_| {
                        Err(anyhow!("reading the overlay files failed unexpectedly"))
                    });
                    (doc, layers)
                }
                Err(_) => (self.load_spec(), self.layers()),
            }
        });
        let (doc, layers) = (doc?, layers?);
        let catalog = build_catalog(BuildInput {
            spec: &doc,
            layers: &layers,
        })
        .with_context(|| format!("building the catalog from {}", doc.origin));
        // A fetched document is cached only once a catalog was built from it.
        if catalog.is_ok() {
            self.spec.remember(&doc);
        }
        // Freeing the parsed document and files (trees of many small allocations) is off the
        // startup's path; without a thread they are freed here.
        let _ = std::thread::Builder::new()
            .name("free-sources".into())
            .spawn(move || drop((doc, layers)));
        catalog
    }

    /// Loads the OpenAPI document; one without operations is refused (a truncated download or
    /// the wrong file would otherwise empty the catalog).
    pub fn load_spec(&self) -> Result<SpecDoc> {
        let doc = self.spec.load()?;
        let operations = doc
            .root
            .get("paths")
            .and_then(serde_json::Value::as_object)
            .map(|paths| {
                paths
                    .values()
                    .filter_map(serde_json::Value::as_object)
                    .flat_map(|item| item.keys())
                    .filter(|k| {
                        matches!(
                            k.as_str(),
                            "get" | "head" | "post" | "put" | "patch" | "delete" | "options"
                        )
                    })
                    .count()
            })
            .unwrap_or(0);
        if operations == 0 {
            bail!(
                "{}: the OpenAPI document has no operations (its `paths` is empty or missing) — \
                 put Arcane's own document there ({{ARCANE_URL}}/api/openapi.json)",
                doc.origin
            );
        }
        Ok(doc)
    }

    /// The built-in layers plus the operator's declaration and overlay directories. Both
    /// directories are checked even when the first has errors; the error lists them all.
    pub fn layers(&self) -> Result<Layers> {
        let mut layers = Layers::builtin()?;
        let mut problems = Vec::new();
        if let Some(dir) = &self.catalog_dir
            && dir.is_dir()
            && let Err(e) = layers.add_declaration_dir(dir)
        {
            problems.push(format!("{e:#}"));
        }
        if let Some(dir) = &self.overrides_dir
            && let Err(e) = layers.add_overlay_dir(dir)
        {
            problems.push(format!("{e:#}"));
        }
        if problems.is_empty() {
            Ok(layers)
        } else {
            Err(anyhow!(problems.join("\n")))
        }
    }

    /// What the catalog directory (`--catalog-dir`) adds, when it adds anything: a relative
    /// one (the default, `catalog`) is found in the working directory, so a server started
    /// in another directory loads other files without a word unless this is logged
    /// ([`announce_catalog_dir`]) and shown by `check`.
    pub fn catalog_dir_use(&self) -> Option<CatalogDirUse> {
        let dir = self.catalog_dir.as_ref().filter(|d| d.is_dir())?;
        let declarations: Vec<String> = arcane_catalog::yaml_paths(dir)
            .unwrap_or_default()
            .iter()
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            // The OpenAPI document is not a declaration file (`add_declaration_dir`).
            .filter(|n| !n.starts_with("openapi."))
            .collect();
        let spec = if self.spec.explicit.is_none() {
            self.spec
                .local_file()
                .filter(|p| p.parent() == Some(dir.as_path()))
                .and_then(|p| p.file_name()?.to_str().map(str::to_string))
        } else {
            None
        };
        if declarations.is_empty() && spec.is_none() {
            return None;
        }
        Some(CatalogDirUse {
            dir: std::path::absolute(dir).unwrap_or_else(|_| dir.clone()),
            relative: dir.is_relative(),
            declarations,
            spec,
        })
    }

    /// What to watch: (directory, predicate on changed paths).
    pub(crate) fn watch_targets(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        if let Some(p) = self.spec.local_file()
            && let Some(parent) = p.parent()
        {
            dirs.push(absolute(parent));
        }
        for d in [&self.overrides_dir, &self.catalog_dir]
            .into_iter()
            .flatten()
        {
            if d.is_dir() {
                dirs.push(absolute(d));
            }
        }
        dirs.sort();
        dirs.dedup();
        dirs
    }

    /// Whether a changed path is one the catalog is built from.
    pub(crate) fn is_source(&self, path: &Path) -> bool {
        let path = absolute(path);
        if let Some(spec) = self.spec.local_file()
            && absolute(&spec) == path
        {
            return true;
        }
        let yaml = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        );
        let in_dir = |d: &Option<PathBuf>| {
            d.as_ref()
                .is_some_and(|d| path.parent() == Some(absolute(d).as_path()))
        };
        // A new openapi file in the catalog directory also counts.
        let spec_name = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("openapi."));
        (yaml && (in_dir(&self.overrides_dir) || in_dir(&self.catalog_dir)))
            || (spec_name && in_dir(&self.catalog_dir))
    }
}

pub(crate) fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir()
                .map(|d| d.join(p))
                .unwrap_or_else(|_| p.to_path_buf())
        }
    })
}

/// What the catalog directory adds ([`Sources::catalog_dir_use`]).
#[derive(Debug, Clone)]
pub struct CatalogDirUse {
    /// The directory, absolute.
    pub dir: PathBuf,
    /// Given as a relative path (the default `catalog` is): found in the working directory.
    pub relative: bool,
    /// The declaration files loaded from it (file names).
    pub declarations: Vec<String>,
    /// The OpenAPI document taken from it (no `--spec`), its file name.
    pub spec: Option<String>,
}

impl CatalogDirUse {
    /// One sentence: what is loaded from where, and how to choose otherwise.
    pub fn text(&self) -> String {
        let mut what = Vec::new();
        if !self.declarations.is_empty() {
            what.push(format!(
                "{} declaration file(s) ({})",
                self.declarations.len(),
                self.declarations.join(", ")
            ));
        }
        if let Some(spec) = &self.spec {
            what.push(format!("the OpenAPI document {spec}"));
        }
        let whence = if self.relative {
            ", found relative to the working directory (--catalog-dir, default `catalog`)"
        } else {
            " (--catalog-dir)"
        };
        format!(
            "the catalog directory {}{whence} adds {} to the catalog; if that is not meant, set \
             --catalog-dir / ARCANE_MCP_CATALOG_DIR to the directory you mean (an absolute path; \
             an empty or missing directory adds nothing)",
            self.dir.display(),
            what.join(" and ")
        )
    }
}

/// Logs what the catalog directory adds at startup: a WARN when it was found relative to the
/// working directory (files an operator may not know are there), INFO when it was named by an
/// absolute path.
pub fn announce_catalog_dir(sources: &Sources) {
    if let Some(used) = sources.catalog_dir_use() {
        if used.relative {
            tracing::warn!(dir = %used.dir.display(), files = used.declarations.len(), "{}", used.text());
        } else {
            tracing::info!(dir = %used.dir.display(), files = used.declarations.len(), "{}", used.text());
        }
    }
}
