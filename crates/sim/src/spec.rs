//! Loading an Arcane OpenAPI document and matching request paths against its operations.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// One segment of a path template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Lit(String),
    Param(String),
}

/// One operation of the loaded spec.
#[derive(Debug, Clone)]
pub struct Operation {
    /// Upper-case HTTP method.
    pub method: String,
    /// Path template as written in the spec, without the `/api` prefix.
    pub template: String,
    /// Template with parameter names erased (`/environments/{}/containers/{}`), used to key
    /// stateful handlers independently of the spec version's parameter names.
    pub shape: String,
    segs: Vec<Seg>,
    /// The operation object.
    pub op: Value,
}

impl Operation {
    /// The operation's `operationId`, if any.
    pub fn operation_id(&self) -> Option<&str> {
        self.op.get("operationId").and_then(Value::as_str)
    }
}

/// A loaded OpenAPI document.
#[derive(Debug)]
pub struct Spec {
    /// The whole document as JSON.
    pub doc: Value,
    /// The document serialized as JSON (what `GET /api/openapi.json` serves).
    pub json: bytes::Bytes,
    /// Every operation, in document order.
    pub ops: Vec<Operation>,
}

const METHODS: [&str; 7] = ["get", "put", "post", "delete", "patch", "head", "options"];

impl Spec {
    /// Reads a spec from a JSON or YAML file.
    pub fn load(path: &Path) -> Result<Spec> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read spec file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("invalid spec file {}", path.display()))
    }

    /// Parses a spec from JSON or YAML text.
    pub fn parse(text: &str) -> Result<Spec> {
        let doc: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(json_err) => {
                arcane_catalog::check_yaml(text, "the spec", &arcane_catalog::YAML_SPEC_FILE)
                    .map_err(anyhow::Error::new)?;
                yaml_serde::from_str(text).map_err(|yaml_err| {
                    anyhow::anyhow!("neither JSON ({json_err}) nor YAML ({yaml_err})")
                })?
            }
        };
        Self::from_value(doc)
    }

    /// Builds the operation table from a parsed document.
    pub fn from_value(doc: Value) -> Result<Spec> {
        let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
            bail!("the document has no `paths` object; is it an OpenAPI document?");
        };
        let mut ops = Vec::new();
        for (template, item) in paths {
            let Some(item) = item.as_object() else {
                continue;
            };
            for m in METHODS {
                if let Some(op) = item.get(m) {
                    let segs = split_template(template);
                    let shape = shape_of(&segs);
                    ops.push(Operation {
                        method: m.to_ascii_uppercase(),
                        template: template.clone(),
                        shape,
                        segs,
                        op: op.clone(),
                    });
                }
            }
        }
        let json = bytes::Bytes::from(serde_json::to_vec(&doc)?);
        Ok(Spec { doc, json, ops })
    }

    /// Finds the operation serving `method path` (path without `/api`, not decoded).
    /// Returns its index and the percent-decoded path parameters in template order.
    /// Literal segments win over parameters, left to right.
    pub fn find(&self, method: &str, path: &str) -> Option<(usize, Vec<(String, String)>)> {
        let (i, params) = self.find_segments(method, &split_path(path))?;
        Some((
            i,
            params
                .into_iter()
                .map(|(n, v)| (n, percent_decode(&v)))
                .collect(),
        ))
    }

    /// Like [`Spec::find`] on a path already split into segments; the parameters are the
    /// segment texts as given (the caller decides whether they are decoded).
    pub fn find_segments(
        &self,
        method: &str,
        parts: &[&str],
    ) -> Option<(usize, Vec<(String, String)>)> {
        let mut best: Option<(usize, Vec<bool>)> = None;
        for (i, op) in self.ops.iter().enumerate() {
            if op.method != method || op.segs.len() != parts.len() {
                continue;
            }
            let mut score = Vec::with_capacity(parts.len());
            let mut ok = true;
            for (seg, part) in op.segs.iter().zip(parts) {
                match seg {
                    Seg::Lit(l) => {
                        if l != part {
                            ok = false;
                            break;
                        }
                        score.push(true);
                    }
                    Seg::Param(_) => {
                        if part.is_empty() {
                            ok = false;
                            break;
                        }
                        score.push(false)
                    }
                }
            }
            if ok && best.as_ref().is_none_or(|(_, s)| score > *s) {
                best = Some((i, score));
            }
        }
        let (i, _) = best?;
        let params = self.ops[i]
            .segs
            .iter()
            .zip(parts)
            .filter_map(|(s, p)| match s {
                Seg::Param(n) => Some((n.clone(), p.to_string())),
                Seg::Lit(_) => None,
            })
            .collect();
        Some((i, params))
    }

    /// Whether any operation has this path (any method).
    pub fn path_exists(&self, path: &str) -> bool {
        let parts = split_path(path);
        self.ops.iter().any(|op| {
            op.segs.len() == parts.len()
                && op.segs.iter().zip(&parts).all(|(s, p)| match s {
                    Seg::Lit(l) => l == p,
                    Seg::Param(_) => !p.is_empty(),
                })
        })
    }

    /// Follows `$ref`s (local `#/...` pointers only) until a schema without one.
    pub fn resolve<'a>(&'a self, mut schema: &'a Value) -> &'a Value {
        for _ in 0..32 {
            match schema.get("$ref").and_then(Value::as_str) {
                Some(r) => match r.strip_prefix('#').and_then(|p| self.doc.pointer(p)) {
                    Some(target) => schema = target,
                    None => return schema,
                },
                None => return schema,
            }
        }
        schema
    }

    /// The first 2xx response of an operation: its status and JSON schema (if it declares one).
    pub fn success_response<'a>(&'a self, op: &'a Value) -> (u16, Option<&'a Value>) {
        let Some(responses) = op.get("responses").and_then(Value::as_object) else {
            return (200, None);
        };
        let mut codes: Vec<(&String, &Value)> = responses
            .iter()
            .filter(|(k, _)| k.starts_with('2') && k.len() == 3)
            .collect();
        codes.sort_by(|a, b| a.0.cmp(b.0));
        match codes.first() {
            Some((code, resp)) => {
                let resp = self.resolve(resp);
                let schema = resp
                    .get("content")
                    .and_then(|c| c.get("application/json"))
                    .and_then(|c| c.get("schema"));
                (code.parse().unwrap_or(200), schema)
            }
            None => (200, None),
        }
    }

    /// The JSON request body schema of an operation and whether the body is required.
    pub fn request_body<'a>(&'a self, op: &'a Value) -> Option<(&'a Value, bool)> {
        let rb = self.resolve(op.get("requestBody")?);
        let required = rb.get("required").and_then(Value::as_bool).unwrap_or(false);
        let schema = rb.get("content")?.get("application/json")?.get("schema")?;
        Some((schema, required))
    }
}

