//! How an action's change is taken back, or why it cannot be (overlay `undo`, docs/undo.md):
//! the inverse as data — the action that takes it back, the read that captures the state
//! before the call, and where each of the inverse's parameters comes from — read from the
//! overlays and filled for one call (`undo_check.rs` checks them against the catalog).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How one action's change is taken back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Undo {
    /// Another call takes it back.
    By(Inverse),
    /// Nothing lasting changes (a restart, a test): what stays as it was.
    Nothing(String),
    /// It cannot be undone: what is lost, in a person's words.
    Never(String),
}

/// The call that takes a change back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Inverse {
    /// The action that takes it back.
    pub action: String,
    /// A read run before the call, with the call's parameters by name: the state to put back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<String>,
    /// Where each parameter of the inverse comes from; a parameter not named here is the
    /// call's own of the same name. The key `*` stands for every parameter the call gave that
    /// no other key names, `*` in its source being that parameter's name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, Source>,
}

/// The overlay's `undo` entry, as written: exactly one of `by`, `nothing` and `never`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UndoOverlay {
    pub by: Option<String>,
    pub capture: Option<String>,
    #[serde(default)]
    pub params: BTreeMap<String, Value>,
    pub nothing: Option<String>,
    pub never: Option<String>,
}

impl UndoOverlay {
    /// The entry read, or what is wrong with it.
    pub fn read(&self) -> Result<Undo, String> {
        let extra = self.capture.is_some() || !self.params.is_empty();
        match (&self.by, &self.nothing, &self.never) {
            (Some(by), None, None) => {
                let params = self
                    .params
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), Source::read(v)?)))
                    .collect::<Result<_, String>>()?;
                Ok(Undo::By(Inverse {
                    action: by.clone(),
                    capture: self.capture.clone(),
                    params,
                }))
            }
            (None, Some(why), None) if !extra => Ok(Undo::Nothing(why.clone())),
            (None, None, Some(why)) if !extra => Ok(Undo::Never(why.clone())),
            (None, None, None) => Err("says neither `by`, `nothing` nor `never`".into()),
            _ if extra && self.by.is_none() => {
                Err("`capture` and `params` belong to `by`, not `nothing` or `never`".into())
            }
            _ => Err("says more than one of `by`, `nothing` and `never`".into()),
        }
    }
}

/// Where a value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// `call.NAME`, `capture.PATH`, `result.PATH`.
    Ref(Ref),
    /// `!REF`: the negation of a boolean.
    Not(Ref),
    /// A string with `{REF}` parts: `"{call.repository}:{call.tag}"`.
    Template(Vec<Part>),
    /// A map whose leaves are sources.
    Map(BTreeMap<String, Source>),
    /// Anything else, as written.
    Literal(Value),
}

/// A piece of a template.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Ref(Ref),
}

/// What a reference reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The call's own arguments.
    Call,
    /// The capture's answer (as a result's `structuredContent`).
    Capture,
    /// The call's answer (as a result's `structuredContent`).
    Result,
}

/// A dotted path in one of the three [`Origin`]s.
#[derive(Debug, Clone, PartialEq)]
pub struct Ref {
    pub origin: Origin,
    pub steps: Vec<Step>,
}

/// One step of a path: a field, or the element of a list whose field equals a value
/// (`items[id=call.id]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub field: String,
    pub select: Option<(String, Pick)>,
}

/// What a selector compares with.
#[derive(Debug, Clone, PartialEq)]
pub enum Pick {
    /// A call argument (`call.NAME`).
    Call(String),
    /// A literal string.
    Text(String),
    /// The name of the parameter a `*` key stands for.
    Star,
}

impl Ref {
    fn read(text: &str) -> Option<Result<Ref, String>> {
        let (origin, rest) = [
            ("call.", Origin::Call),
            ("capture.", Origin::Capture),
            ("result.", Origin::Result),
        ]
        .into_iter()
        .find_map(|(p, o)| text.strip_prefix(p).map(|r| (o, r)))?;
        Some(Self::steps(rest).map(|steps| Ref { origin, steps }))
    }

