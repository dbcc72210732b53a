//! The flat client profile (`--client-profile flat`, docs/output-schemas.md "The flat
//! profile"): tool schemas and results kept at the first level, for clients that map only
//! top-level fields (Salesforce Agentforce). A profile changes shapes, never what a call does.
//!
//! - **Inputs** ([`input_schema`], [`ClientProfile::action_params`]): a parameter whose declared schema is not a
//!   primitive or an array of primitives is shown as a string holding JSON text; the executor
//!   decodes it before validating against the original schema, so errors read as in the
//!   standard profile.
//! - **Outputs** ([`FlatOutput`]): a plan derived from the relaxed output schema lifts nested
//!   fields to the top level with `_`-joined names, joins arrays of primitives, and carries
//!   anything deeper or dynamic as a JSON-text field; lists keep `items` as an array of flat
//!   objects plus a `count`.
//! - **The checker** ([`unmappable`]): what such a client can map, as code (the server runs it
//!   over its served tools).

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value, json};

use crate::model::Action;
use crate::policy::ClientProfile;

/// Most `_`-joined name segments of a lifted field (`hostConfig_restartPolicy_name` is 3); an
/// object that would lift deeper is carried as a JSON-text field.
pub const MAX_LIFT_DEPTH: usize = 3;

/// Most fields lifted from nested objects into one flat object (the result, or one element of
/// `items`); an object whose fields would exceed it is carried as one JSON-text field instead.
pub const MAX_FIELDS: usize = 120;

/// Separator of a joined array of primitives.
pub const JOIN_SEPARATOR: &str = ", ";

/// The field carrying the whole result as JSON text when its schema declares no field at all
/// (a map, or an empty object).
pub const WHOLE_FIELD: &str = "json";

/// The field counting the elements of `items`.
pub const COUNT_FIELD: &str = "count";

/// Most nesting an input example is written to.
const EXAMPLE_DEPTH: usize = 3;
/// Most properties an input example shows per object.
const EXAMPLE_PROPERTIES: usize = 3;

const PRIMITIVES: [&str; 4] = ["string", "number", "integer", "boolean"];

fn non_null_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) if t != "null" => vec![t.as_str()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect(),
        _ => Vec::new(),
    }
}

fn has_combinator(schema: &Value) -> bool {
    ["anyOf", "oneOf", "allOf", "not"]
        .iter()
        .any(|k| schema.get(*k).is_some())
}

/// `Some(type)` when the schema is one primitive type (possibly also null) and nothing else.
fn single_primitive(schema: &Value) -> Option<&str> {
    match non_null_types(schema).as_slice() {
        [t] if PRIMITIVES.contains(t) && !has_combinator(schema) => Some(t),
        _ => None,
    }
}

/// `Some(item type)` when the schema is an array of one primitive type.
fn primitive_array(schema: &Value) -> Option<&str> {
    match non_null_types(schema).as_slice() {
        ["array"] if !has_combinator(schema) => schema.get("items").and_then(single_primitive),
        _ => None,
    }
}

/// Whether a schema accepts a JSON string (so undecodable text may be meant as text).
fn accepts_string(schema: &Value) -> bool {
    let types = non_null_types(schema);
    if types.contains(&"string") {
        return true;
    }
    let branches = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .any(accepts_string);
    branches || (types.is_empty() && !has_combinator(schema) && schema.get("type").is_none())
}

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

/// Whether a parameter with this declared schema is a JSON-text string in the flat profile:
/// anything but a primitive or an array of primitives.
pub fn is_json_text_param(schema: &Value) -> bool {
    single_primitive(schema).is_none() && primitive_array(schema).is_none()
}

