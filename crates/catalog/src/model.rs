//! The catalog: every capability of Arcane as one immutable list of [`Action`]s.
//!
//! Built from three sources (see [`crate::build`]): the OpenAPI document, hand-written declarations
//! (`catalog/*.yaml`) and overlays (`overrides/*.yaml`). Everything else in the server (tool
//! surfaces, search, resources, next steps) is a projection of this one value.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::impact::Impact;

/// Where an input parameter goes in the HTTP request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ParamLocation {
    /// `{id}` of `/environments/{id}/…`: optional, defaults to the configured environment.
    Environment,
    Path,
    Query,
    Header,
    /// A property of a JSON object body, lifted to the top level.
    BodyProperty,
    /// The whole body (a non-object JSON body, or raw bytes for octet-stream).
    Body,
    /// A multipart/form-data field.
    FormField,
    /// A parameter consumed by a hand-written handler.
    Handler,
    /// A field inside the JSON text of another parameter (see [`EncodedParam`]); the executor
    /// encodes it into that parameter, it is never sent on its own.
    Encoded,
}

/// One input parameter of an action.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Param {
    /// The name the client uses.
    pub name: String,
    /// The name on the wire (differs when a body property was renamed to avoid a collision).
    pub wire_name: String,
    pub location: ParamLocation,
    pub required: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The parameter's JSON Schema (self-contained).
    pub schema: Value,
    /// A path parameter whose value may hold `/` (overlay `takesPath`; the engine's
    /// `path::segment_path`). Off: the value must be one segment.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub takes_path: bool,
}

/// A lookup that turns a parameter's value into the ID Arcane wants (docs/arcane-wire.md,
/// path parameters and projects): the items of the `through` list action are searched for one
/// whose `match` fields equal the value (in any of its `variants`), and that item's `take`
/// field is sent instead. Values matching `keep` are sent as they are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParamResolver {
    /// The parameter name, in every action that has it.
    pub param: String,
    /// The list action whose items are searched (run in the call's environment).
    pub through: String,
    /// Item fields compared with the value; an array field matches when any element does.
    #[serde(rename = "match")]
    pub match_fields: Vec<String>,
    /// The item field sent instead of the value.
    pub take: String,
    /// A regular expression: values it matches are already IDs and are sent unchanged.
    #[serde(default)]
    pub keep: Option<String>,
    /// Forms of the value to try, `{}` standing for the value (default: the value itself).
    #[serde(default)]
    pub variants: Vec<String>,
    /// What the value names, for messages ("project", "image").
    pub noun: String,
    /// The list only names the objects in the person's question
    /// (docs/security.md#what-the-confirmation-shows): the value is sent as given, never
    /// replaced (Docker finds a container by its name itself).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub names_only: bool,
}

/// The next step for an error answer that reads wrongly on its own (a known Arcane bug, an
/// answer that means something else than it says). The first hint that matches an answer wins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ErrorHint {
    /// Action IDs or domains (`swarm_*` patterns with a trailing `*`) it applies to; all when
    /// empty.
    #[serde(default)]
    pub actions: Vec<String>,
    /// The HTTP status it applies to; any when absent.
    #[serde(default)]
    pub status: Option<u16>,
    /// Text Arcane's message must contain (case-insensitive); any when absent.
    #[serde(default)]
    pub contains: Option<String>,
    /// The next step. `{environment}` stands for the call's environment.
    pub hint: String,
}

impl ErrorHint {
    /// Whether the hint applies to this action's answer.
    pub fn applies(&self, action_id: &str, status: u16, message: &str) -> bool {
        let action_ok = self.actions.is_empty()
            || self.actions.iter().any(|a| match a.strip_suffix('*') {
                Some(prefix) => action_id.starts_with(prefix),
                None => a == action_id,
            });
        action_ok
            && self.status.is_none_or(|s| s == status)
            && self.contains.as_deref().is_none_or(|c| {
                message
                    .to_ascii_lowercase()
                    .contains(&c.to_ascii_lowercase())
            })
    }
}

/// How a successful answer is produced and shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize, Hash)]
#[serde(rename_all = "snake_case")]
pub enum ResultKind {
    /// A JSON body, usually Arcane's `{success, data, pagination}` envelope.
    #[default]
    Json,
    /// A JSON-lines stream (`application/x-json-stream`): pull, build, up, redeploy.
    Stream,
    /// A file (text or binary).
    Download,
    /// No body (204, HEAD).
    Empty,
    /// A hand-written handler (WebSocket logs, stats, exec).
    Handler,
}