fn split_template(t: &str) -> Vec<Seg> {
    split_path(t)
        .into_iter()
        .map(|s| {
            if s.starts_with('{') && s.ends_with('}') {
                Seg::Param(s[1..s.len() - 1].to_string())
            } else {
                Seg::Lit(s.to_string())
            }
        })
        .collect()
}

fn shape_of(segs: &[Seg]) -> String {
    let mut out = String::new();
    for s in segs {
        out.push('/');
        match s {
            Seg::Lit(l) => out.push_str(l),
            Seg::Param(_) => out.push_str("{}"),
        }
    }
    out
}

/// Splits a path (without `/api`) into its segments.
pub fn split_path(p: &str) -> Vec<&str> {
    let p = p.strip_prefix('/').unwrap_or(p);
    let p = p.strip_suffix('/').unwrap_or(p);
    if p.is_empty() {
        Vec::new()
    } else {
        p.split('/').collect()
    }
}

/// Decodes `%XX` escapes (invalid escapes are kept as they are).
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Go's default escaping of a decoded URL path (`net/url`'s `escape(path, encodePath)`):
/// letters, digits, `-_.~` and `$&+,/:;=@` stay as they are, every other byte becomes `%XX`
/// (upper-case hex). A Go server keeps the raw path for routing exactly when the request's
/// path differs from this escaping of its decoded form.
pub fn go_escape_path(decoded: &str) -> String {
    let mut out = String::with_capacity(decoded.len());
    for b in decoded.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Parses a raw query string into decoded `(key, value)` pairs (`+` means space).
pub fn parse_query(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|s| !s.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (
                percent_decode(&k.replace('+', " ")),
                percent_decode(&v.replace('+', " ")),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_segments_win() {
        let spec = Spec::from_value(serde_json::json!({"paths": {
            "/environments/{id}/images/{imageId}": {"get": {}},
            "/environments/{id}/images/counts": {"get": {}},
        }}))
        .unwrap();
        let (i, p) = spec.find("GET", "/environments/0/images/counts").unwrap();
        assert_eq!(spec.ops[i].template, "/environments/{id}/images/counts");
        assert_eq!(p, vec![("id".to_string(), "0".to_string())]);
        let (i, p) = spec
            .find("GET", "/environments/0/images/ghcr.io%2Fa%2Fb%3A1")
            .unwrap();
        assert_eq!(spec.ops[i].shape, "/environments/{}/images/{}");
        assert_eq!(p[1].1, "ghcr.io/a/b:1");
        assert!(spec.find("POST", "/environments/0/images/counts").is_none());
    }

    #[test]
    fn go_default_escaping() {
        assert_eq!(go_escape_path("/images/sha256:ab"), "/images/sha256:ab");
        assert_eq!(go_escape_path("a b!?%é"), "a%20b%21%3F%25%C3%A9");
        // A request escaped like Go's default keeps decoded parameters; any other is raw.
        let raw = "/api/environments/0/containers/web%2D1/logs";
        assert_ne!(go_escape_path(&percent_decode(raw)), raw);
        let raw = "/api/environments/0/containers/my%20app";
        assert_eq!(go_escape_path(&percent_decode(raw)), raw);
    }

    #[test]
    fn decoding() {
        assert_eq!(percent_decode("a%20b%zz%4"), "a b%zz%4");
        assert_eq!(
            parse_query("a=1&b=x+y&c"),
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y".into()),
                ("c".into(), "".into())
            ]
        );
    }
}
