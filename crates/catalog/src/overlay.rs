//! Overlay and declaration files: their types, loading, and validation against `schemas/`.
//!
//! Two kinds of YAML file feed the catalog besides the OpenAPI document:
//! * overlays (`overrides/*.yaml`): corrections and additions per action and per domain;
//! * declarations (`catalog/*.yaml`): actions that no single OpenAPI operation serves.
//!
//! The project's own files are compiled into the binary; an operator's directory is layered on
//! top. Every file is validated against its JSON Schema on load, and an error names the file,
//! the line and what is wrong.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use anyhow::{Result, anyhow};
use include_dir::{Dir, include_dir};
use serde::Deserialize;
use serde_json::Value;

use crate::model::{
    EncodedJson, ErrorHint, FollowUp, HandlerSpec, NoEffect, ParamResolver, Preset, ResultKind,
    Widening,
};
use crate::vocabulary::Vocabulary;
use crate::yaml::{self, LineMap, MAX_FILE_BYTES};

static BUILTIN_OVERRIDES: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/../../overrides");
static BUILTIN_DECLARATIONS: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/../../catalog");
const OVERLAY_SCHEMA: &str = include_str!("../../../schemas/overlay.schema.json");
const DECLARATIONS_SCHEMA: &str = include_str!("../../../schemas/declarations.schema.json");

/// Corrections for one action, keyed in the file by the derived ID or Arcane's operationId.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActionOverlay {
    /// New canonical ID (`domain.action`).
    pub id: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub usage: Option<String>,
    pub related: Option<Vec<String>>,
    pub follow_ups: Option<Vec<FollowUp>>,
    pub mutating: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub columns: Option<Vec<String>>,
    pub empty_hint: Option<String>,
    pub full_item: Option<String>,
    /// Fields an object result's text leaves out (dotted paths, into each element of a list).
    pub text_omits: Option<Vec<String>>,
    pub default_sort: Option<String>,
    pub reveals_secret: Option<String>,
    /// `always`: every call is confirmed by the person, destructive or not; `default`: only
    /// destructive calls are (undoes an earlier layer's `always`).
    pub confirm: Option<ConfirmRule>,
    /// What a call can change (docs/security.md#impact-classes): every class but `routine`
    /// is asked; a later file's class wins (an operator's is logged at startup).
    pub impact: Option<crate::impact::Impact>,
    /// Why the action has its class, one line (every built-in `routine` carries one).
    pub impact_reason: Option<String>,
    /// Parameters that replace a stored document, and where the current one is read: the
    /// question shows a diff (docs/security.md#what-the-confirmation-shows). A later file's
    /// list replaces an earlier one; an empty list turns the diff off.
    pub confirm_diff: Option<Vec<crate::model::DiffFrom>>,
    /// The call can run for minutes: a client that speaks MCP tasks gets a task for it
    /// (docs/tasks.md).
    pub long_running: Option<bool>,
    pub result: Option<ResultKind>,
    /// Withdraw the action from the generic executor; the value is the reason.
    pub exclude: Option<String>,
    pub widen: Option<Vec<Widening>>,
    /// Per-parameter corrections: a better description, whether it takes a path, or the
    /// closed set of values Arcane accepts (`enum`). A name may be a dotted path into an object
    /// parameter (`images.mode`).
    pub params: Option<BTreeMap<String, ParamOverlay>>,
    /// How a result shows that this destructive call did nothing.
    pub no_effect: Option<NoEffect>,
    /// How far a call reaches, in words, for the person's question: a later file's list
    /// replaces an earlier one (docs/security.md#what-the-confirmation-shows).
    pub confirm_scope: Option<Vec<crate::model::ScopeNote>>,
    /// Search: words and phrases people use for this action (added to earlier layers').
    pub keywords: Option<Vec<String>>,
    /// Search: whole requests people make when they want this action ("why did my app
    /// crash"), compared with a query by meaning (added to earlier layers').
    pub asks: Option<Vec<String>>,
    /// String or multipart parameters that carry JSON text: their inner fields become ordinary
    /// parameters and the executor encodes them back (docs/encoded-parameters.md). A later
    /// file's list replaces an earlier one; an empty list turns the encoding off.
    pub encoded_json: Option<Vec<EncodedJson>>,
    /// A minimal example call (the arguments, as a client sends them).
    pub example: Option<Value>,
    /// How the change is taken back, or why it cannot be (docs/undo.md); a later file's
    /// entry replaces an earlier one.
    pub undo: Option<crate::undo::UndoOverlay>,
}