impl ResultKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ResultKind::Json => "json",
            ResultKind::Stream => "stream",
            ResultKind::Download => "download",
            ResultKind::Empty => "empty",
            ResultKind::Handler => "handler",
        }
    }
}

/// How the request body is encoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyEncoding {
    #[default]
    None,
    Json,
    Multipart,
    OctetStream,
}

/// A suggested next action.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FollowUp {
    /// Canonical ID of the suggested action.
    pub action: String,
    /// Why or when, e.g. "redeploy the project that uses the image".
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// Suggested only when the result's field at this dotted path holds one of these values
    /// (`{field: state.status, is: [exited, dead]}`): next steps that fit the state the
    /// result shows. A result without the field gets none of the conditional follow-ups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Condition>,
}

/// A condition on a result: the value at `field` (a dotted path into the result's
/// structuredContent) equals one of `is`.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Condition {
    pub field: String,
    pub is: Vec<Value>,
}

impl Condition {
    /// Whether `result` holds one of the values at the path; `false` when the path is absent.
    pub fn holds(&self, result: &Value) -> bool {
        let mut v = result;
        for key in self.field.split('.') {
            match v.get(key) {
                Some(next) => v = next,
                None => return false,
            }
        }
        self.is.iter().any(|x| x == v)
    }
}

/// Where the current version of a document a parameter replaces is read (overlay
/// `confirmDiff`, docs/security.md#what-the-confirmation-shows): the person's question shows
/// the change as a diff instead of the new document alone.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DiffFrom {
    /// The parameter carrying the new document.
    pub param: String,
    /// The reading action that returns the current document; its parameters are taken from
    /// the call's own, by name.
    pub from: String,
    /// Dotted path of the current document in that action's answer (`data.composeContent`).
    pub field: String,
}

/// What says that a destructive call changed nothing (docs/output-format.md#nothing-done):
/// when every field named here is 0, empty, null or absent in the result (and at least one is
/// present), the text opens with `says` and the selection that matched nothing.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NoEffect {
    /// Result fields (dotted paths) that measure what the call did: counts and lists.
    pub fields: Vec<String>,
    /// The sentence's start, e.g. "No image was removed".
    pub says: String,
}

/// A sentence the person's question and the safe-mode preview add about how far a call reaches
/// (overlay `confirmScope`, docs/security.md#what-the-confirmation-shows): a prune's scope and
/// the defaults Arcane applies to what the call left out, and what it would remove. Shown when
/// its conditions hold: `when` (a parameter, or a dotted path into one, equals one of `is`)
/// and `absent` (none of these parameters was given).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScopeNote {
    pub says: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Condition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub absent: Vec<String>,
    /// Where what the call would remove can be listed beforehand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lists: Option<ScopeList>,
}

impl ScopeNote {
    /// Whether the note applies to a call with these (validated) parameters.
    pub fn applies(&self, params: &serde_json::Map<String, Value>) -> bool {
        let call = Value::Object(params.clone());
        self.absent
            .iter()
            .all(|p| params.get(p).is_none_or(Value::is_null))
            && self.when.as_ref().is_none_or(|c| c.holds(&call))
    }
}

/// A list action that enumerates what a call would remove (a prune's candidates).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScopeList {
    /// The list action (a read), run in the call's environment.
    pub from: String,
    /// Its arguments (`inUse: false`).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub args: serde_json::Map<String, Value>,
    /// Only the items this holds for (`repoTags` empty: untagged images).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<Condition>,
    /// The item field that names each (an array: its first element).
    pub show: String,
    /// The item field holding its size in bytes, when the list gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    /// What one item is ("image"; "images" for more).
    pub noun: String,
}

/// A field whose type Arcane is known to send differently than its document declares.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Widening {
    /// Property names to widen wherever they appear in the result.
    pub fields: Vec<String>,
    /// JSON types the fields accept, e.g. `[integer, string]`.
    pub types: Vec<String>,
    /// Only under a property path containing this name (e.g. `build`, `tmpfs`), if set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under: Option<String>,
}

