//! Spec parsing: Arcane's OpenAPI document as JSON (YAML documents are converted), and the
//! inlining of its `$ref`s. Where the document comes from (a file, Arcane, a cache) is the
//! server's business.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Map, Value};

use crate::yaml::{self, MAX_SPEC_BYTES};

/// The most JSON values that inlining `$ref`s may produce over one whole catalog build (every
/// parameter, body and answer schema together). Arcane 2.8.0's document needs 47,418
/// (docs/security.md, "Expansion budgets"); a document whose references fan out (ten
/// references to a schema of ten references, seven levels down: ten million copies from 4 KB
/// of text) stops here instead of exhausting the memory.
pub const MAX_INLINED_NODES: u64 = 500_000;

/// The deepest nesting an inlined schema may reach, counting each reference followed as a
/// level (2.8.0's deepest is 31). It also bounds the resolver's recursion.
pub const MAX_INLINED_DEPTH: usize = 128;

/// How a document is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecFormat {
    Json,
    Yaml,
}

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
        let format = if text.trim_start().starts_with('{') {
            SpecFormat::Json
        } else {
            SpecFormat::Yaml
        };
        SpecDoc::parse_as(text, origin, format)
    }

    /// Parses a document written in `format`. A document over [`MAX_SPEC_BYTES`], or a YAML one
    /// that nests too deeply or expands through aliases past its budget (`yaml::check_spec`),
    /// is refused before any value is built.
    pub fn parse_as(text: &str, origin: &str, format: SpecFormat) -> Result<SpecDoc> {
        if text.len() > MAX_SPEC_BYTES {
            bail!(
                "{origin}: the OpenAPI document is {} bytes, over the limit of {MAX_SPEC_BYTES} (Arcane's is under 1 MB) — use the document Arcane serves at /api/openapi.json",
                text.len()
            );
        }
        let root: Value = match format {
            SpecFormat::Json => serde_json::from_str(text).map_err(|e| {
                anyhow!(
                    "{origin}: invalid JSON at line {}, column {}: {e}",
                    e.line(),
                    e.column()
                )
            })?,
            SpecFormat::Yaml => {
                yaml::check_spec(text, origin).map_err(|e| anyhow!(e))?;
                yaml_serde::from_str(text).map_err(|e| anyhow!("{origin}: invalid YAML: {e}"))?
            }
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

    /// Reads and parses a document from a file (at most [`MAX_SPEC_BYTES`] of it is read).
    pub fn from_file(path: &Path) -> Result<SpecDoc> {
        use std::io::Read as _;
        let what = || {
            format!(
                "cannot read the OpenAPI document {}; check --spec / ARCANE_MCP_SPEC",
                path.display()
            )
        };
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_SPEC_BYTES as u64 + 1).read_to_end(&mut bytes))
            .with_context(what)?;
        let text = String::from_utf8(bytes).map_err(|e| {
            anyhow!(
                "{}: not UTF-8 text (byte {}) — {}",
                path.display(),
                e.utf8_error().valid_up_to(),
                what()
            )
        })?;
        let mut doc = SpecDoc::parse(&text, &path.display().to_string())?;
        doc.watch_path = Some(path.to_path_buf());
        Ok(doc)
    }
}

/// Resolves `$ref`s against a document, inlining them so that the result is self-contained.
///
/// A reference that points back into one of the schemas being expanded (a cycle) is cut: it is
/// replaced by `{"type": "object", "description": "(recursive <Name>; cut)"}`. Dangling
/// references are replaced the same way, so no `$ref` survives.
///
/// The work is bounded: over one resolver's life (one catalog build, shared by its threads) at
/// most [`MAX_INLINED_NODES`] values are produced, none deeper than [`MAX_INLINED_DEPTH`].
/// Past either, `inline` returns at once with a placeholder and [`RefResolver::check`] fails
/// with the reason, so the build fails instead of the process.
pub struct RefResolver<'a> {
    root: &'a Value,
    produced: AtomicU64,
    deepest: AtomicUsize,
    overrun: Mutex<Option<String>>,
}

/// Values produced by one `inline` call, added to the shared count in batches.
struct Tally {
    local: u64,
    deepest: usize,
    over: bool,
}

/// How many values one `inline` call produces before it adds them to the shared count and
/// looks whether another thread exhausted the budget.
const TALLY_BATCH: u64 = 4096;