/// When an action's calls are confirmed (overlay `confirm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ConfirmRule {
    /// Every call, destructive or not.
    Always,
    /// Destructive calls only (the rule of every action without `confirm`).
    Default,
}

/// A correction of one parameter: its description alone (`containerId: "Container ID or
/// name"`), or its fields.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ParamOverlay {
    /// A better description.
    Description(String),
    Fields(ParamFields),
}

/// The fields of a [`ParamOverlay`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParamFields {
    pub description: Option<String>,
    /// The path parameter's value may hold `/` (an image reference for a route whose handler
    /// decodes its parameter itself); off by default, so that no value can add path structure
    /// (docs/security.md, "Path parameters").
    pub takes_path: Option<bool>,
    /// The closed set of values Arcane accepts: the input schema carries it as `enum`, so a
    /// value outside it is refused locally, before anything is sent.
    #[serde(rename = "enum")]
    pub values: Option<Vec<Value>>,
}

impl ParamOverlay {
    pub fn description(&self) -> Option<&str> {
        match self {
            ParamOverlay::Description(d) => Some(d),
            ParamOverlay::Fields(f) => f.description.as_deref(),
        }
    }

    pub fn takes_path(&self) -> Option<bool> {
        match self {
            ParamOverlay::Description(_) => None,
            ParamOverlay::Fields(f) => f.takes_path,
        }
    }

    pub fn values(&self) -> Option<&[Value]> {
        match self {
            ParamOverlay::Description(_) => None,
            ParamOverlay::Fields(f) => f.values.as_deref(),
        }
    }
}

/// Corrections for one domain.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DomainOverlay {
    /// Rename every action of the domain into this domain.
    pub rename: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    /// Search: words and phrases people use for this domain's resource (added to earlier layers').
    pub keywords: Option<Vec<String>>,
}

/// One overlay file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverlayFile {
    #[serde(default)]
    pub domains: BTreeMap<String, DomainOverlay>,
    #[serde(default)]
    pub actions: BTreeMap<String, ActionOverlay>,
    #[serde(default)]
    pub vocabulary: Vocabulary,
    /// Name/reference → ID lookups; a later file's entry for the same `param` replaces an
    /// earlier one.
    #[serde(default)]
    pub resolvers: Vec<ParamResolver>,
    /// Next steps for misleading answers; later files' hints are tried first.
    #[serde(default)]
    pub error_hints: Vec<ErrorHint>,
    /// Named sets of served actions (`--preset`); a later file's preset replaces an earlier.
    #[serde(default)]
    pub presets: BTreeMap<String, Preset>,
    /// Corrections of a query parameter by name, in every action that has one so named
    /// (`order: {enum: [asc, desc]}` for every list); an action's own `params` entry wins.
    #[serde(default)]
    pub shared_params: BTreeMap<String, ParamOverlay>,
    /// MCP prompts by name (docs/overlays.md#prompts); a later file's entry replaces the fields
    /// it sets.
    #[serde(default)]
    pub prompts: BTreeMap<String, crate::prompt::PromptOverlay>,
}

/// One hand-written action.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Declaration {
    pub id: String,
    pub title: String,
    pub description: String,
    #[serde(default)]
    pub usage: String,
    pub handler: HandlerSpec,
    #[serde(default)]
    pub mutating: bool,
    #[serde(default)]
    pub destructive: bool,
    #[serde(default = "yes")]
    pub idempotent: bool,
    /// JSON Schema of the parameters (an object schema); `environmentId` is added.
    pub params: Value,
    #[serde(default)]
    pub related: Vec<String>,
    #[serde(default)]
    pub follow_ups: Vec<FollowUp>,
}

fn yes() -> bool {
    true
}

/// One declaration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeclarationFile {
    #[serde(default)]
    pub actions: Vec<Declaration>,
}