/// An overlay's declaration of a parameter that carries JSON text (`encodedJson`).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EncodedJson {
    /// The parameter holding the JSON text (client or wire name).
    pub param: String,
    /// JSON Schema of the encoded object; its properties become parameters.
    pub schema: Value,
    /// Prepended to inner field names that would collide with other parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Sent when neither the raw parameter nor an inner field is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

/// A parameter whose value is JSON text, with its inner fields exposed as parameters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EncodedParam {
    /// Client name of the parameter holding the JSON text.
    pub param: String,
    /// `(client name, name inside the JSON)` of each inner field, in schema order.
    pub fields: Vec<(String, String)>,
    /// Inner names the encoded object must have (when built from fields).
    pub required: Vec<String>,
    /// Whether the raw parameter was required before the fields were exposed.
    pub raw_required: bool,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    pub default: Option<Value>,
}

/// An `Option<Value>` field that is present holds a value, `null` included (serde's own
/// reading of an `Option` would turn a stored `null` into `None`).
fn present_value<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// [`present_value`] for the stored form's borrowed schemas.
fn present_cow<'de, 'a, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'a, Value>>, D::Error> {
    Value::deserialize(d).map(|v| Some(Cow::Owned(v)))
}

/// A hand-written handler an action is executed by.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HandlerSpec {
    /// Handler kind: `ws_logs`, `ws_stats`, `ws_exec`, `ws_system_stats` (over Arcane's
    /// WebSocket); `history_list`, `history_undo` (the server's history, docs/undo.md).
    pub kind: String,
    /// Arcane path of the WebSocket endpoint, relative to `/api`; empty for a kind the server
    /// answers itself (the schema requires it of every `ws_` kind).
    #[serde(default)]
    pub path: String,
}

/// One capability: the unit of the catalog. `Default` is empty and unflagged (a JSON read with
/// no body, impact `Reads`): a constructor names what it derives, and overlays fill the rest.
///
/// What it is stays flat (the fields read everywhere); the rest is grouped by what it
/// describes: the request a call sends, what a call may change and what the person is asked,
/// how the answer is shown, and the words search knows it by. Each group is `Default`, so a
/// constructor names only the groups it sets.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    /// Canonical ID, `domain.action`.
    pub id: String,
    pub domain: String,
    /// The part after the dot.
    pub name: String,
    pub title: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub usage: String,
    pub params: Vec<Param>,
    /// Where this action came from: `openapi`, or a declaration file.
    pub source: String,
    /// The ID the derivation rules gave it, before overlays (overlays may be keyed by it).
    #[serde(skip)]
    pub derived_id: String,
    pub request: Request,
    pub safety: Safety,
    pub output: Output,
    /// Kept with [`Action::derived_id`] in the stored form's internals (see
    /// [`Catalog::to_stored`]).
    #[serde(skip)]
    pub search: SearchWords,
}

/// The request a call sends (or the handler it runs), and the input it takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    /// HTTP method, upper case (`GET`); for handlers, the method of the upgrade (`GET`).
    pub method: String,
    /// Arcane path relative to `/api`, with `{}` templates as in the spec.
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    pub body: BodyEncoding,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handler: Option<HandlerSpec>,
    /// Self-contained JSON Schema 2020-12 object schema of the input.
    pub input_schema: Value,
    pub required: Vec<String>,
    /// Parameters carrying JSON text whose fields are exposed as parameters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub encoded: Vec<EncodedParam>,
    /// A minimal example call (arguments as a client sends them), from an overlay.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    pub example: Option<Value>,
    /// The operation accepts a `sort` query parameter.
    pub sortable: bool,
    /// The `sort` sent when a list call gives none (paging needs a stable order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_sort: Option<String>,
    /// The call can run for minutes (a stream, a scan, a backup, a WebSocket handler with a
    /// duration; overlay `longRunning`): a client that speaks MCP tasks gets a task for it
    /// instead of waiting for the answer (docs/tasks.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub long_running: bool,
}

