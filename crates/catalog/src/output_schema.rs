//! Experimental output schemas (docs/output-schemas.md): one relaxed JSON Schema per JSON action, describing
//! `structuredContent` as the server unwraps it from Arcane's envelope, and fitting of results
//! to it.
//!
//! The pieces, in the order the server uses them:
//! - [`unwrap_envelope`]: Arcane's body → `structuredContent` (the one implementation the
//!   executor and the schemas share, so that what is declared is what is sent);
//! - [`output_schema`]: the relaxed, widened schema of one action;
//! - [`OutputFitter`]: every schema of a catalog with its validator (compiled lazily, once);
//!   [`OutputFitter::fit`] replaces whatever does not fit by null and returns [`Adjustment`]s;
//! - [`note`]: the `Output schema` note the text block gains when something was adjusted.
//!
//! Schemas are relaxed on purpose (docs/output-schemas.md): Arcane does not always send what its document
//! declares, and a client may reject a result that does not match a declared schema, which
//! would turn a good call into an error. So a schema states the type of every field Arcane
//! declares and nothing a harmless divergence can break.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::surface::client_profile::FlatOutput;
use arcane_catalog::ClientProfile;
use arcane_catalog::{Action, Catalog, ResultKind, Widening};
use arcane_markdown::code_span;

/// Envelope members the unwrapped value does not carry: Huma's `$schema` link and Arcane's
/// `success` flag (always true on a 2xx answer).
const DROPPED_MEMBERS: [&str; 2] = ["$schema", "success"];

/// At most this many adjusted parts are listed in the note.
pub const NOTE_MAX_PARTS: usize = 20;

/// Each original value in the note is cut at this many bytes of JSON.
pub const NOTE_MAX_VALUE_BYTES: usize = 4000;

/// Validation rounds before [`OutputFitter::fit`] gives up on fine-grained repairs and replaces
/// the whole value by `{}` (which every generated root schema accepts). One round normally
/// suffices, because every field accepts null.
const MAX_FIT_ROUNDS: usize = 8;

/// Errors taken from one validation round; a pathological value cannot make a round unbounded.
const MAX_ERRORS_PER_ROUND: usize = 10_000;

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
    if action.kind != ResultKind::Json {
        return None;
    }
    let response = action.response_schema.as_ref()?;
    Some(root_schema(response, &action.widenings))
}