/// A loaded file with its origin and the line of every key, for messages.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    pub origin: String,
    pub content: T,
    /// Where each key sits (`actions.container.list` → its line).
    pub lines: LineMap,
}

impl<T: serde::de::DeserializeOwned> Loaded<T> {
    /// Parses and validates one file; errors read `ORIGIN:LINE: what is wrong — how to fix`.
    fn parse(text: &str, origin: &str, schema: &str) -> Result<Loaded<T>> {
        let (content, lines) = parse_checked(text, origin, schema)?;
        Ok(Loaded {
            origin: origin.to_string(),
            content,
            lines,
        })
    }
}

/// All overlay and declaration files, in the order they apply (built-in first).
#[derive(Debug, Clone, Default)]
pub struct Layers {
    pub overlays: Vec<Loaded<OverlayFile>>,
    pub declarations: Vec<Loaded<DeclarationFile>>,
}

impl Layers {
    /// The project's own files, compiled into the binary.
    pub fn builtin() -> Result<Layers> {
        // The files are independent and parsing them is a good part of the startup: one
        // thread per file, results in file order.
        fn parse_all<T: serde::de::DeserializeOwned + Send>(
            dir: &Dir<'_>,
            folder: &str,
            schema: &str,
        ) -> Result<Vec<Loaded<T>>> {
            let parse = |name: &str, text: &str| -> Result<Loaded<T>> {
                let mut file = Loaded::parse(text, &format!("{folder}/{name}"), schema)?;
                file.origin = format!("{folder}/{name}{}", crate::model::BUILT_IN);
                Ok(file)
            };
            let files = yaml_files_in(dir);
            std::thread::scope(|s| {
                let started: Vec<_> = files
                    .iter()
                    .map(|(name, text)| {
                        std::thread::Builder::new()
                            .name("overlay-parse".into())
                            .spawn_scoped(s, || parse(name, text))
                            .map_err(|_| (name, text))
                    })
                    .collect();
                started
                    .into_iter()
                    .map(|handle| match handle {
                        Ok(h) => h.join().unwrap_or_else(|_| {
                            Err(anyhow!("parsing a built-in file failed unexpectedly"))
                        }),
                        Err((name, text)) => parse(name, text),
                    })
                    .collect()
            })
        }
        Ok(Layers {
            overlays: parse_all(&BUILTIN_OVERRIDES, "overrides", OVERLAY_SCHEMA)?,
            declarations: parse_all(&BUILTIN_DECLARATIONS, "catalog", DECLARATIONS_SCHEMA)?,
        })
    }

    /// Every built-in file as `(folder/name, bytes)`, in a fixed order: what a cache of built
    /// catalogs hashes, since a build of the same version may carry other built-in files.
    pub fn builtin_files() -> Vec<(String, &'static [u8])> {
        let mut files = Vec::new();
        for (folder, dir) in [
            ("overrides", &BUILTIN_OVERRIDES),
            ("catalog", &BUILTIN_DECLARATIONS),
        ] {
            let mut these: Vec<(String, &'static [u8])> = files_under(dir)
                .into_iter()
                .map(|f| (format!("{folder}/{}", f.path().display()), f.contents()))
                .collect();
            these.sort();
            files.extend(these);
        }
        files
    }

    /// Adds an operator's overlay directory (`*.yaml`, `*.yml`, in name order). Every file is
    /// checked; the error lists the problems of all of them, one per line.
    pub fn add_overlay_dir(&mut self, dir: &Path) -> Result<()> {
        self.overlays
            .extend(load_all(yaml_paths(dir)?, OVERLAY_SCHEMA)?);
        Ok(())
    }

    /// Adds an operator's declaration directory (`*.yaml` with an `actions` list). The OpenAPI
    /// document may sit in the same directory (`openapi.yaml`); it is not a declaration file.
    pub fn add_declaration_dir(&mut self, dir: &Path) -> Result<()> {
        let is_spec = |p: &PathBuf| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("openapi."))
        };
        let paths = yaml_paths(dir)?
            .into_iter()
            .filter(|p| !is_spec(p))
            .collect();
        self.declarations
            .extend(load_all(paths, DECLARATIONS_SCHEMA)?);
        Ok(())
    }

    /// Adds one overlay file given as text (`origin` names it in errors), parsed and checked
    /// exactly as a file of an overlay directory: what the fuzz target `overlay` feeds.
    pub fn add_overlay_text(&mut self, text: &str, origin: &str) -> Result<()> {
        self.overlays
            .push(Loaded::parse(text, origin, OVERLAY_SCHEMA)?);
        Ok(())
    }

    /// Adds one declaration file given as text, as [`Layers::add_overlay_text`] does.
    pub fn add_declaration_text(&mut self, text: &str, origin: &str) -> Result<()> {
        self.declarations
            .push(Loaded::parse(text, origin, DECLARATIONS_SCHEMA)?);
        Ok(())
    }
}