/// What a call may change, and what the person is asked before it runs
/// (docs/security.md#confirmation).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Safety {
    pub mutating: bool,
    pub destructive: bool,
    pub idempotent: bool,
    /// What a call can change, and so whether the person is asked (every class but `routine`
    /// is): derived by rule, declared in an overlay (`impact`), or `unclassed` — asked —
    /// when neither says (docs/security.md#impact-classes).
    #[serde(default)]
    pub impact: Impact,
    /// Why the action has its class, from the overlay that declared it (`impactReason`):
    /// every built-in `routine` class carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impact_reason: Option<String>,
    /// The person confirms every call, destructive or not (overlay `confirm: always`): actions
    /// that can do anything (a command in a container, a compose or service rewrite) or that
    /// reveal a credential (docs/security.md#confirmation).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confirm_always: bool,
    /// Parameters that replace a stored document, with the reading action that returns the
    /// current one (overlay `confirmDiff`): the question shows a diff of current → new.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub confirm_diff: Vec<DiffFrom>,
    /// How far a call reaches, in words, for the person's question (overlay `confirmScope`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub confirm_scope: Vec<ScopeNote>,
    /// How a result of this destructive action shows that nothing was done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_effect: Option<NoEffect>,
    /// What secret this action exists to show (a new API key, join tokens): its result text
    /// is not masked and says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reveals_secret: Option<String>,
    /// How the change is taken back, or why it cannot be (overlay `undo`, docs/undo.md);
    /// `None` for a read, and for a write no overlay describes (it says nothing of undoing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<crate::undo::Undo>,
}

/// What the answer is and how it is shown: its kind and shape, the text's table and
/// omissions, and the next steps it offers.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub kind: ResultKind,
    /// The answer is a list (the envelope's `data` is an array): paging and `sort` apply.
    pub list: bool,
    /// The 2xx response schema, `$ref`s inlined (JSON results only).
    #[serde(skip)]
    pub response_schema: Option<Value>,
    pub widenings: Vec<Widening>,
    /// Table columns for list results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub columns: Option<Vec<String>>,
    /// Wording for an empty list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub empty_hint: Option<String>,
    /// The action that returns a full item of this list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_item: Option<String>,
    /// Fields an object result's text leaves out (dotted paths; a path through a list applies
    /// to each element): large values that repeat another field or that no later call takes.
    /// The text names what it left out; `structuredContent` keeps everything
    /// (docs/output-format.md#objects).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text_omits: Vec<String>,
    pub related: Vec<String>,
    pub follow_ups: Vec<FollowUp>,
}

/// The words search knows an action by, from overlays.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SearchWords {
    /// Words and phrases people use for this action.
    pub keywords: Vec<String>,
    /// Whole requests people make for this action (`asks`).
    #[serde(default)]
    pub asks: Vec<String>,
    /// The keywords of the operator's own overlay files (also in `keywords`): their words for
    /// their deployment, which the search holds to where the meaning of the rest leans
    /// elsewhere (docs/search.md, "Fusion").
    #[serde(default)]
    pub operator_keywords: Vec<String>,
}

impl Action {
    /// `arcane_<domain>_<action>`, the individual surface's tool name.
    pub fn individual_tool_name(&self) -> String {
        format!("arcane_{}_{}", self.domain, self.name)
    }

    /// `arcane_<domain>`, the meta surface's tool name.
    pub fn meta_tool_name(&self) -> String {
        format!("arcane_{}", self.domain)
    }

    /// Whether a call must be confirmed before it runs: its impact class asks (every class
    /// but `routine`; an unclassed write too), or it is `confirm: always`.
    pub fn needs_confirmation(&self) -> bool {
        self.safety.impact.asks() || self.safety.confirm_always
    }

    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }

    /// The targets of a call: the parameters that fill the path (the volume, the container,
    /// the project), in the action's order — by where they go, not by how they are named
    /// (`volumeName` is as much a target as `containerId`). The environment is the other
    /// part of what a call addresses, said apart (the question's first line, the audit
    /// log's `environment`). The one rule of the question (`arcane_engine::describe`) and the
    /// audit log's `targets` (docs/security.md#what-the-confirmation-shows).
    pub fn targets(&self) -> impl Iterator<Item = &Param> {
        self.params
            .iter()
            .filter(|p| p.location == ParamLocation::Path)
    }

    /// Whether the value of parameter `name` names what the call addresses — a target
    /// ([`Action::targets`]) or the environment — so that it is an identifier, shown and
    /// recorded as given rather than masked when it looks like a credential.
    pub fn addresses(&self, name: &str) -> bool {
        self.param(name)
            .is_some_and(|p| matches!(p.location, ParamLocation::Path | ParamLocation::Environment))
    }
}

