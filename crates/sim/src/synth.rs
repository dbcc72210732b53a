//! Deterministic values synthesized from JSON Schemas, and fitting stored values to a schema.

use serde_json::{Map, Value, json};

use crate::spec::Spec;

const MAX_DEPTH: usize = 8;

/// A stable 64-hex-digit identifier derived from `seed` (FNV-1a + splitmix64, four rounds).
pub fn hex_id(seed: &str) -> String {
    let mut out = String::with_capacity(64);
    for round in 0u64..4 {
        let mut h: u64 = 0xcbf29ce484222325 ^ round.wrapping_mul(0x9e3779b97f4a7c15);
        for b in seed.as_bytes() {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x100000001b3);
        }
        // splitmix64 finalizer, so that close seeds give unrelated IDs.
        h = h.wrapping_add(0x9e3779b97f4a7c15);
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d049bb133111eb);
        h ^= h >> 31;
        out.push_str(&format!("{h:016x}"));
    }
    out
}

/// A UUID-shaped ID from a seed.
pub fn uuid(seed: &str) -> String {
    let h = hex_id(seed);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The schema's type, the first non-null one when it lists several.
/// Whether a schema admits `null` (`type: [..., "null"]`, OpenAPI 3.0's `nullable`, or no type).
fn allows_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => schema.get("nullable") == Some(&Value::Bool(true)) || schema.get("type").is_none(),
    }
}

fn schema_type(schema: &Value) -> Option<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .or(Some("null")),
        _ => {
            if schema.get("properties").is_some() {
                Some("object")
            } else if schema.get("items").is_some() {
                Some("array")
            } else {
                None
            }
        }
    }
}

/// Synthesizes a value for `schema` (required fields only, realistic values chosen by the
/// property name and format). `name` is the property name, `path` a seed for IDs.
pub fn synth(spec: &Spec, schema: &Value, name: &str, path: &str) -> Value {
    synth_at(spec, schema, name, path, 0)
}

fn synth_at(spec: &Spec, schema: &Value, name: &str, path: &str, depth: usize) -> Value {
    let schema = spec.resolve(schema);
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(Value::Array(e)) = schema.get("enum")
        && let Some(first) = e.first()
    {
        return first.clone();
    }
    if let Some(d) = schema.get("default")
        && !d.is_null()
    {
        return d.clone();
    }
    match schema_type(schema) {
        Some("object") => {
            let mut obj = Map::new();
            if depth >= MAX_DEPTH {
                return Value::Object(obj);
            }
            let props = schema.get("properties").and_then(Value::as_object);
            if let (Some(req), Some(props)) =
                (schema.get("required").and_then(Value::as_array), props)
            {
                for r in req.iter().filter_map(Value::as_str) {
                    if let Some(ps) = props.get(r) {
                        let v = synth_at(spec, ps, r, &format!("{path}/{r}"), depth + 1);
                        obj.insert(r.to_string(), v);
                    }
                }
            }
            if let Some(props) = props
                && props.contains_key("success")
                && !obj.contains_key("success")
            {
                obj.insert("success".into(), Value::Bool(true));
            }
            Value::Object(obj)
        }
        Some("array") => {
            if depth >= MAX_DEPTH {
                return json!([]);
            }
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let n = min.max(1);
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            let singular = name.strip_suffix('s').unwrap_or(name);
            Value::Array(
                (0..n)
                    .map(|i| synth_at(spec, &items, singular, &format!("{path}/{i}"), depth + 1))
                    .collect(),
            )
        }
        Some("string") => Value::String(synth_string(schema, name, path)),
        Some("integer") => json!(synth_number(schema, name) as i64),
        Some("number") => json!(synth_number(schema, name)),
        Some("boolean") => Value::Bool(matches!(
            name,
            "success" | "enabled" | "connected" | "healthy" | "available" | "valid" | "ok"
        )),
        _ => Value::Null,
    }
}