/// Loads every file, collecting the problems of all of them rather than stopping at the first.
fn load_all<T: serde::de::DeserializeOwned>(
    paths: Vec<PathBuf>,
    schema: &str,
) -> Result<Vec<Loaded<T>>> {
    let mut loaded = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        let origin = path.display().to_string();
        match read(&path).and_then(|text| Loaded::parse(&text, &origin, schema)) {
            Ok(file) => loaded.push(file),
            Err(e) => problems.push(format!("{e:#}")),
        }
    }
    if problems.is_empty() {
        Ok(loaded)
    } else {
        Err(anyhow!(problems.join("\n")))
    }
}

/// Reads a file of at most [`MAX_FILE_BYTES`] (a larger one is refused without reading it all).
fn read(path: &Path) -> Result<String> {
    use std::io::Read as _;
    let origin = path.display();
    let file = std::fs::File::open(path).map_err(|e| anyhow!("{origin}:1: cannot read: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| anyhow!("{origin}:1: cannot read: {e}"))?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(anyhow!(
            "{origin}:1: the file is over the limit of {MAX_FILE_BYTES} bytes — split it into several files"
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "{origin}:1: not UTF-8 text (byte {}) — save the file as UTF-8",
            e.utf8_error().valid_up_to()
        )
    })
}

/// The YAML files of an embedded folder and its subfolders (`overrides/asks/` holds the asks,
/// a file per domain), named by their path in it, in name order.
fn yaml_files_in(dir: &Dir<'_>) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = files_under(dir)
        .into_iter()
        .filter(|f| is_yaml(f.path()))
        .filter_map(|f| {
            Some((
                f.path().display().to_string(),
                f.contents_utf8()?.to_string(),
            ))
        })
        .collect();
    files.sort();
    files
}

/// Every file of an embedded folder, its subfolders' too (each file's path is relative to the
/// embedded folder).
fn files_under<'a>(dir: &Dir<'a>) -> Vec<&'a include_dir::File<'a>> {
    let mut files: Vec<_> = dir.files().collect();
    for sub in dir.dirs() {
        files.extend(files_under(sub));
    }
    files
}

fn is_yaml(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("yaml") | Some("yml")
    )
}