/// A tool's input schema in the flat profile. `shown` is the schema as the standard profile
/// shows it (descriptions trimmed), `full` the action's complete input schema (for examples).
/// Primitive parameters keep their schema with a single `type`; arrays of primitives stay
/// arrays; everything else becomes a string described as JSON text, with an example.
pub fn input_schema(shown: &Value, full: &Value) -> Value {
    let mut out = shown.clone();
    let full_props = full.get("properties").and_then(Value::as_object);
    if let Some(props) = out.get_mut("properties").and_then(Value::as_object_mut) {
        for (name, ps) in props.iter_mut() {
            let fs = full_props.and_then(|f| f.get(name)).unwrap_or(ps).clone();
            *ps = input_property(ps, &fs);
        }
    }
    out
}

fn input_property(shown: &Value, full: &Value) -> Value {
    let mut m = shown.as_object().cloned().unwrap_or_default();
    if let Some(t) = single_primitive(full) {
        m.insert("type".into(), json!(t));
        return Value::Object(m);
    }
    if let Some(t) = primitive_array(full) {
        m.insert("type".into(), json!("array"));
        let mut items = m
            .get("items")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        items.insert("type".into(), json!(t));
        m.insert("items".into(), Value::Object(items));
        return Value::Object(m);
    }
    let mut desc = shown
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_string();
    if !desc.is_empty() && !desc.ends_with('.') && !desc.ends_with('…') {
        desc.push('.');
    }
    if !desc.is_empty() {
        desc.push(' ');
    }
    desc.push_str(&json_text_hint(full));
    json!({"type": "string", "description": desc})
}

/// `JSON text of an object, e.g. {"Name":"web"}`: how a JSON-text parameter is described.
pub fn json_text_hint(schema: &Value) -> String {
    let example = serde_json::to_string(&example_of(schema, 0)).unwrap_or_default();
    format!("JSON text of {}, e.g. {example}", what(schema))
}

fn what(schema: &Value) -> &'static str {
    match non_null_types(schema).as_slice() {
        ["object"] => "an object",
        ["array"] => "an array",
        _ if schema.get("properties").is_some() => "an object",
        _ => "a JSON value",
    }
}

/// A small example value of a schema: its own example when it declares one, else required
/// properties first, at most [`EXAMPLE_PROPERTIES`] per object.
fn example_of(schema: &Value, depth: usize) -> Value {
    if let Some(Value::Array(xs)) = schema.get("examples")
        && let Some(x) = xs.first()
    {
        return x.clone();
    }
    if let Some(x) = schema.get("example") {
        return x.clone();
    }
    if let Some(Value::Array(options)) = schema.get("enum")
        && let Some(x) = options.first()
    {
        return x.clone();
    }
    for k in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema
            .get(k)
            .and_then(Value::as_array)
            .and_then(|b| b.first())
        {
            return example_of(first, depth + 1);
        }
    }
    let types = non_null_types(schema);
    let ty = types.first().copied().unwrap_or_else(|| {
        if schema.get("properties").is_some() {
            "object"
        } else {
            ""
        }
    });
    match ty {
        "object" => {
            let mut m = Map::new();
            if depth < EXAMPLE_DEPTH
                && let Some(props) = schema.get("properties").and_then(Value::as_object)
            {
                let required: Vec<&str> = schema
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut names: Vec<&String> = props
                    .keys()
                    .filter(|k| required.contains(&k.as_str()))
                    .collect();
                names.extend(props.keys().filter(|k| !required.contains(&k.as_str())));
                for n in names.into_iter().take(EXAMPLE_PROPERTIES) {
                    m.insert(n.clone(), example_of(&props[n], depth + 1));
                }
            } else if depth < EXAMPLE_DEPTH && schema.get("additionalProperties").is_some() {
                m.insert("key".into(), json!("value"));
            }
            Value::Object(m)
        }
        "array" if depth < EXAMPLE_DEPTH => match schema.get("items") {
            Some(items) => json!([example_of(items, depth + 1)]),
            None => json!([]),
        },
        "array" => json!([]),
        "integer" | "number" => json!(1),
        "boolean" => json!(true),
        "string" => json!("text"),
        _ => json!({}),
    }
}