    fn steps(path: &str) -> Result<Vec<Step>, String> {
        let mut steps = Vec::new();
        let mut rest = path;
        while !rest.is_empty() {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            let field = &rest[..end];
            // `*`: the name of the parameter the `*` key stands for (`capture.*`).
            if field != "*" && !valid_name(field) {
                return Err(format!("{path:?}: {field:?} is not a field name"));
            }
            rest = &rest[end..];
            let mut select = None;
            if let Some(inner) = rest.strip_prefix('[') {
                let close = inner
                    .find(']')
                    .ok_or_else(|| format!("{path:?}: a `[` without its `]`"))?;
                let (key, value) = inner[..close]
                    .split_once('=')
                    .ok_or_else(|| format!("{path:?}: a selector is [FIELD=VALUE]"))?;
                if !valid_name(key) {
                    return Err(format!("{path:?}: {key:?} is not a field name"));
                }
                let pick = if value == "*" {
                    Pick::Star
                } else if let Some(name) = value.strip_prefix("call.") {
                    Pick::Call(name.to_string())
                } else {
                    Pick::Text(value.to_string())
                };
                select = Some((key.to_string(), pick));
                rest = &inner[close + 1..];
            }
            match rest.strip_prefix('.') {
                Some(r) if !r.is_empty() => rest = r,
                Some(_) => return Err(format!("{path:?} ends with a dot")),
                None if rest.is_empty() => {}
                None => return Err(format!("{path:?}: {rest:?} after a selector")),
            }
            steps.push(Step {
                field: field.to_string(),
                select,
            });
        }
        if steps.is_empty() {
            return Err("an empty path".into());
        }
        Ok(steps)
    }

    pub(crate) fn written(&self) -> String {
        let origin = match self.origin {
            Origin::Call => "call",
            Origin::Capture => "capture",
            Origin::Result => "result",
        };
        let mut out = origin.to_string();
        for s in &self.steps {
            out.push('.');
            out.push_str(&s.field);
            if let Some((key, pick)) = &s.select {
                let value = match pick {
                    Pick::Call(n) => format!("call.{n}"),
                    Pick::Text(t) => t.clone(),
                    Pick::Star => "*".into(),
                };
                out.push_str(&format!("[{key}={value}]"));
            }
        }
        out
    }

    /// The call argument a `call.` reference names (its first step).
    pub(crate) fn call_param(&self) -> Option<&str> {
        (self.origin == Origin::Call).then(|| self.steps[0].field.as_str())
    }

    /// The call arguments this reference's selectors read.
    pub(crate) fn picked_params(&self) -> impl Iterator<Item = &str> {
        self.steps.iter().filter_map(|s| match &s.select {
            Some((_, Pick::Call(n))) => Some(n.as_str()),
            _ => None,
        })
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl Source {
    /// A value as an overlay writes it.
    pub fn read(v: &Value) -> Result<Source, String> {
        match v {
            Value::String(s) => {
                if let Some(r) = s.strip_prefix('!') {
                    return match Ref::read(r) {
                        Some(r) => Ok(Source::Not(r?)),
                        None => Err(format!("{s:?}: `!` negates a reference (`!call.NAME`)")),
                    };
                }
                if let Some(r) = Ref::read(s) {
                    return Ok(Source::Ref(r?));
                }
                if s.contains('{') {
                    return Self::template(s);
                }
                Ok(Source::Literal(v.clone()))
            }
            Value::Object(m) => Ok(Source::Map(
                m.iter()
                    .map(|(k, v)| Ok((k.clone(), Source::read(v)?)))
                    .collect::<Result<_, String>>()?,
            )),
            _ => Ok(Source::Literal(v.clone())),
        }
    }

    fn template(s: &str) -> Result<Source, String> {
        let mut parts = Vec::new();
        let mut rest = s;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            }
            let close = rest[open..]
                .find('}')
                .ok_or_else(|| format!("{s:?}: a `{{` without its `}}`"))?;
            let inner = &rest[open + 1..open + close];
            match Ref::read(inner) {
                Some(r) => parts.push(Part::Ref(r?)),
                None => return Err(format!("{s:?}: {{{inner}}} is not a reference")),
            }
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Source::Template(parts))
    }

    /// The value as an overlay writes it.
    pub fn written(&self) -> Value {
        match self {
            Source::Ref(r) => Value::String(r.written()),
            Source::Not(r) => Value::String(format!("!{}", r.written())),
            Source::Template(parts) => Value::String(
                parts
                    .iter()
                    .map(|p| match p {
                        Part::Text(t) => t.clone(),
                        Part::Ref(r) => format!("{{{}}}", r.written()),
                    })
                    .collect(),
            ),
            Source::Map(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), v.written())).collect())
            }
            Source::Literal(v) => v.clone(),
        }
    }

    pub(crate) fn refs(&self) -> Vec<&Ref> {
        match self {
            Source::Ref(r) | Source::Not(r) => vec![r],
            Source::Template(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    Part::Ref(r) => Some(r),
                    Part::Text(_) => None,
                })
                .collect(),
            Source::Map(m) => m.values().flat_map(Source::refs).collect(),
            Source::Literal(_) => Vec::new(),
        }
    }
}