/// The YAML files of a directory in name order; a missing directory is an error naming it.
pub fn yaml_paths(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| anyhow!("{}: cannot read the directory: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && is_yaml(p))
        .collect();
    paths.sort();
    Ok(paths)
}

/// Parses YAML text strictly ([`yaml::scan`]: size, depth, duplicate keys), validates it against
/// a JSON Schema, and deserializes it; also returns where each key sits.
///
/// Errors read `FILE:LINE: what is wrong — how to fix`, one per line, at the line of the
/// occurrence that is wrong.
pub fn parse_checked<T: serde::de::DeserializeOwned>(
    text: &str,
    origin: &str,
    schema: &str,
) -> Result<(T, LineMap)> {
    parse_checked_file(text, origin, schema, "docs/overlays.md")
}

/// [`parse_checked`] for any operator file and its schema; an error points to `guide` for the
/// fields and their types.
pub fn parse_checked_file<T: serde::de::DeserializeOwned>(
    text: &str,
    origin: &str,
    schema: &str,
    guide: &str,
) -> Result<(T, LineMap)> {
    let lines = yaml::scan(text, origin).map_err(|e| anyhow!(one_line(&e.to_string())))?;
    let value: Value = if text.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        yaml_serde::from_str(text).map_err(|e| {
            let line = e.location().map(|l| l.line()).unwrap_or(1);
            anyhow!(
                "{origin}:{line}: invalid YAML: {}",
                one_line(&e.to_string())
            )
        })?
    };
    let value = if value.is_null() {
        Value::Object(Default::default())
    } else {
        value
    };
    let fresh;
    let compiled: &Compiled = if schema == OVERLAY_SCHEMA {
        &OVERLAY
    } else if schema == DECLARATIONS_SCHEMA {
        &DECLARATIONS
    } else {
        fresh = Compiled::new(schema);
        &fresh
    };
    let (schema, validator) = (&compiled.schema, &compiled.validator);
    let mut errors: Vec<(usize, String)> = Vec::new();
    for err in validator.iter_errors(&value).take(20) {
        let path: Vec<String> = err
            .instance_path()
            .into_iter()
            .map(|seg| match seg {
                jsonschema::paths::LocationSegment::Property(p) => p.to_string(),
                jsonschema::paths::LocationSegment::Index(i) => i.to_string(),
            })
            .collect();
        if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } =
            err.kind()
        {
            let known = known_fields(schema, err.schema_path().as_str());
            for field in unexpected {
                let mut at = path.clone();
                at.push(field.clone());
                errors.push((lines.line_of(&at), unknown_field(field, &path, &known)));
            }
            continue;
        }
        let at = if path.is_empty() {
            String::new()
        } else {
            format!(" (at {})", path.join("."))
        };
        // A key that breaks `propertyNames` is named at its own line, not its parent's.
        let mut path = path;
        if let jsonschema::error::ValidationErrorKind::PropertyNames { error } = err.kind()
            && let Some(key) = error.instance().as_str()
        {
            path.push(key.to_string());
        }
        errors.push((
            lines.line_of(&path),
            format!("{err}{at} — see {guide} for the fields and their types"),
        ));
    }
    if !errors.is_empty() {
        errors.sort();
        errors.dedup();
        // One line per error, each naming file and line: a key or value of the file holding
        // line breaks or other control characters (found by fuzzing) shows them escaped.
        let text: Vec<String> = errors
            .into_iter()
            .map(|(line, what)| format!("{origin}:{line}: {}", one_line(&what)))
            .collect();
        return Err(anyhow!(text.join("\n")));
    }
    let content = serde_json::from_value(value).map_err(|e| anyhow!("{origin}:1: {e}"))?;
    Ok((content, lines))
}

/// A bundled schema, parsed and compiled.
struct Compiled {
    schema: Value,
    validator: jsonschema::Validator,
}

impl Compiled {
    fn new(schema: &str) -> Compiled {
        let schema: Value = serde_json::from_str(schema).expect("bundled schema is valid JSON");
        let validator = jsonschema::validator_for(&schema).expect("bundled schema compiles");
        Compiled { schema, validator }
    }
}

/// The two schemas, compiled once per process: compiling one costs more than validating a
/// file against it, and every file (at startup and each reload) is validated.
static OVERLAY: LazyLock<Compiled> = LazyLock::new(|| Compiled::new(OVERLAY_SCHEMA));
static DECLARATIONS: LazyLock<Compiled> = LazyLock::new(|| Compiled::new(DECLARATIONS_SCHEMA));