fn synth_number(schema: &Value, name: &str) -> f64 {
    let n = name.to_ascii_lowercase();
    let v: f64 = if n.contains("port") {
        8080.0
    } else if n.contains("size") || n.contains("bytes") || n.contains("memory") {
        104_857_600.0
    } else if n == "created" || n.ends_with("at") || n.contains("time") {
        1_717_171_717.0
    } else if n.contains("percent") || n.contains("usage") {
        12.5
    } else if n.starts_with("total") || n.contains("count") || n.contains("replicas") {
        1.0
    } else if n.contains("status") || n.contains("code") {
        0.0
    } else {
        1.0
    };
    let mut v = if schema.get("type").and_then(Value::as_str) == Some("integer")
        || schema
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|f| f.starts_with("int"))
    {
        v.trunc()
    } else {
        v
    };
    if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
        v = v.max(min);
    }
    if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
        v = v.min(max);
    }
    v
}

fn synth_string(schema: &Value, name: &str, path: &str) -> String {
    let format = schema.get("format").and_then(Value::as_str).unwrap_or("");
    let n = name.to_ascii_lowercase();
    let mut s = match format {
        "date-time" => "2025-06-01T12:00:00Z".to_string(),
        "date" => "2025-06-01".to_string(),
        "uri" | "url" => "https://arcane.example.com/resource".to_string(),
        "ip" | "ipv4" => "172.18.0.2".to_string(),
        "ipv6" => "fd00::2".to_string(),
        "email" => "admin@example.com".to_string(),
        "uuid" => "3f1c2a7e-9b1d-4c55-8e2a-6d0f1b2c3d4e".to_string(),
        _ => {
            if n == "id" || n.ends_with("id") && !n.ends_with("valid") {
                hex_id(path)
            } else if n.ends_with("at")
                || n.contains("time")
                || n.contains("date")
                || n == "created"
            {
                "2025-06-01T12:00:00Z".to_string()
            } else if n.contains("digest") || n.contains("checksum") {
                format!("sha256:{}", hex_id(path))
            } else if n.contains("image") {
                "nginx:1.27-alpine".to_string()
            } else if n.contains("email") {
                "admin@example.com".to_string()
            } else if n.contains("url") || n.contains("uri") || n.contains("link") {
                "https://arcane.example.com/resource".to_string()
            } else if n.contains("version") {
                "2.8.0".to_string()
            } else if n == "status" || n == "state" {
                "running".to_string()
            } else if n.contains("message") || n.contains("detail") {
                "OK".to_string()
            } else if n.contains("username") || n == "user" || n == "owner" {
                "arcane".to_string()
            } else if n.contains("path") || n.contains("dir") || n.contains("mountpoint") {
                "/app/data".to_string()
            } else if n == "tag" {
                "latest".to_string()
            } else if n == "repo" || n.contains("repository") {
                "nginx".to_string()
            } else if n == "driver" || n == "scope" {
                "local".to_string()
            } else if n.contains("color") {
                "#3b82f6".to_string()
            } else if n.contains("hostname") || n == "host" {
                "arcane-host".to_string()
            } else if n.contains("token") || n.contains("key") || n.contains("secret") {
                "sim-token-0000".to_string()
            } else if n.contains("type") || n == "kind" || n == "mode" {
                "default".to_string()
            } else if n.contains("name") || n == "title" || n == "label" {
                "demo".to_string()
            } else if n.contains("description") || n == "comment" {
                "Synthesized by arcane-sim".to_string()
            } else if n == "os" || n.contains("platform") {
                "linux".to_string()
            } else if n.contains("arch") {
                "amd64".to_string()
            } else if n.contains("content") || n.contains("yaml") || n.contains("compose") {
                "services:\n  web:\n    image: nginx:1.27-alpine\n".to_string()
            } else {
                "example".to_string()
            }
        }
    };
    let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    while s.chars().count() < min {
        s.push('x');
    }
    s
}

/// Fits a stored value to a schema: unknown properties of closed objects are dropped, missing
/// required properties are synthesized, nested objects and arrays are fitted recursively.
/// Values of the wrong type are left alone (the caller decides).
pub fn conform(spec: &Spec, schema: &Value, value: Value, path: &str) -> Value {
    conform_at(spec, schema, value, path, 0)
}