/// A JSON-text parameter of a flat call that is not JSON (and whose schema takes no plain
/// text). Its `Display` is one problem line for the validation error text:
/// `/spec: must be JSON text of an object (…); e.g. {"Name":"text"}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("/{param}: must be JSON text of {what} ({detail}); e.g. {example}")]
pub struct JsonTextError {
    /// The parameter's name.
    pub param: String,
    what: &'static str,
    detail: String,
    example: String,
}

impl ClientProfile {
    /// The client's parameters in the shape of the action's own input schema, before
    /// validation: the standard profile's as they are; the flat profile's JSON-text parameters
    /// decoded ([`decode_params`]).
    pub fn action_params(
        self,
        action: &Action,
        params: Map<String, Value>,
    ) -> Result<Map<String, Value>, JsonTextError> {
        match self {
            ClientProfile::Standard => Ok(params),
            ClientProfile::Flat => decode_params(action, params),
        }
    }
}

/// Decodes the JSON-text parameters of a flat call into the values the action's schema
/// declares, before validation. A value that is not a string is left as is (a client may send
/// the object itself); text that is not JSON stays text where the schema accepts a string.
fn decode_params(
    action: &Action,
    mut params: Map<String, Value>,
) -> Result<Map<String, Value>, JsonTextError> {
    let Some(props) = action
        .request
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return Ok(params);
    };
    for (name, value) in params.iter_mut() {
        let Some(schema) = props.get(name) else {
            continue;
        };
        if !is_json_text_param(schema) {
            continue;
        }
        let Value::String(text) = value else {
            continue;
        };
        match serde_json::from_str::<Value>(text) {
            Ok(decoded) => *value = decoded,
            Err(_) if accepts_string(schema) => {}
            Err(e) => {
                return Err(JsonTextError {
                    param: name.clone(),
                    what: what(schema),
                    detail: e.to_string(),
                    example: serde_json::to_string(&example_of(schema, 0)).unwrap_or_default(),
                });
            }
        }
    }
    Ok(params)
}

/// The `params` property of the meta and dynamic tools in the flat profile: the action's
/// parameters as JSON text (the call parser already accepts that form).
pub fn params_property() -> Value {
    json!({
        "type": "string",
        "description": "The action's parameters as JSON text of an object, e.g. {\"containerId\":\"web-1\"}"
    })
}

// ---------------------------------------------------------------------------------------------
// Outputs
// ---------------------------------------------------------------------------------------------

/// How one flat field carries its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leaf {
    /// One primitive type, as is.
    Prim,
    /// Several primitive types (a widened field): the value as text.
    Text,
    /// An array of primitives, joined by [`JOIN_SEPARATOR`].
    Joined,
    /// Anything else: compact JSON text.
    Json,
}

#[derive(Debug, Clone)]
enum Node {
    Leaf {
        name: String,
        leaf: Leaf,
    },
    /// An object whose fields are lifted; its children's names are already joined.
    Lift(ObjPlan),
    /// The result's `items`: an array of flat objects.
    Items(Box<ObjPlan>),
}

#[derive(Debug, Clone, Default)]
struct ObjPlan {
    members: HashMap<String, Node>,
    /// The names of undeclared members start with this (`state_` for members of `state`).
    prefix: String,
}

/// Flat names and schemas of one object level (the result or one `items` element).
#[derive(Default)]
struct Level {
    props: Map<String, Value>,
    /// How many of `props` were lifted from nested objects.
    lifted: usize,
}

/// The flat form of one action's results: a plan derived from its relaxed output schema, and
/// the flat schema that plan produces.
#[derive(Debug, Clone)]
pub struct FlatOutput {
    root: ObjPlan,
    /// Every field the root declares (undeclared members never take one of these names).
    declared: BTreeSet<String>,
    item_declared: BTreeSet<String>,
    whole: bool,
    counted: bool,
    schema: Value,
}