/// An operation of the spec that is not served as an action, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Excluded {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub operation_id: String,
    pub method: String,
    pub path: String,
    pub reason: String,
}

/// An overlay entry that matched nothing in the catalog it was applied to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnmatchedOverlay {
    /// The overlay file, as loaded (a path, or `overrides/NAME (built in)`).
    pub file: String,
    /// The line of the entry's key.
    pub line: usize,
    /// `actions` or `domains`.
    pub section: String,
    /// The key as written.
    pub key: String,
    /// The closest existing IDs (or domains), best first.
    pub closest: Vec<String>,
    /// Why an entry that names an action still does not fit it (an `encodedJson` parameter the
    /// action lacks); `None` for an entry matching nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What a built-in file's origin ends with (`overrides/NAME (built in)`): the one mark that tells
/// an operator's file from ours, in messages and in [`is_built_in`].
pub const BUILT_IN: &str = " (built in)";

/// Whether a file's origin names one of the files compiled into the binary (an operator cannot
/// edit those: an entry of theirs that matches nothing is for another Arcane version).
pub fn is_built_in(origin: &str) -> bool {
    origin.ends_with(BUILT_IN)
}

/// Why a built-in entry matching nothing needs no fix.
const BUILT_IN_NOTE: &str =
    " (built in, written for another Arcane version: nothing to fix; check does not count it)";

impl UnmatchedOverlay {
    /// Whether the entry is in one of the built-in files (not the operator's to fix).
    pub fn is_built_in(&self) -> bool {
        is_built_in(&self.file)
    }
}

impl std::fmt::Display for UnmatchedOverlay {
    /// `FILE:LINE: overlay entry `key` matches no action of this spec — did you mean …?`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.section == "domains" {
            "domain"
        } else {
            "action"
        };
        if let Some(reason) = &self.reason {
            write!(
                f,
                "{}:{}: {} entry `{}`: {reason}",
                self.file, self.line, self.section, self.key
            )?;
            if self.is_built_in() {
                write!(f, "{BUILT_IN_NOTE}")?;
            }
            return Ok(());
        }
        if self.is_built_in() {
            return write!(
                f,
                "{}:{}: {} entry `{}` is for a{} {what} this Arcane spec lacks{BUILT_IN_NOTE}",
                self.file,
                self.line,
                self.section,
                self.key,
                if what == "action" { "n" } else { "" }
            );
        }
        write!(
            f,
            "{}:{}: {} entry `{}` matches no {what} of this Arcane spec",
            self.file, self.line, self.section, self.key
        )?;
        match self.closest.as_slice() {
            [] => write!(f, " — delete the entry or fix its key"),
            closest => write!(
                f,
                " — did you mean {}? (fix the key, or delete the entry if Arcane dropped it)",
                closest
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// A domain: a group of actions on one kind of resource.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Domain {
    pub name: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// IDs of its actions, in catalog order.
    pub actions: Vec<String>,
}

/// The immutable catalog.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub arcane_version: String,
    pub spec_origin: String,
    pub actions: Vec<Action>,
    pub domains: Vec<Domain>,
    pub excluded: Vec<Excluded>,
    /// Overlay entries that matched no action or domain of this spec: typos, or entries for
    /// another Arcane version. Reported at load and reload, by `catalog` and `check`.
    pub unmatched_overlays: Vec<UnmatchedOverlay>,
    /// How many overlay entries matched an action or domain (built-in and the operator's).
    pub applied_overlays: usize,
    /// When this catalog was built.
    pub loaded_at: chrono::DateTime<chrono::Utc>,
    /// Which swap of the live catalog this is (0 at startup; set by the reloader).
    pub generation: u64,
    /// The search vocabulary of every overlay layer, merged (see `docs/search.md`).
    pub vocabulary: crate::vocabulary::Vocabulary,
    /// The presets of every overlay layer by name, later files winning (`--preset`).
    pub presets: BTreeMap<String, Preset>,
    /// How a parameter's human-friendly value (a name, a reference) becomes the ID Arcane
    /// wants, looked up through a list action before the request (`overrides/resolvers.yaml`).
    pub resolvers: Vec<ParamResolver>,
    /// Next steps for answers whose plain reading misleads (`overrides/known-answers.yaml`).
    pub error_hints: Vec<ErrorHint>,
    /// The MCP prompts of every overlay layer, by name (`overrides/prompts.yaml`).
    pub prompts: Vec<crate::prompt::Prompt>,
    /// Actions an operator's overlay gave another impact class than the built-in one
    /// (logged at startup, listed by `check`).
    pub reclassed: Vec<crate::impact::Reclass>,
    by_id: HashMap<String, usize>,
    /// Other accepted names (tool names, operationIds) → index.
    aliases: HashMap<String, usize>,
}

