//! Experimental output schemas (docs/output-schemas.md), derived: one relaxed JSON Schema per
//! JSON action, describing `structuredContent` as the server unwraps it from Arcane's envelope.
//! Schema → schema and value → value; the server's presentation fits results to these schemas
//! (`src/present/output_schema.rs`).
//!
//! - [`unwrap_envelope`]: Arcane's body → `structuredContent` (the one implementation the
//!   presentation and the schemas share, so that what is declared is what is sent);
//! - [`output_schema`]: the relaxed, widened schema of one action; [`served_output_schema`]
//!   its form under a client profile.
//!
//! Schemas are relaxed on purpose (docs/output-schemas.md): Arcane does not always send what its document
//! declares, and a client may reject a result that does not match a declared schema, which
//! would turn a good call into an error. So a schema states the type of every field Arcane
//! declares and nothing a harmless divergence can break.

use serde_json::{Map, Value, json};

use crate::model::{Action, ResultKind, Widening};
use crate::policy::ClientProfile;
use crate::profile::FlatOutput;

/// Envelope members the unwrapped value does not carry: Huma's `$schema` link and Arcane's
/// `success` flag (always true on a 2xx answer).
const DROPPED_MEMBERS: [&str; 2] = ["$schema", "success"];

/// Deepest schema nesting relaxed; deeper parts become `{}` (any value). The catalog's schemas
/// are finite (cycles are cut when `$ref`s are inlined), this only bounds the recursion.
const MAX_SCHEMA_DEPTH: usize = 64;

// ---------------------------------------------------------------------------------------------
// Unwrapping
// ---------------------------------------------------------------------------------------------

/// Takes Arcane's answer out of its `{success, data, pagination}` envelope: the
/// `structuredContent` of a successful call (docs/output-format.md).
///
/// The contract, decided by the value alone (never by the action), which [`output_schema`]
/// mirrors:
/// 1. A body that is an object loses its `$schema` and `success` members (exactly those two).
///    - If it then has a `data` member, `data` is taken out and *lifted* (rule 2); every other
///      remaining member (`pagination`, `counts`, `warnings`, `groups`, `failedEnvironments`…)
///      is kept beside it, after the lifted fields. On a name clash the lifted field wins and
///      the envelope member is dropped (Arcane 2.8.0 has no such clash; a test checks it).
///    - Without `data`, the remaining members are the result (`{status: "UP"}` for health,
///      Docker's info fields, `{message}`…).
/// 2. Lifting a value: an object's fields go to the top level; an array goes under `items`;
///    anything else (string, number, boolean, null) goes under `value`.
/// 3. A body that is not an object (a bare array or value) is lifted as in rule 2.
///
/// The result is always an object. Nothing inside the value is touched: a nested `$schema` or
/// `success` stays.
pub fn unwrap_envelope(body: Value) -> Value {
    match body {
        Value::Object(mut map) => {
            for m in DROPPED_MEMBERS {
                map.shift_remove(m);
            }
            match map.shift_remove("data") {
                None => Value::Object(map),
                Some(data) => {
                    let mut out = lift(data);
                    for (k, v) in map {
                        out.entry(k).or_insert(v);
                    }
                    Value::Object(out)
                }
            }
        }
        other => Value::Object(lift(other)),
    }
}