impl FlatOutput {
    /// The plan of a relaxed root output schema ([`crate::output_schema`]).
    pub fn new(relaxed: &Value) -> FlatOutput {
        let mut scope = Level::default();
        let mut item_declared = BTreeSet::new();
        let empty = Map::new();
        let props = relaxed
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut root = ObjPlan::default();
        let mut counted = false;
        for (name, s) in props {
            if name == "items" && non_null_types(s) == ["array"] {
                counted = true;
            }
            if name == "items" && non_null_types(s) == ["array"] && !has_combinator(s) {
                let item = s.get("items").unwrap_or(&Value::Null);
                if liftable(item) {
                    let mut item_scope = Level::default();
                    let plan = plan_object(item, "", 0, &mut item_scope);
                    if !item_scope.props.is_empty() {
                        item_declared = item_scope.props.keys().cloned().collect();
                        let mut schema = json!({
                            "type": "array",
                            "items": {"type": "object", "properties": Value::Object(item_scope.props)}
                        });
                        copy_description(s, &mut schema);
                        scope.props.insert("items".into(), schema);
                        root.members
                            .insert("items".into(), Node::Items(Box::new(plan)));
                        continue;
                    }
                }
            }
            if name == "pagination" && liftable(s) {
                // Counts of a page go to the top level under their own names when none clashes.
                let mut sub = Level::default();
                let plan = plan_object(s, "", 1, &mut sub);
                let clash = sub
                    .props
                    .keys()
                    .any(|k| scope.props.contains_key(k) || props.contains_key(k));
                if !clash && !sub.props.is_empty() {
                    scope.props.extend(sub.props);
                    root.members.insert(name.clone(), Node::Lift(plan));
                    continue;
                }
            }
            let node = plan_member(name, s, "", 1, &mut scope);
            root.members.insert(name.clone(), node);
        }
        if counted && !scope.props.contains_key(COUNT_FIELD) {
            scope.props.insert(
                COUNT_FIELD.into(),
                json!({"type": "integer", "description": "How many elements items has"}),
            );
        } else {
            counted = false;
        }
        let whole = scope.props.is_empty();
        if whole {
            scope.props.insert(
                WHOLE_FIELD.into(),
                json!({"type": "string", "description": "The whole result as JSON text"}),
            );
        }
        let declared = scope.props.keys().cloned().collect();
        let mut schema = json!({"type": "object", "properties": Value::Object(scope.props)});
        copy_description(relaxed, &mut schema);
        FlatOutput {
            root,
            declared,
            item_declared,
            whole,
            counted,
            schema,
        }
    }

    /// The flat output schema: a root object of single-typed, first-level fields (nothing
    /// required, unlisted fields allowed, no value constraints).
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The flat form of a `structuredContent` that fits the relaxed schema (after fitting):
    /// it fits [`schema`](Self::schema). A null is omitted.
    pub fn flatten(&self, value: &Value) -> Value {
        let Value::Object(m) = value else {
            return json!({ WHOLE_FIELD: compact(value) });
        };
        if self.whole {
            return json!({ WHOLE_FIELD: compact(value) });
        }
        let mut out = Map::new();
        flatten_object(&self.root, m, &mut out, &self.declared, &self.item_declared);
        if self.counted
            && let Some(Value::Array(items)) = m.get("items")
        {
            let n = items.len();
            out.insert(COUNT_FIELD.into(), json!(n));
        }
        Value::Object(out)
    }
}

fn copy_description(from: &Value, to: &mut Value) {
    if let Some(d) = from.get("description").and_then(Value::as_str)
        && let Some(m) = to.as_object_mut()
    {
        m.insert("description".into(), json!(d));
    }
}