impl<'a> RefResolver<'a> {
    pub fn new(root: &'a Value) -> Self {
        RefResolver {
            root,
            produced: AtomicU64::new(0),
            deepest: AtomicUsize::new(0),
            overrun: Mutex::new(None),
        }
    }

    /// Returns `value` with every `$ref` inlined (a placeholder once the budget is spent).
    pub fn inline(&self, value: &Value) -> Value {
        let mut stack = Vec::new();
        let mut tally = Tally {
            local: 0,
            deepest: 0,
            over: self.is_over(),
        };
        if tally.over {
            return cut_schema("expansion budget spent");
        }
        let out = self.inline_inner(value, &mut stack, 0, &mut tally);
        self.flush(&mut tally);
        out
    }

    /// The values produced so far by every `inline` call, and the deepest level reached (for
    /// measuring what a real document needs).
    pub fn produced(&self) -> (u64, usize) {
        (
            self.produced.load(Ordering::Relaxed),
            self.deepest.load(Ordering::Relaxed),
        )
    }

    /// Fails when an `inline` call went over the budget: the error names the document and
    /// what to do.
    pub fn check(&self, origin: &str) -> Result<()> {
        match self
            .overrun
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            None => Ok(()),
            Some(why) => bail!(
                "{origin}: {why} — this is not Arcane's OpenAPI document (Arcane 2.8.0's needs under 50,000 values and 31 levels); use the document Arcane serves at /api/openapi.json (--spec PATH), and if a larger Arcane really needs more, report it"
            ),
        }
    }

    fn is_over(&self) -> bool {
        self.produced.load(Ordering::Relaxed) > MAX_INLINED_NODES
    }

    fn overrun(&self, why: String) {
        let mut slot = self.overrun.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(why);
        // Every other call stops at its next batch.
        self.produced
            .fetch_add(MAX_INLINED_NODES + 1, Ordering::Relaxed);
    }

    /// Adds a call's values to the shared count; past the budget, records the overrun.
    fn flush(&self, tally: &mut Tally) {
        self.deepest.fetch_max(tally.deepest, Ordering::Relaxed);
        if tally.local == 0 {
            return;
        }
        let total = self.produced.fetch_add(tally.local, Ordering::Relaxed) + tally.local;
        tally.local = 0;
        if total > MAX_INLINED_NODES && !tally.over {
            tally.over = true;
            self.overrun(format!(
                "inlining its `$ref`s produces more than {MAX_INLINED_NODES} JSON values (references that fan out)"
            ));
        }
    }

    /// Counts one produced value; false once the budget is spent (here or on another thread).
    fn take(&self, tally: &mut Tally) -> bool {
        if tally.over {
            return false;
        }
        tally.local += 1;
        if tally.local >= TALLY_BATCH {
            self.flush(tally);
            if self.is_over() {
                tally.over = true;
            }
        }
        !tally.over
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

    fn inline_inner(
        &self,
        value: &Value,
        stack: &mut Vec<String>,
        depth: usize,
        tally: &mut Tally,
    ) -> Value {
        if !self.take(tally) {
            return Value::Null;
        }
        tally.deepest = tally.deepest.max(depth);
        if depth > MAX_INLINED_DEPTH {
            if !tally.over {
                tally.over = true;
                self.overrun(format!(
                    "its `$ref`s nest deeper than {MAX_INLINED_DEPTH} levels when inlined"
                ));
            }
            return Value::Null;
        }
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
                    let mut resolved = self.inline_inner(target, stack, depth + 1, tally);
                    stack.pop();
                    // Sibling keywords of a $ref (allowed in 3.1) override the target's.
                    if let Value::Object(res) = &mut resolved {
                        for (k, v) in map {
                            if k != "$ref" {
                                res.insert(
                                    k.clone(),
                                    self.inline_inner(v, stack, depth + 1, tally),
                                );
                            }
                        }
                    }
                    resolved
                } else {
                    let mut out = Map::with_capacity(map.len());
                    for (k, v) in map {
                        out.insert(k.clone(), self.inline_inner(v, stack, depth + 1, tally));
                    }
                    Value::Object(out)
                }
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| self.inline_inner(v, stack, depth + 1, tally))
                    .collect(),
            ),
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