impl Catalog {
    /// Assembles a catalog from its actions; computes domains and lookup tables.
    pub fn new(
        arcane_version: String,
        spec_origin: String,
        mut actions: Vec<Action>,
        domain_meta: &BTreeMap<String, (String, String)>,
        excluded: Vec<Excluded>,
    ) -> Catalog {
        actions.sort_by(|a, b| a.id.cmp(&b.id));
        let (by_id, aliases) = index(&actions);
        let mut domains: BTreeMap<String, Domain> = BTreeMap::new();
        for a in &actions {
            let d = domains.entry(a.domain.clone()).or_insert_with(|| {
                let (title, description) = domain_meta
                    .get(&a.domain)
                    .cloned()
                    .unwrap_or_else(|| (crate::derive::humanize_domain(&a.domain), String::new()));
                Domain {
                    name: a.domain.clone(),
                    title,
                    description,
                    actions: Vec::new(),
                }
            });
            d.actions.push(a.id.clone());
        }
        Catalog {
            arcane_version,
            spec_origin,
            actions,
            domains: domains.into_values().collect(),
            excluded,
            unmatched_overlays: Vec::new(),
            applied_overlays: 0,
            loaded_at: chrono::Utc::now(),
            generation: 0,
            vocabulary: Default::default(),
            presets: Default::default(),
            resolvers: Vec::new(),
            error_hints: Vec::new(),
            prompts: Vec::new(),
            reclassed: Vec::new(),
            by_id,
            aliases,
        }
    }

    /// The writes no rule and no overlay classes (`unclassed`, and so asked): listed by
    /// `check` and `catalog --diff` (docs/security.md#impact-classes).
    pub fn unclassed(&self) -> impl Iterator<Item = &Action> {
        self.actions
            .iter()
            .filter(|a| a.safety.impact == Impact::Unclassed)
    }

    /// The parameters of `action` whose values are identifiers, shown and recorded as given
    /// (`arcane_redact::shown_as_given`): what the call addresses ([`Action::addresses`]:
    /// the path parameters and the environment) and the parameters a resolver looks up by
    /// name (`overrides/resolvers.yaml`). The audit log's rule; the question knows the names
    /// looked up from the lookup itself.
    pub fn identifiers<'a>(&'a self, action: &'a Action) -> Vec<&'a str> {
        action
            .params
            .iter()
            .filter(|p| {
                action.addresses(&p.name)
                    || self
                        .resolvers
                        .iter()
                        .any(|r| r.param == p.name && r.through != action.id && !r.names_only)
            })
            .map(|p| p.name.as_str())
            .collect()
    }

    /// An action by canonical ID.
    pub fn get(&self, id: &str) -> Option<&Action> {
        self.by_id.get(id).map(|&i| &self.actions[i])
    }

    /// An action by any accepted name: canonical ID, `arcane_<domain>_<action>`,
    /// `arcane_<domain>.<action>`, or Arcane's operationId.
    pub fn resolve(&self, name: &str) -> Option<&Action> {
        let name = name.trim();
        self.get(name)
            .or_else(|| self.aliases.get(name).map(|&i| &self.actions[i]))
    }

