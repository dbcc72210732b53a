//! Fitting results to the experimental output schemas (docs/output-schemas.md) this crate
//! derives ([`crate::output_schema`], of the value [`crate::unwrap_envelope`] takes out of
//! Arcane's envelope): [`OutputFitter`] holds every schema of a catalog with its validator
//! (compiled lazily, once); [`OutputFitter::fit`] replaces whatever does not fit by null and
//! returns [`Adjustment`]s, which the server's presentation writes as a note.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::model::Catalog;
use crate::output_schema::{declared_types, output_schema};
use crate::policy::ClientProfile;
use crate::profile::FlatOutput;

/// Validation rounds before [`OutputFitter::fit`] gives up on fine-grained repairs and replaces
/// the whole value by `{}` (which every generated root schema accepts). One round normally
/// suffices, because every field accepts null.
const MAX_FIT_ROUNDS: usize = 8;

/// Errors taken from one validation round; a pathological value cannot make a round unbounded.
const MAX_ERRORS_PER_ROUND: usize = 10_000;

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