fn conform_at(spec: &Spec, schema: &Value, value: Value, path: &str, depth: usize) -> Value {
    let schema = spec.resolve(schema);
    if depth > 24 {
        return value;
    }
    match value {
        Value::Object(obj) if schema_type(schema) == Some("object") => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            let mut out = Map::new();
            for (k, v) in obj {
                match props.and_then(|p| p.get(&k)) {
                    // A Go value field is never null on the wire: a stored null (an optional
                    // request field that was not given) is left out, then synthesized below when
                    // the schema requires it. Lists are the exception: nil slices answer `[]`.
                    Some(ps)
                        if v.is_null()
                            && !allows_null(spec.resolve(ps))
                            && schema_type(spec.resolve(ps)) != Some("array") => {}
                    Some(ps) => {
                        let v = conform_at(spec, ps, v, &format!("{path}/{k}"), depth + 1);
                        out.insert(k, v);
                    }
                    None => match additional {
                        Some(Value::Bool(false)) => {}
                        Some(s @ Value::Object(_)) => {
                            let v = conform_at(spec, s, v, &format!("{path}/{k}"), depth + 1);
                            out.insert(k, v);
                        }
                        _ => {
                            out.insert(k, v);
                        }
                    },
                }
            }
            if let (Some(req), Some(props)) =
                (schema.get("required").and_then(Value::as_array), props)
            {
                for r in req.iter().filter_map(Value::as_str) {
                    if !out.contains_key(r)
                        && let Some(ps) = props.get(r)
                    {
                        out.insert(
                            r.to_string(),
                            synth_at(spec, ps, r, &format!("{path}/{r}"), depth + 1),
                        );
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) if schema_type(schema) == Some("array") => {
            let item_schema = schema.get("items").cloned().unwrap_or(json!({}));
            Value::Array(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| {
                        conform_at(spec, &item_schema, v, &format!("{path}/{i}"), depth + 1)
                    })
                    .collect(),
            )
        }
        Value::Null if schema_type(schema) == Some("array") => {
            // Go's encoding/json v2 emits nil slices as [] (docs/arcane-wire.md#json-encoding).
            json!([])
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        Spec::from_value(json!({"paths": {}, "components": {"schemas": {
            "Item": {"type": "object", "additionalProperties": false,
                "properties": {"id": {"type": "string"}, "size": {"type": "integer", "format": "int64"},
                    "created": {"type": "string", "format": "date-time"},
                    "tags": {"type": ["array", "null"], "items": {"type": "string"}},
                    "opt": {"type": "string"}},
                "required": ["id", "size", "created", "tags"]}
        }}}))
        .unwrap()
    }

    #[test]
    fn synth_is_deterministic_and_complete() {
        let s = spec();
        let r = json!({"$ref": "#/components/schemas/Item"});
        let a = synth(&s, &r, "", "x");
        assert_eq!(a, synth(&s, &r, "", "x"));
        assert_eq!(a["id"].as_str().unwrap().len(), 64);
        assert!(a["size"].is_i64());
        assert_eq!(a["created"], "2025-06-01T12:00:00Z");
        assert_eq!(a["tags"], json!(["latest"]));
        assert!(a.get("opt").is_none());
    }

    #[test]
    fn conform_drops_unknown_and_fills_required() {
        let s = spec();
        let r = json!({"$ref": "#/components/schemas/Item"});
        let v = conform(
            &s,
            &r,
            json!({"id": "\u{1b}[31mx", "bogus": 1, "tags": null}),
            "",
        );
        assert_eq!(v["id"], "\u{1b}[31mx");
        assert!(v.get("bogus").is_none());
        assert_eq!(v["tags"], json!([]));
        assert!(v["size"].is_i64());
        // A null where the schema has no null: required, a value of the field's type; optional,
        // left out.
        let v = conform(&s, &r, json!({"id": "x", "size": null, "opt": null}), "");
        assert!(v["size"].is_i64(), "{v}");
        assert!(v.get("opt").is_none(), "{v}");
    }
}
