//! Spec parsing: Arcane's OpenAPI document as JSON (YAML documents are converted), and the
//! inlining of its `$ref`s. Where the document comes from (a file, Arcane, a cache) is the
//! server's business.

use std::path::{Path, PathBuf};

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