fn lift(data: Value) -> Map<String, Value> {
    match data {
        Value::Object(m) => m,
        Value::Array(a) => {
            let mut m = Map::new();
            m.insert("items".into(), Value::Array(a));
            m
        }
        other => {
            let mut m = Map::new();
            m.insert("value".into(), other);
            m
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Schema generation
// ---------------------------------------------------------------------------------------------

/// The output schema of an action: the JSON Schema (2020-12, self-contained, no `$ref`) of its
/// `structuredContent` as produced by [`unwrap_envelope`], relaxed and widened.
///
/// `Some` only for actions the generic executor runs from a JSON operation (`kind == Json`
/// with a response schema); `None` for handlers, downloads, streams and empty answers.
///
/// The caller decides where it is declared: only on the individual surface, and **not** for
/// mutating actions in safe mode (they answer with a preview, not with this value).
///
/// Relaxed (docs/output-schemas.md): every field also accepts null; nothing is required; objects
/// accept unlisted fields; value constraints (enum, const, format, pattern, bounds, lengths,
/// item counts, content encodings…) are dropped; `oneOf` becomes `anyOf`; the root is always
/// `"type": "object"`. Only structural keywords (`type`, `properties`, `additionalProperties`
/// as a schema, `patternProperties`, `items`, `prefixItems`, `anyOf`, `allOf`) and
/// `title`/`description` are kept, so a constraint the document may add later cannot slip
/// through. Each [`Widening`] of the action makes the named fields accept its types too.
pub fn output_schema(action: &Action) -> Option<Value> {
    if action.output.kind != ResultKind::Json {
        return None;
    }
    let response = action.output.response_schema.as_ref()?;
    Some(root_schema(response, &action.output.widenings))
}

/// The output schema a tool declares under a client profile: [`output_schema`], or in the flat
/// profile its first-level form ([`FlatOutput`]).
pub fn served_output_schema(action: &Action, profile: ClientProfile) -> Option<Value> {
    let relaxed = output_schema(action)?;
    Some(match profile {
        ClientProfile::Standard => relaxed,
        ClientProfile::Flat => FlatOutput::new(&relaxed).schema().clone(),
    })
}

/// What a `data` schema lifts to (rule 2 of [`unwrap_envelope`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Object,
    Array,
    Other,
}

fn shape(schema: &Value) -> Shape {
    let types = declared_types(schema);
    let non_null: Vec<&str> = types
        .iter()
        .map(String::as_str)
        .filter(|t| *t != "null")
        .collect();
    match non_null.as_slice() {
        ["object"] => Shape::Object,
        ["array"] => Shape::Array,
        [] if schema.get("properties").is_some() => Shape::Object,
        [] if schema.get("items").is_some() => Shape::Array,
        _ => Shape::Other,
    }
}

/// The types a schema node declares (`type` as a string or a list), in order; empty when none.
pub fn declared_types(schema: &Value) -> Vec<String> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// An envelope: an object schema declaring `data` or `success` (what [`unwrap_envelope`]
/// treats specially). `$schema` alone does not make one; it is dropped either way.
fn is_envelope(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key("data") || p.contains_key("success"))
}

fn root_schema(response: &Value, widenings: &[Widening]) -> Value {
    let mut root = Map::new();
    root.insert("type".into(), json!("object"));
    let mut props = Map::new();
    if let Some(d) = response.get("description").and_then(Value::as_str) {
        root.insert("description".into(), json!(d));
    }

    let (data, members): (Option<&Value>, Vec<(&String, &Value)>) = if is_envelope(response) {
        let p = response.get("properties").and_then(Value::as_object);
        let data = p.and_then(|p| p.get("data"));
        let members = p
            .map(|p| {
                p.iter()
                    .filter(|(k, _)| k.as_str() != "data" && !DROPPED_MEMBERS.contains(&k.as_str()))
                    .collect()
            })
            .unwrap_or_default();
        (data, members)
    } else {
        // Not an envelope: the body itself is lifted (rule 3, or rule 1 without `data`).
        (Some(response), Vec::new())
    };

    if let Some(data) = data {
        match shape(data) {
            Shape::Object => {
                let relaxed = relax(data, &mut Vec::new(), widenings, 0);
                if let Value::Object(mut r) = relaxed {
                    if let Some(Value::Object(p)) = r.remove("properties") {
                        props.extend(p);
                    }
                    // A map-like `data` (`additionalProperties: {…}`) and combinators apply to
                    // the lifted fields, which now sit at the root.
                    for k in [
                        "additionalProperties",
                        "patternProperties",
                        "anyOf",
                        "allOf",
                    ] {
                        if let Some(v) = r.remove(k) {
                            root.insert(k.into(), v);
                        }
                    }
                    if !root.contains_key("description")
                        && let Some(d) = r.remove("description")
                    {
                        root.insert("description".into(), d);
                    }
                }
            }
            Shape::Array => {
                let mut path = vec!["items".to_string()];
                props.insert("items".into(), relax(data, &mut path, widenings, 0));
            }
            Shape::Other => {
                let mut path = vec!["value".to_string()];
                props.insert("value".into(), relax(data, &mut path, widenings, 0));
            }
        }
    }
    for (name, schema) in members {
        if props.contains_key(name) {
            continue; // the lifted field wins, as in unwrap_envelope
        }
        let mut path = vec![name.clone()];
        props.insert(name.clone(), relax(schema, &mut path, widenings, 0));
    }
    root.insert("properties".into(), Value::Object(props));
    Value::Object(root)
}

/// Whether a schema was left by the `$ref` inliner where it cut a cycle or a dangling
/// reference (`arcane_catalog::RefResolver`): its declared `type: object` is a guess, so the
/// relaxed schema accepts any value there.
fn is_cut(schema: &Map<String, Value>) -> bool {
    schema
        .get("description")
        .and_then(Value::as_str)
        .is_some_and(|d| {
            (d.starts_with("(recursive ") && d.ends_with("; cut)"))
                || d.starts_with("(unresolved reference ")
        })
}

/// Relaxes one schema node; `path` holds the property names from the root of
/// `structuredContent` down to this node (what [`Widening::under`] is matched against).
fn relax(schema: &Value, path: &mut Vec<String>, widenings: &[Widening], depth: usize) -> Value {
    let Value::Object(s) = schema else {
        // `true`, `false` or garbage: any value (a `false` schema would reject everything).
        return json!({});
    };
    if depth >= MAX_SCHEMA_DEPTH {
        return json!({});
    }
    let mut out = Map::new();
    for k in ["title", "description"] {
        if let Some(Value::String(t)) = s.get(k) {
            out.insert(k.into(), json!(t));
        }
    }
    if is_cut(s) {
        return Value::Object(out);
    }

    let mut types = declared_types(schema);
    if !types.is_empty() {
        if !types.iter().any(|t| t == "null") {
            types.push("null".into());
        }
        out.insert("type".into(), type_value(&types));
    }

    if let Some(Value::Object(p)) = s.get("properties") {
        let mut props = Map::new();
        for (name, ps) in p {
            if name == "$schema" {
                continue;
            }
            path.push(name.clone());
            props.insert(name.clone(), relax(ps, path, widenings, depth + 1));
            path.pop();
        }
        out.insert("properties".into(), Value::Object(props));
    }
    if let Some(ap @ Value::Object(_)) = s.get("additionalProperties") {
        out.insert(
            "additionalProperties".into(),
            relax(ap, path, widenings, depth + 1),
        );
    }
    if let Some(Value::Object(pp)) = s.get("patternProperties") {
        let relaxed: Map<String, Value> = pp
            .iter()
            .map(|(k, v)| (k.clone(), relax(v, path, widenings, depth + 1)))
            .collect();
        out.insert("patternProperties".into(), Value::Object(relaxed));
    }
    match s.get("items") {
        Some(items @ Value::Object(_)) => {
            out.insert("items".into(), relax(items, path, widenings, depth + 1));
        }
        // Draft-4 style tuple `items: [...]` is 2020-12's `prefixItems`.
        Some(Value::Array(tuple)) => {
            out.insert(
                "prefixItems".into(),
                relax_all(tuple, path, widenings, depth),
            );
        }
        _ => {}
    }
    if let Some(Value::Array(tuple)) = s.get("prefixItems") {
        out.insert(
            "prefixItems".into(),
            relax_all(tuple, path, widenings, depth),
        );
    }
    // oneOf is read as anyOf: with nulls and unlisted fields accepted, branches overlap, and
    // "exactly one" would reject values that fit several.
    let mut any_of: Vec<Value> = Vec::new();
    for k in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = s.get(k) {
            let relaxed = relax_all(branches, path, widenings, depth);
            if let Value::Array(r) = relaxed {
                if any_of.is_empty() {
                    any_of = r;
                } else {
                    // Both present: each must still hold, so keep the second as an allOf member.
                    let all = out.entry("allOf").or_insert_with(|| json!([]));
                    if let Value::Array(a) = all {
                        a.push(json!({ "anyOf": r }));
                    }
                }
            }
        }
    }
    if !any_of.is_empty() {
        // A branch list that no longer admits null would make the field non-nullable.
        any_of.push(json!({ "type": "null" }));
        out.insert("anyOf".into(), Value::Array(any_of));
    }
    if let Some(Value::Array(members)) = s.get("allOf") {
        let relaxed = relax_all(members, path, widenings, depth);
        match out.get_mut("allOf") {
            Some(Value::Array(a)) => {
                if let Value::Array(r) = relaxed {
                    a.extend(r);
                }
            }
            _ => {
                out.insert("allOf".into(), relaxed);
            }
        }
    }

    widen(&mut out, path, widenings);
    Value::Object(out)
}