    /// Canonical IDs closest to an unknown name, best first.
    pub fn closest(&self, name: &str, n: usize) -> Vec<&str> {
        let needle = name.trim().to_ascii_lowercase();
        let needle = needle
            .strip_prefix("arcane_")
            .unwrap_or(&needle)
            .to_string();
        let mut scored: Vec<(f64, &str)> = self
            .actions
            .iter()
            .map(|a| {
                let dotted = strsim::jaro_winkler(&needle, &a.id);
                let underscored =
                    strsim::jaro_winkler(&needle, &format!("{}_{}", a.domain, a.name));
                let op = a
                    .request
                    .operation_id
                    .as_deref()
                    .map(|o| strsim::jaro_winkler(&needle, o))
                    .unwrap_or(0.0);
                (dotted.max(underscored).max(op), a.id.as_str())
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        scored.into_iter().take(n).map(|(_, id)| id).collect()
    }

    pub fn domain(&self, name: &str) -> Option<&Domain> {
        self.domains.iter().find(|d| d.name == name)
    }
}

/// The lookup tables of a catalog's actions: canonical ID → index, and the other accepted
/// names (tool names, operationIds) → index.
fn index(actions: &[Action]) -> (HashMap<String, usize>, HashMap<String, usize>) {
    let mut by_id = HashMap::with_capacity(actions.len());
    let mut aliases = HashMap::with_capacity(actions.len() * 3);
    for (i, a) in actions.iter().enumerate() {
        by_id.insert(a.id.clone(), i);
        aliases.insert(a.individual_tool_name(), i);
        aliases.insert(format!("arcane_{}", a.id), i);
        if let Some(op) = &a.request.operation_id {
            aliases.entry(op.clone()).or_insert(i);
        }
        // The ID before an overlay renamed it: the old name keeps leading to the action
        // (prompts, calls, a model's memory of the old name) instead of to a look-alike.
        if !a.derived_id.is_empty() && a.derived_id != a.id {
            aliases.entry(a.derived_id.clone()).or_insert(i);
        }
    }
    (by_id, aliases)
}

/// What an action keeps out of its public JSON (`catalog --json`, `arcane://tools`) but a
/// stored catalog must carry.
#[derive(Serialize, Deserialize)]
struct ActionInternals<'a> {
    derived_id: Cow<'a, str>,
    search: Cow<'a, SearchWords>,
}

/// An action's response schema in the stored form: about half its bytes, so it is a document
/// of its own, read on a second thread beside the rest.
#[derive(Serialize, Deserialize)]
struct StoredResponse<'a> {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_cow"
    )]
    schema: Option<Cow<'a, Value>>,
}

/// The stored form of a catalog (see [`Catalog::write_stored`]): every field but the lookup
/// tables (rebuilt), the build time and the generation (the loader's). Borrowed when written,
/// owned when read: a copy of every action's schemas only to encode them was the largest
/// allocation of a first start (docs/measurements.md).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredCatalog<'a> {
    arcane_version: Cow<'a, str>,
    spec_origin: Cow<'a, str>,
    actions: Vec<(Cow<'a, Action>, ActionInternals<'a>)>,
    domains: Cow<'a, [Domain]>,
    excluded: Cow<'a, [Excluded]>,
    unmatched_overlays: Cow<'a, [UnmatchedOverlay]>,
    applied_overlays: usize,
    vocabulary: Cow<'a, crate::vocabulary::Vocabulary>,
    domain_keywords: Cow<'a, BTreeMap<String, Vec<String>>>,
    presets: Cow<'a, BTreeMap<String, Preset>>,
    resolvers: Cow<'a, [ParamResolver]>,
    error_hints: Cow<'a, [ErrorHint]>,
    prompts: Cow<'a, [crate::prompt::Prompt]>,
    #[serde(default)]
    reclassed: Cow<'a, [crate::impact::Reclass]>,
}

impl Catalog {
    /// Writes the catalog as self-contained JSON text, read back by [`Catalog::from_stored`]:
    /// what a cache of built catalogs keeps, so that a start with unchanged files skips the
    /// build. Streamed from the catalog itself, nothing copied.
    pub fn write_stored(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let stored = StoredCatalog {
            arcane_version: Cow::Borrowed(&self.arcane_version),
            spec_origin: Cow::Borrowed(&self.spec_origin),
            actions: self
                .actions
                .iter()
                .map(|a| {
                    (
                        Cow::Borrowed(a),
                        ActionInternals {
                            derived_id: Cow::Borrowed(&a.derived_id),
                            search: Cow::Borrowed(&a.search),
                        },
                    )
                })
                .collect(),
            domains: Cow::Borrowed(&self.domains),
            excluded: Cow::Borrowed(&self.excluded),
            unmatched_overlays: Cow::Borrowed(&self.unmatched_overlays),
            applied_overlays: self.applied_overlays,
            vocabulary: Cow::Borrowed(&self.vocabulary),
            domain_keywords: Cow::Borrowed(&self.vocabulary.domain_keywords),
            presets: Cow::Borrowed(&self.presets),
            resolvers: Cow::Borrowed(&self.resolvers),
            error_hints: Cow::Borrowed(&self.error_hints),
            prompts: Cow::Borrowed(&self.prompts),
            reclassed: Cow::Borrowed(&self.reclassed),
        };
        let responses: Vec<StoredResponse> = self
            .actions
            .iter()
            .map(|a| StoredResponse {
                schema: a.output.response_schema.as_ref().map(Cow::Borrowed),
            })
            .collect();
        // Two JSON documents on two lines (JSON text holds no raw newline).
        serde_json::to_writer(&mut *out, &stored)?;
        out.write_all(b"\n")?;
        serde_json::to_writer(&mut *out, &responses)?;
        Ok(())
    }