impl Serialize for Source {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.written().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Source::read(&v).map_err(serde::de::Error::custom)
    }
}

/// What an inverse is filled from: the call's arguments, the captured state, the call's answer.
#[derive(Debug, Clone, Copy)]
pub struct Filled<'a> {
    pub call: &'a Map<String, Value>,
    pub capture: Option<&'a Value>,
    pub result: Option<&'a Value>,
}

impl Inverse {
    /// The parameters the inverse puts back from the captured state, of those `call` gave
    /// (named, or through `*`): what a later read of the same state must still show for the
    /// inverse to restore what the change replaced, and nothing else since.
    pub fn restored_from_capture<'a>(&self, call: &'a Map<String, Value>) -> Vec<&'a str> {
        call.keys()
            .map(String::as_str)
            .filter(|name| {
                self.source_of(name)
                    .is_some_and(|s| s.refs().iter().any(|r| r.origin == Origin::Capture))
            })
            .collect()
    }

    /// The value the inverse gives `name`, read from `with` (for a drift check: with a
    /// capture read now).
    pub fn value_of(&self, name: &str, with: Filled<'_>) -> Result<Option<Value>, String> {
        match self.source_of(name) {
            Some(source) => source.value(with, Some(name)),
            None => Ok(None),
        }
    }

    fn source_of(&self, name: &str) -> Option<&Source> {
        self.params.get(name).or_else(|| self.params.get("*"))
    }

    /// The inverse's arguments for one call (`takes`: the inverse action's parameters), or
    /// the first value that could not be read (a path the answer did not have: the state is
    /// not what the entry expects).
    pub fn arguments(
        &self,
        with: Filled<'_>,
        takes: &[&str],
    ) -> Result<Map<String, Value>, String> {
        let mut out = Map::new();
        for (name, source) in &self.params {
            if name == "*" {
                continue;
            }
            if let Some(v) = source.value(with, None)? {
                out.insert(name.clone(), v);
            }
        }
        if let Some(star) = self.params.get("*") {
            for name in with.call.keys() {
                if !self.params.contains_key(name)
                    && takes.contains(&name.as_str())
                    && let Some(v) = star.value(with, Some(name))?
                {
                    out.insert(name.clone(), v);
                }
            }
        }
        for &name in takes {
            if !out.contains_key(name)
                && !self.params.contains_key("*")
                && let Some(v) = with.call.get(name)
            {
                out.insert(name.to_string(), v.clone());
            }
        }
        Ok(out)
    }
}

impl Source {
    /// The value for one call: `None` for a reference to an argument the call did not give
    /// (the inverse leaves that parameter out too).
    fn value(&self, with: Filled<'_>, star: Option<&str>) -> Result<Option<Value>, String> {
        Ok(match self {
            Source::Ref(r) => r.value(with, star)?,
            Source::Not(r) => match r.value(with, star)? {
                Some(Value::Bool(b)) => Some(Value::Bool(!b)),
                None => None,
                Some(other) => {
                    return Err(format!("{} is {other}, not true or false", r.written()));
                }
            },
            Source::Template(parts) => {
                let mut s = String::new();
                for p in parts {
                    match p {
                        Part::Text(t) => s.push_str(t),
                        Part::Ref(r) => match r.value(with, star)? {
                            Some(Value::String(v)) => s.push_str(&v),
                            Some(Value::Null) | None => return Ok(None),
                            Some(v) => s.push_str(&v.to_string()),
                        },
                    }
                }
                Some(Value::String(s))
            }
            Source::Map(m) => {
                let mut out = Map::new();
                for (k, v) in m {
                    if let Some(v) = v.value(with, star)? {
                        out.insert(k.clone(), v);
                    }
                }
                Some(Value::Object(out))
            }
            Source::Literal(v) => Some(v.clone()),
        })
    }
}

impl Ref {
    fn value(&self, with: Filled<'_>, star: Option<&str>) -> Result<Option<Value>, String> {
        let root = match self.origin {
            Origin::Call => {
                // A parameter the call did not give is not given to the inverse either.
                let Some(v) = with.call.get(&self.steps[0].field) else {
                    return Ok(None);
                };
                return self.walk(v, &self.steps[1..], with, star);
            }
            Origin::Capture => with.capture.ok_or("nothing was captured before the call")?,
            Origin::Result => with.result.ok_or("the call's answer was not kept")?,
        };
        self.walk(root, &self.steps, with, star)
    }