/// An object schema whose declared fields can be lifted: declared properties, no map of
/// further fields, no combinators.
fn liftable(s: &Value) -> bool {
    let types = non_null_types(s);
    let object = types == ["object"] || (types.is_empty() && s.get("type").is_none());
    object
        && !has_combinator(s)
        && s.get("additionalProperties").is_none_or(|a| !a.is_object())
        && s.get("patternProperties").is_none()
        && s.get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty())
}

fn join_name(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}_{name}")
    }
}

/// Plans the members of an object at `depth` (segments of its own name; the root is 0) whose
/// children's names start with `prefix`.
fn plan_object(s: &Value, prefix: &str, depth: usize, scope: &mut Level) -> ObjPlan {
    let mut plan = ObjPlan {
        members: HashMap::new(),
        prefix: prefix.to_string(),
    };
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (name, ps) in props {
            let node = plan_member(name, ps, prefix, depth + 1, scope);
            plan.members.insert(name.clone(), node);
        }
    }
    plan
}

/// Plans one member named `name` at `depth` segments.
fn plan_member(name: &str, s: &Value, prefix: &str, depth: usize, scope: &mut Level) -> Node {
    let flat_name = join_name(prefix, name);
    if liftable(s) && depth < MAX_LIFT_DEPTH {
        let mut sub = Level::default();
        let plan = plan_object(s, &flat_name, depth, &mut sub);
        let fits = !sub.props.is_empty()
            && scope.lifted + sub.props.len() <= MAX_FIELDS
            && !sub.props.keys().any(|k| scope.props.contains_key(k));
        if fits {
            scope.lifted += sub.props.len();
            scope.props.extend(sub.props);
            return Node::Lift(plan);
        }
    }
    let leaf = if single_primitive(s).is_some() {
        Leaf::Prim
    } else if !has_combinator(s)
        && non_null_types(s).len() > 1
        && non_null_types(s).iter().all(|t| PRIMITIVES.contains(t))
    {
        Leaf::Text
    } else if primitive_array(s).is_some() {
        Leaf::Joined
    } else {
        Leaf::Json
    };
    let mut field = match leaf {
        Leaf::Prim => json!({"type": single_primitive(s).unwrap_or("string")}),
        _ => json!({"type": "string"}),
    };
    let note = match leaf {
        Leaf::Prim => "",
        Leaf::Text => " (as text)",
        Leaf::Joined => " (values joined by \", \")",
        Leaf::Json => " (JSON text)",
    };
    let desc = s
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !desc.is_empty() || !note.is_empty() {
        let text = format!("{desc}{note}").trim().to_string();
        field["description"] = json!(text);
    }
    // A name taken already (a real field spelled like a lifted one) gets a numbered suffix.
    let mut unique = flat_name.clone();
    let mut n = 2;
    while scope.props.contains_key(&unique) {
        unique = format!("{flat_name}_{n}");
        n += 1;
    }
    scope.props.insert(unique.clone(), field);
    Node::Leaf { name: unique, leaf }
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

fn is_primitive(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

fn flatten_object(
    plan: &ObjPlan,
    m: &Map<String, Value>,
    out: &mut Map<String, Value>,
    declared: &BTreeSet<String>,
    item_declared: &BTreeSet<String>,
) {
    for (k, v) in m {
        match plan.members.get(k) {
            Some(Node::Leaf { name, leaf }) => emit(out, name, *leaf, v),
            Some(Node::Lift(sub)) => match v {
                Value::Object(o) => flatten_object(sub, o, out, declared, item_declared),
                Value::Null => {}
                other => undeclared(out, &join_name(&plan.prefix, k), other, declared),
            },
            Some(Node::Items(item)) => match v {
                Value::Array(xs) => {
                    let flat: Vec<Value> = xs
                        .iter()
                        .map(|x| {
                            let mut o = Map::new();
                            if let Value::Object(xm) = x {
                                flatten_object(item, xm, &mut o, item_declared, item_declared);
                            }
                            Value::Object(o)
                        })
                        .collect();
                    out.insert("items".into(), Value::Array(flat));
                }
                Value::Null => {}
                other => undeclared(out, "items", other, declared),
            },
            None => undeclared(out, &join_name(&plan.prefix, k), v, declared),
        }
    }
}

/// A member the schema does not declare: a primitive as is, anything else as JSON text, under
/// its joined name unless a declared field or an earlier one has it (the text still shows it).
fn undeclared(out: &mut Map<String, Value>, name: &str, v: &Value, declared: &BTreeSet<String>) {
    if v.is_null() || declared.contains(name) || out.contains_key(name) {
        return;
    }
    let value = if is_primitive(v) {
        v.clone()
    } else {
        Value::String(compact(v))
    };
    out.insert(name.to_string(), value);
}

fn emit(out: &mut Map<String, Value>, name: &str, leaf: Leaf, v: &Value) {
    let value = match (leaf, v) {
        (_, Value::Null) => return,
        (Leaf::Prim, v) if is_primitive(v) => v.clone(),
        (Leaf::Text | Leaf::Joined, Value::String(s)) => Value::String(s.clone()),
        (Leaf::Text, v) if is_primitive(v) => Value::String(v.to_string()),
        (Leaf::Joined, Value::Array(xs)) if xs.iter().all(|x| x.is_null() || is_primitive(x)) => {
            let parts: Vec<String> = xs
                .iter()
                .filter(|x| !x.is_null())
                .map(|x| match x {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            Value::String(parts.join(JOIN_SEPARATOR))
        }
        (_, v) => Value::String(compact(v)),
    };
    out.insert(name.to_string(), value);
}

// ---------------------------------------------------------------------------------------------
// The checker
// ---------------------------------------------------------------------------------------------

/// Which side of a tool a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Input,
    Output,
}

/// What a client that maps only the first level (Salesforce Agentforce's rules, in
/// docs/output-schemas.md) cannot map in a tool schema: one line per problem, empty when the
/// schema maps completely.
///
/// Mappable: a root `"type": "object"` with declared properties (an output must declare at
/// least one), each a single primitive type (string, number, integer, boolean), an array of
/// one primitive type, or an array of objects whose declared properties are all such
/// primitives. Not mappable: nested objects, arrays of objects below the first level, dynamic
/// objects (an object without declared properties, a map), and any type with an operator
/// (`anyOf`/`oneOf`/`allOf`/`not`, a list of types such as `["string", "null"]`, or no type).
pub fn unmappable(schema: &Value, side: Side) -> Vec<String> {
    let mut problems = Vec::new();
    if schema.get("type") != Some(&json!("object")) {
        problems.push("(root): not a single \"object\" type".to_string());
    }
    if has_combinator(schema) {
        problems.push("(root): a type with an operator (anyOf/oneOf/allOf/not)".to_string());
    }
    if schema
        .get("additionalProperties")
        .is_some_and(Value::is_object)
        || schema.get("patternProperties").is_some()
    {
        problems.push("(root): a dynamic object (a map of further fields)".to_string());
    }
    match schema.get("properties").and_then(Value::as_object) {
        Some(p) if !p.is_empty() => {
            for (name, s) in p {
                check_field(name, s, true, &mut problems);
            }
        }
        _ if side == Side::Input => {}
        _ => problems.push("(root): a dynamic object (no declared properties)".to_string()),
    }
    problems
}

fn check_field(path: &str, s: &Value, first_level: bool, problems: &mut Vec<String>) {
    if has_combinator(s) {
        problems.push(format!(
            "{path}: a type with an operator (anyOf/oneOf/allOf/not)"
        ));
        return;
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(_)) => {
            problems.push(format!("{path}: a union of types (\"or\")"));
            return;
        }
        _ => {
            problems.push(format!("{path}: no type (any value)"));
            return;
        }
    };
    match ty {
        t if PRIMITIVES.contains(&t) => {}
        "array" => {
            let Some(items) = s.get("items") else {
                problems.push(format!("{path}: an array of any value"));
                return;
            };
            if items.get("type").is_some_and(|t| t == "object") && !has_combinator(items) {
                if !first_level {
                    problems.push(format!("{path}: an array of objects below the first level"));
                    return;
                }
                match items.get("properties").and_then(Value::as_object) {
                    Some(p) if !p.is_empty() => {
                        for (name, ps) in p {
                            check_field(&format!("{path}[]/{name}"), ps, false, problems);
                        }
                    }
                    _ => problems.push(format!(
                        "{path}: an array of dynamic objects (no declared properties)"
                    )),
                }
            } else {
                let before = problems.len();
                check_field(&format!("{path}[]"), items, false, problems);
                if problems.len() == before && items.get("type") == Some(&json!("array")) {
                    problems.push(format!("{path}: an array of arrays"));
                }
            }
        }
        "object" => problems.push(format!(
            "{path}: {}",
            if s.get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| !p.is_empty())
            {
                "a nested object"
            } else {
                "a dynamic object (no declared properties)"
            }
        )),
        other => problems.push(format!("{path}: type {other:?} has no mapping")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_property_shapes() {
        let full = json!({"type": "object", "properties": {
            "id": {"type": ["string", "null"], "description": "ID"},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}},
            "spec": {"type": "object", "description": "The spec", "properties": {
                "Name": {"type": "string"}, "Mode": {"type": "object", "properties": {"Replicas": {"type": "integer"}}}
            }, "required": ["Name"]},
            "ports": {"type": "array", "items": {"type": "object", "properties": {"p": {"type": "integer"}}}},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
        }, "required": ["spec"], "additionalProperties": false});
        let flat = input_schema(&full, &full);
        let p = &flat["properties"];
        assert_eq!(p["id"]["type"], "string");
        assert_eq!(p["tags"]["type"], "array");
        assert_eq!(p["tags"]["items"]["type"], "string");
        assert_eq!(p["spec"]["type"], "string");
        let d = p["spec"]["description"].as_str().unwrap();
        assert!(
            d.starts_with("The spec. JSON text of an object, e.g. {\"Name\":\"text\""),
            "{d}"
        );
        assert_eq!(p["ports"]["type"], "string");
        assert_eq!(p["either"]["type"], "string");
        assert_eq!(flat["required"], json!(["spec"]));
        assert!(unmappable(&flat, Side::Input).is_empty());
        assert_eq!(
            unmappable(&full, Side::Input).len(),
            4, // `ports`, an array of objects at the first level, maps
            "{:?}",
            unmappable(&full, Side::Input)
        );
    }

    #[test]
    fn checker_follows_the_rules() {
        let ok = json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "array", "items": {"type": "integer"}},
            "items": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "boolean"}}}}
        }});
        assert!(unmappable(&ok, Side::Output).is_empty());
        for bad in [
            json!({"type": "object"}),
            json!({"type": "object", "properties": {}}),
            json!({"type": "object", "properties": {"p": {"type": "object"}}}),
            json!({"type": "object", "properties": {"p": {"type": "object", "properties": {}}}}),
            json!({"type": "object", "properties": {"p": {"type": "array", "items": {"type": "object"}}}}),
            json!({"type": "object", "properties": {"p": {"type": "array", "items": {"type": "object", "properties": {}}}}}),
            json!({"type": "object", "properties": {"p": {"type": ["string", "null"]}}}),
            json!({"type": "object", "properties": {"p": {"anyOf": [{"type": "string"}]}}}),
            json!({"type": "object", "properties": {"p": {"type": "array", "items": {"type": "object", "properties": {"q": {"type": "object", "properties": {"r": {"type": "string"}}}}}}}}),
        ] {
            assert!(!unmappable(&bad, Side::Output).is_empty(), "{bad}");
        }
    }
}