/// The property names the schema allows next to an unexpected one: the `properties` of the
/// schema object that holds the failing `additionalProperties`.
fn known_fields(schema: &Value, keyword_path: &str) -> Vec<String> {
    let parent = keyword_path
        .strip_suffix("/additionalProperties")
        .unwrap_or(keyword_path);
    schema
        .pointer(parent)
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// "unknown field `relatd` in actions.x — did you mean `related`?"
/// An error's words on one line: a key or value of the file holding line breaks or other
/// control characters (found by fuzzing) shows them escaped, so that every line of an error
/// names its file and line.
fn one_line(what: &str) -> String {
    let mut out = String::with_capacity(what.len());
    for c in what.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

fn unknown_field(raw: &str, parent: &[String], known: &[String]) -> String {
    // The key as written, with line breaks and control characters shown as escapes (a key of
    // line breaks split the message over lines that named no file; found by fuzzing), and cut.
    let shown: String = raw.escape_debug().collect();
    let field = match shown.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &shown[..at]),
        None => shown,
    };
    let field = field.as_str();
    let place = if parent.is_empty() {
        "at the top level".to_string()
    } else {
        format!("in {}", parent.join(".").escape_debug())
    };
    let best = known
        .iter()
        .map(|k| {
            (
                strsim::jaro_winkler(&raw.to_ascii_lowercase(), &k.to_ascii_lowercase()),
                k,
            )
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some((score, k)) if score >= 0.8 => {
            format!("unknown field `{field}` {place} — did you mean `{k}`?")
        }
        _ if !known.is_empty() => format!(
            "unknown field `{field}` {place} — the fields here are: {}",
            known.join(", ")
        ),
        _ => format!("unknown field `{field}` {place} — remove it"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_files_load() {
        let layers = Layers::builtin().expect("built-in overlays and declarations are valid");
        assert!(!layers.overlays.is_empty());
        assert!(!layers.declarations.is_empty());
    }

    #[test]
    fn error_names_file_and_line() {
        let parse = |text: &str, origin: &str| {
            parse_checked::<OverlayFile>(text, origin, OVERLAY_SCHEMA)
                .unwrap_err()
                .to_string()
        };
        let msg = parse("actions:\n  container.list:\n    title: 42\n", "my.yaml");
        assert!(msg.starts_with("my.yaml:3:"), "{msg}");
        let msg = parse(
            "actions:\n  container.list:\n    title: ok\n    bogus: 1\n",
            "my.yaml",
        );
        assert!(
            msg.starts_with("my.yaml:4: unknown field `bogus` in actions.container.list"),
            "{msg}"
        );
        let msg = parse("actions: [\n", "bad.yaml");
        assert!(
            msg.starts_with("bad.yaml:") && msg.contains("invalid YAML"),
            "{msg}"
        );
    }

    #[test]
    fn unknown_fields_suggest_the_closest() {
        let text = "actions:\n  container.list:\n    relatd: [container.get]\n";
        let msg = parse_checked::<OverlayFile>(text, "o.yaml", OVERLAY_SCHEMA)
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("o.yaml:3: unknown field `relatd`")
                && msg.contains("did you mean `related`?"),
            "{msg}"
        );
        let msg = parse_checked::<OverlayFile>("action: {}\n", "o.yaml", OVERLAY_SCHEMA)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("did you mean `actions`?"), "{msg}");
    }

    #[test]
    fn the_wrong_occurrence_is_named() {
        // The same ID under two sections: the bad one is the second.
        let text = "domains:\n  container:\n    title: Containers\nactions:\n  container.list:\n    title: 7\n";
        let msg = parse_checked::<OverlayFile>(text, "o.yaml", OVERLAY_SCHEMA)
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("o.yaml:6:"), "{msg}");
    }

    /// Editors show these: every field has a description, and every example is valid.
    #[test]
    fn schemas_describe_every_field_with_valid_examples() {
        fn walk(node: &Value, at: &str, checked: &mut usize) {
            let Some(obj) = node.as_object() else { return };
            if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                for (name, sub) in props {
                    assert!(
                        sub.get("description").and_then(Value::as_str).is_some(),
                        "{at}.{name} has no description"
                    );
                    walk(sub, &format!("{at}.{name}"), checked);
                }
            }
            if let Some(examples) = obj.get("examples").and_then(Value::as_array) {
                let validator = jsonschema::validator_for(node).unwrap();
                for e in examples {
                    assert!(validator.is_valid(e), "{at}: example {e} is invalid");
                    *checked += 1;
                }
            }
            for key in ["additionalProperties", "items"] {
                if let Some(sub) = obj.get(key) {
                    walk(sub, &format!("{at}.{key}"), checked);
                }
            }
        }
        for schema in [OVERLAY_SCHEMA, DECLARATIONS_SCHEMA] {
            let schema: Value = serde_json::from_str(schema).unwrap();
            let mut checked = 0;
            walk(&schema, "", &mut checked);
            assert!(checked > 10, "{checked} examples");
        }
    }
}