fn relax_all(
    schemas: &[Value],
    path: &mut Vec<String>,
    widenings: &[Widening],
    depth: usize,
) -> Value {
    Value::Array(
        schemas
            .iter()
            .map(|b| relax(b, path, widenings, depth + 1))
            .collect(),
    )
}

fn type_value(types: &[String]) -> Value {
    if types.len() == 1 {
        json!(types[0])
    } else {
        json!(types)
    }
}

/// Applies the widenings whose field is the last name of `path` (and whose `under`, when set,
/// is one of the names before it).
fn widen(out: &mut Map<String, Value>, path: &[String], widenings: &[Widening]) {
    let Some((field, parents)) = path.split_last() else {
        return;
    };
    for w in widenings {
        if !w.fields.iter().any(|f| f == field) {
            continue;
        }
        if let Some(under) = &w.under
            && !parents.iter().any(|p| p == under)
        {
            continue;
        }
        let extra: Vec<String> = w
            .types
            .iter()
            .filter(|t| is_json_type_name(t))
            .cloned()
            .collect();
        if let Some(existing) = out.get("type") {
            let mut types = declared_types(&json!({ "type": existing }));
            for t in extra.iter().chain(std::iter::once(&"null".to_string())) {
                if !types.contains(t) {
                    types.push(t.clone());
                }
            }
            out.insert("type".into(), type_value(&types));
        } else if let Some(Value::Array(branches)) = out.get_mut("anyOf") {
            let mut types = extra.clone();
            types.push("null".into());
            branches.push(json!({ "type": types }));
        }
        // Neither `type` nor `anyOf`: the field already accepts any value.
    }
}

fn is_json_type_name(t: &str) -> bool {
    matches!(
        t,
        "null" | "boolean" | "object" | "array" | "number" | "string" | "integer"
    )
}