    fn walk(
        &self,
        mut at: &Value,
        steps: &[Step],
        with: Filled<'_>,
        star: Option<&str>,
    ) -> Result<Option<Value>, String> {
        for (i, s) in steps.iter().enumerate() {
            let field = match (s.field.as_str(), star) {
                ("*", Some(name)) => name,
                (f, _) => f,
            };
            let Some(next) = at.get(field) else {
                // A field the answer leaves out was unset: the inverse leaves it out too. A
                // path that stops before its end is not the state the entry expects.
                if i + 1 == steps.len() && s.select.is_none() {
                    return Ok(None);
                }
                return Err(format!("{} has no {field:?}", self.written()));
            };
            at = next;
            if let Some((key, pick)) = &s.select {
                let wanted = match pick {
                    Pick::Call(n) => with
                        .call
                        .get(n)
                        .cloned()
                        .ok_or_else(|| format!("{}: the call has no {n}", self.written()))?,
                    Pick::Text(t) => Value::String(t.clone()),
                    Pick::Star => Value::String(star.unwrap_or_default().to_string()),
                };
                at = at
                    .as_array()
                    .and_then(|items| {
                        items
                            .iter()
                            .find(|i| i.get(key).is_some_and(|v| same(v, &wanted)))
                    })
                    .ok_or_else(|| {
                        format!("{}: no element whose {key} is {wanted}", self.written())
                    })?;
            }
        }
        Ok(Some(at.clone()))
    }
}

/// Equal, or the same number or ID written as a string and as a number.
fn same(a: &Value, b: &Value) -> bool {
    a == b
        || match (a, b) {
            (Value::String(s), Value::Number(n)) | (Value::Number(n), Value::String(s)) => {
                *s == n.to_string()
            }
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn src(v: Value) -> Source {
        Source::read(&v).unwrap()
    }

    #[test]
    fn values_are_read_and_written_back_as_written() {
        for v in [
            json!("call.id"),
            json!("capture.items[id=call.id].name"),
            json!("capture.items[key=*].value"),
            json!("capture.*"),
            json!("!call.attached"),
            json!("{call.repository}:{call.tag}"),
            json!({"driver": "capture.driver", "ipam": {"subnet": "capture.ipam.subnet"}}),
            json!("plain text"),
            json!(3),
            json!(true),
        ] {
            assert_eq!(src(v.clone()).written(), v);
        }
        for bad in [
            json!("!plain"),
            json!("call."),
            json!("capture.items[id]"),
            json!("capture.items[id=x"),
            json!("capture.a..b"),
            json!("{call.x"),
            json!("{nothing}"),
        ] {
            assert!(Source::read(&bad).is_err(), "{bad} should not read");
        }
    }

    #[test]
    fn a_value_is_filled_from_the_call_the_capture_and_the_answer() {
        let call = json!({"id": 7, "attached": true, "repository": "nginx", "tag": "1.27"});
        let call = call.as_object().unwrap();
        let capture = json!({"items": [{"id": "6", "name": "a"}, {"id": "7", "name": "b"}]});
        let result = json!({"id": "new-1"});
        let with = Filled {
            call,
            capture: Some(&capture),
            result: Some(&result),
        };
        let v = |s: Value| src(s).value(with, None).unwrap();
        assert_eq!(v(json!("capture.items[id=call.id].name")), Some(json!("b")));
        assert_eq!(v(json!("result.id")), Some(json!("new-1")));
        assert_eq!(v(json!("!call.attached")), Some(json!(false)));
        assert_eq!(
            v(json!("{call.repository}:{call.tag}")),
            Some(json!("nginx:1.27"))
        );
        assert_eq!(v(json!("call.missing")), None);
        assert_eq!(v(json!("{call.repository}:{call.missing}")), None);
        assert!(
            src(json!("capture.items[id=9].name"))
                .value(with, None)
                .is_err()
        );
        assert!(src(json!("!call.repository")).value(with, None).is_err());
    }

    #[test]
    fn an_entry_says_exactly_one_thing() {
        let read = |v: Value| serde_json::from_value::<UndoOverlay>(v).unwrap().read();
        assert!(matches!(
            read(json!({"by": "container.start"})),
            Ok(Undo::By(_))
        ));
        assert_eq!(
            read(json!({"never": "gone"})),
            Ok(Undo::Never("gone".into()))
        );
        assert!(read(json!({"never": "gone", "by": "x.y"})).is_err());
        assert!(read(json!({"nothing": "same", "capture": "x.get"})).is_err());
        assert!(read(json!({})).is_err());
    }
}