/// The output schema a tool declares under a client profile: [`output_schema`], or in the flat
/// profile its first-level form (`crate::surface::client_profile::FlatOutput`).
pub fn served_output_schema(action: &Action, profile: ClientProfile) -> Option<Value> {
    let relaxed = output_schema(action)?;
    Some(match profile {
        ClientProfile::Standard => relaxed,
        ClientProfile::Flat => crate::surface::client_profile::FlatOutput::new(&relaxed)
            .schema()
            .clone(),
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

// ---------------------------------------------------------------------------------------------
// Fitting
// ---------------------------------------------------------------------------------------------

/// One part of a result that did not fit the output schema and was sent as null.
#[derive(Debug, Clone, PartialEq)]
pub struct Adjustment {
    /// JSON Pointer (RFC 6901) of the part inside `structuredContent`; `""` is the whole value.
    pub pointer: String,
    /// What Arcane sent there (after unwrapping).
    pub original: Value,
    /// What the schema accepts there, e.g. `integer or null`.
    pub expected: String,
}

struct Entry {
    schema: Value,
    /// Compiled on first use: compiling every schema of a catalog up front costs more than a
    /// startup should (see docs/output-schemas.md), and most actions are never called.
    validator: OnceLock<Option<jsonschema::Validator>>,
    /// The flat profile: the plan that turns a fitted value into its flat form, and the
    /// validator of the flat schema (what is declared and checked last).
    flat: Option<(FlatOutput, OnceLock<Option<jsonschema::Validator>>)>,
}

fn compile(schema: &Value, action_id: &str) -> Option<jsonschema::Validator> {
    match jsonschema::draft202012::new(schema) {
        Ok(v) => Some(v),
        Err(e) => {
            // Generated schemas always compile (tested); never fail a call over it.
            tracing::warn!(action = action_id, error = %e, "output schema does not compile; results are not checked");
            None
        }
    }
}

impl Entry {
    fn validator(&self, action_id: &str) -> Option<&jsonschema::Validator> {
        self.validator
            .get_or_init(|| compile(&self.schema, action_id))
            .as_ref()
    }

    /// The schema the tool declares.
    fn served(&self) -> &Value {
        match &self.flat {
            Some((f, _)) => f.schema(),
            None => &self.schema,
        }
    }

    fn flat_validator(&self, action_id: &str) -> Option<&jsonschema::Validator> {
        let (f, v) = self.flat.as_ref()?;
        v.get_or_init(|| compile(f.schema(), action_id)).as_ref()
    }
}

/// Every output schema of one catalog, with a validator per action compiled lazily (once, on
/// first use, thread-safe). Build one per catalog snapshot; it is immutable afterwards.
pub struct OutputFitter {
    entries: HashMap<String, Entry>,
}

impl OutputFitter {
    /// Generates the output schema of every action of `catalog` that has one.
    pub fn new(catalog: &Catalog) -> OutputFitter {
        OutputFitter::for_profile(catalog, ClientProfile::Standard)
    }

    /// [`new`](Self::new) under a client profile: in the flat profile, [`fit`](Self::fit) also
    /// turns the fitted value into its flat form, and [`schema`](Self::schema) is the flat one.
    pub fn for_profile(catalog: &Catalog, profile: ClientProfile) -> OutputFitter {
        let entries = catalog
            .actions
            .iter()
            .filter_map(|a| {
                output_schema(a).map(|schema| {
                    let flat = (profile == ClientProfile::Flat)
                        .then(|| (FlatOutput::new(&schema), OnceLock::new()));
                    (
                        a.id.clone(),
                        Entry {
                            schema,
                            validator: OnceLock::new(),
                            flat,
                        },
                    )
                })
            })
            .collect();
        OutputFitter { entries }
    }

    /// The output schema an action's tool declares (by canonical ID), if it has one.
    pub fn schema(&self, action_id: &str) -> Option<&Value> {
        self.entries.get(action_id).map(Entry::served)
    }

    /// IDs of the actions that have an output schema, sorted.
    pub fn action_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.entries.keys().map(String::as_str).collect();
        ids.sort_unstable();
        ids
    }

    /// How many actions have an output schema.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no action has an output schema.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Compiles every validator now (for tests and for an operator who prefers to pay at
    /// startup); returns the IDs whose schema did not compile.
    pub fn compile_all(&self) -> Vec<String> {
        let mut failed: Vec<String> = self
            .entries
            .iter()
            .filter(|(id, e)| e.validator(id).is_none())
            .map(|(id, _)| id.clone())
            .collect();
        failed.sort();
        failed
    }

    /// Fits `value` (an unwrapped `structuredContent`) to the action's output schema: every part
    /// that does not fit is replaced by null, the smallest enclosing part that makes the value
    /// valid (the instance locations the validator reports). Returns what was replaced; empty
    /// when the value fitted, or when the action has no output schema.
    ///
    /// Logs one `warn` naming the action and the adjusted pointers when anything was adjusted,
    /// so the caller only adds [`note`] to the text block.
    pub fn fit(&self, action_id: &str, value: &mut Value) -> Vec<Adjustment> {
        let adjustments = self.fit_quietly(action_id, value);
        if !adjustments.is_empty() {
            let pointers: Vec<&str> = adjustments.iter().map(|a| a.pointer.as_str()).collect();
            tracing::warn!(
                action = action_id,
                pointers = ?pointers,
                "result did not fit the output schema; those parts are sent as null (left out in the flat profile)"
            );
        }
        adjustments
    }

    /// What [`fit`](Self::fit) would adjust, without changing `value` or logging: for the
    /// validator mode of the end-to-end tests, which checks results the server already sent.
    pub fn check(&self, action_id: &str, value: &Value) -> Vec<Adjustment> {
        let Some(entry) = self.entries.get(action_id) else {
            return Vec::new();
        };
        let validator = match &entry.flat {
            Some(_) => entry.flat_validator(action_id),
            None => entry.validator(action_id),
        };
        let Some(validator) = validator else {
            return Vec::new();
        };
        if validator.is_valid(value) {
            return Vec::new();
        }
        let mut copy = value.clone();
        match &entry.flat {
            Some(_) => drop_invalid(validator, &mut copy),
            None => fit_with(validator, &entry.schema, &mut copy),
        }
    }

    /// [`fit`](Self::fit) without the log line.
    pub fn fit_quietly(&self, action_id: &str, value: &mut Value) -> Vec<Adjustment> {
        let Some(entry) = self.entries.get(action_id) else {
            return Vec::new();
        };
        let mut adjusted = match entry.validator(action_id) {
            Some(validator) => fit_with(validator, &entry.schema, value),
            None => Vec::new(),
        };
        if let Some((plan, _)) = &entry.flat {
            // The text was rendered from Arcane's value and the note's pointers name parts of
            // it; only structuredContent takes the flat form, which fits the flat schema by
            // construction. Checked anyway, so a planning mistake cannot reach a client.
            *value = plan.flatten(value);
            if let Some(v) = entry.flat_validator(action_id)
                && !v.is_valid(value)
            {
                adjusted.extend(drop_invalid(v, value));
            }
        }
        adjusted
    }
}

/// The flat profile's last resort: drops every field of a flat value that does not fit its
/// schema (nulls do not fit single types), bounded; the whole value becomes `{}` if that fails.
fn drop_invalid(validator: &jsonschema::Validator, value: &mut Value) -> Vec<Adjustment> {
    let snapshot = value.clone();
    let mut dropped: Vec<Adjustment> = Vec::new();
    for _round in 0..MAX_FIT_ROUNDS {
        let pointers: BTreeSet<String> = validator
            .iter_errors(value)
            .take(MAX_ERRORS_PER_ROUND)
            .map(|e| e.instance_path().as_str().to_string())
            .collect();
        if pointers.is_empty() {
            return dropped;
        }
        for p in pointers.iter().rev() {
            let parent = parent_pointer(p);
            let key = p[parent.len()..]
                .trim_start_matches('/')
                .replace("~1", "/")
                .replace("~0", "~");
            let removed = match value.pointer_mut(parent) {
                Some(Value::Object(m)) if !p.is_empty() => m.shift_remove(&key).is_some(),
                Some(Value::Array(a)) if !p.is_empty() => match key.parse::<usize>() {
                    Ok(i) if i < a.len() => {
                        a[i] = json!({});
                        true
                    }
                    _ => false,
                },
                _ => false,
            };
            if removed {
                dropped.push(Adjustment {
                    original: snapshot.pointer(p).cloned().unwrap_or(Value::Null),
                    pointer: p.clone(),
                    expected: "a value that fits the flat schema".into(),
                });
            }
        }
    }
    if !validator.is_valid(value) {
        *value = json!({});
        dropped = vec![Adjustment {
            pointer: String::new(),
            original: snapshot,
            expected: "object".into(),
        }];
    }
    dropped
}

/// Replaces non-conforming parts of `value` by null until it validates (bounded).
fn fit_with(
    validator: &jsonschema::Validator,
    schema: &Value,
    value: &mut Value,
) -> Vec<Adjustment> {
    if validator.is_valid(value) {
        return Vec::new();
    }
    // Originals come from the value as Arcane sent it: nulling only ever replaces parts, so a
    // pointer means the same in the snapshot as in the value being repaired.
    let snapshot = value.clone();
    let mut adjusted: BTreeMap<String, String> = BTreeMap::new();

    for _round in 0..MAX_FIT_ROUNDS {
        let errors: Vec<(String, String)> = validator
            .iter_errors(value)
            .take(MAX_ERRORS_PER_ROUND)
            .map(|e| {
                (
                    e.instance_path().as_str().to_string(),
                    e.schema_path().as_str().to_string(),
                )
            })
            .collect();
        if errors.is_empty() {
            break;
        }
        // Shallowest first, so that a part inside one already being replaced is skipped.
        let mut errors = errors;
        errors.sort_by(|a, b| a.0.len().cmp(&b.0.len()).then_with(|| a.0.cmp(&b.0)));
        let mut this_round: Vec<String> = Vec::new();
        for (pointer, schema_path) in errors {
            let mut pointer = pointer;
            let mut expected = describe(
                schema
                    .pointer(parent_pointer(&schema_path))
                    .unwrap_or(&Value::Null),
            );
            // Null is already there and still rejected (only possible at the root or for a
            // hand-made schema): move up to the enclosing part.
            while !pointer.is_empty() && value.pointer(&pointer).is_none_or(Value::is_null) {
                pointer = parent_pointer(&pointer).to_string();
                expected = "a value that fits the schema".into();
            }
            if this_round.iter().any(|p| is_within(&pointer, p)) {
                continue;
            }
            if pointer.is_empty() {
                // The root must stay an object (MCP); `{}` fits every generated root schema.
                *value = json!({});
                expected = "object".into();
            } else if let Some(slot) = value.pointer_mut(&pointer) {
                *slot = Value::Null;
            } else {
                continue;
            }
            this_round.push(pointer.clone());
            adjusted.retain(|p, _| !is_within(p, &pointer));
            adjusted.insert(pointer, expected);
        }
        if validator.is_valid(value) {
            break;
        }
    }
    if !validator.is_valid(value) {
        *value = json!({});
        adjusted.clear();
        adjusted.insert(String::new(), "object".into());
    }
    adjusted
        .into_iter()
        .map(|(pointer, expected)| Adjustment {
            original: snapshot.pointer(&pointer).cloned().unwrap_or(Value::Null),
            pointer,
            expected,
        })
        .collect()
}

/// `p` is `ancestor` or lies inside it (JSON Pointers).
fn is_within(p: &str, ancestor: &str) -> bool {
    ancestor.is_empty()
        || p == ancestor
        || (p.starts_with(ancestor) && p.as_bytes().get(ancestor.len()) == Some(&b'/'))
}

fn parent_pointer(p: &str) -> &str {
    p.rfind('/').map_or("", |i| &p[..i])
}

/// What a schema node accepts, for people: `integer or null`, `object, string or null`.
fn describe(schema: &Value) -> String {
    let mut types: Vec<String> = Vec::new();
    collect_types(schema, &mut types, 0);
    if types.is_empty() {
        return "any value".into();
    }
    // null last, the rest in first-seen order.
    if let Some(i) = types.iter().position(|t| t == "null") {
        let n = types.remove(i);
        types.push(n);
    }
    match types.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => "any value".into(),
    }
}

fn collect_types(schema: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > 8 {
        return;
    }
    for t in declared_types(schema) {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    if let Some(Value::Array(branches)) = schema.get("anyOf") {
        for b in branches {
            collect_types(b, out, depth + 1);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The note, the report
// ---------------------------------------------------------------------------------------------

/// The `Output schema` note appended to the text block when [`OutputFitter::fit`] adjusted
/// something (empty string when nothing was): the JSON Pointer of each adjusted part and
/// Arcane's original value there, at most [`NOTE_MAX_PARTS`] parts (then how many more), each
/// value's JSON cut at [`NOTE_MAX_VALUE_BYTES`] bytes (saying so).
///
/// Pointers and values are written as code spans with a fence longer than any backtick run
/// inside, so nothing in them forms Markdown; the server's final pass over the text (docs/escaping.md:
/// control characters, bidi controls…) still applies to it.
pub fn note(adjustments: &[Adjustment]) -> String {
    if adjustments.is_empty() {
        return String::new();
    }
    let mut s = String::from("**Output schema**\n");
    let _ = writeln!(
        s,
        "{} part(s) of Arcane's answer did not fit this action's output schema; Arcane's original values:",
        adjustments.len()
    );
    for a in adjustments.iter().take(NOTE_MAX_PARTS) {
        let (json, cut) = cut_json(&a.original, NOTE_MAX_VALUE_BYTES);
        let pointer = if a.pointer.is_empty() {
            "(the whole value)".to_string()
        } else {
            code_span(&a.pointer)
        };
        let _ = write!(
            s,
            "- {pointer} (expected {}): {}",
            a.expected,
            code_span(&json)
        );
        if let Some(total) = cut {
            let _ = write!(s, " (cut at {NOTE_MAX_VALUE_BYTES} of {total} bytes)");
        }
        s.push('\n');
    }
    if adjustments.len() > NOTE_MAX_PARTS {
        let _ = writeln!(
            s,
            "- … and {} more part(s) not listed.",
            adjustments.len() - NOTE_MAX_PARTS
        );
    }
    s
}

/// Compact JSON of `v`, cut at `max` bytes on a character boundary; `Some(total)` when cut.
pub fn cut_json(v: &Value, max: usize) -> (String, Option<usize>) {
    let json = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
    if json.len() <= max {
        return (json, None);
    }
    let total = json.len();
    let mut end = max;
    while !json.is_char_boundary(end) {
        end -= 1;
    }
    (format!("{}…", &json[..end]), Some(total))
}