    /// [`Catalog::write_stored`] into memory.
    pub fn to_stored(&self) -> Vec<u8> {
        let mut text = Vec::new();
        // Every key is a string and every value plain data: writing to memory cannot fail.
        let _ = self.write_stored(&mut text);
        text
    }

    /// Reads a catalog written by [`Catalog::to_stored`]; `loaded_at` is now, `generation` 0.
    /// Anything else (another format, a truncated value) is an error, never a partial catalog.
    pub fn from_stored(json: &[u8]) -> Result<Catalog, serde_json::Error> {
        use serde::de::Error as _;
        let (main, responses) = match json.iter().position(|&b| b == b'\n') {
            Some(i) => (&json[..i], &json[i + 1..]),
            None => {
                return Err(serde_json::Error::custom(
                    "the response schemas are missing",
                ));
            }
        };
        let parse_responses = || serde_json::from_slice::<Vec<StoredResponse>>(responses);
        // The two documents are about the same size: one thread each.
        let (stored, responses) = std::thread::scope(|s| {
            let other = std::thread::Builder::new()
                .name("catalog-read".into())
                .spawn_scoped(s, parse_responses);
            let stored = serde_json::from_slice::<StoredCatalog>(main);
            let responses = match other {
                Ok(handle) => handle.join().unwrap_or_else(|_| {
                    Err(serde_json::Error::custom(
                        "reading the response schemas failed",
                    ))
                }),
                Err(_) => parse_responses(),
            };
            (stored, responses)
        });
        let (stored, responses) = (stored?, responses?);
        if responses.len() != stored.actions.len() {
            return Err(serde_json::Error::custom(
                "the response schemas do not match the actions",
            ));
        }
        let actions: Vec<Action> = stored
            .actions
            .into_iter()
            .zip(responses)
            .map(|((a, internals), response)| {
                let mut a = a.into_owned();
                a.output.response_schema = response.schema.map(Cow::into_owned);
                a.derived_id = internals.derived_id.into_owned();
                a.search = internals.search.into_owned();
                a
            })
            .collect();
        let (by_id, aliases) = index(&actions);
        let mut vocabulary = stored.vocabulary.into_owned();
        vocabulary.domain_keywords = stored.domain_keywords.into_owned();
        Ok(Catalog {
            arcane_version: stored.arcane_version.into_owned(),
            spec_origin: stored.spec_origin.into_owned(),
            actions,
            domains: stored.domains.into_owned(),
            excluded: stored.excluded.into_owned(),
            unmatched_overlays: stored.unmatched_overlays.into_owned(),
            applied_overlays: stored.applied_overlays,
            loaded_at: chrono::Utc::now(),
            generation: 0,
            vocabulary,
            presets: stored.presets.into_owned(),
            resolvers: stored.resolvers.into_owned(),
            error_hints: stored.error_hints.into_owned(),
            prompts: stored.prompts.into_owned(),
            reclassed: stored.reclassed.into_owned(),
            by_id,
            aliases,
        })
    }
}

/// A preset: which actions a server started with `--preset NAME` serves
/// (docs/security.md#presets-and-allow-lists).
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Preset {
    pub description: String,
    #[serde(default)]
    pub read_only: bool,
    /// Every reading action is served (besides `tools`).
    #[serde(default)]
    pub reads: bool,
    /// Allow-list entries (action IDs, tool names, domains). With neither `reads` nor `tools`,
    /// every action is served.
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
}
