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

use anyhow::{Result, anyhow};
use include_dir::{Dir, include_dir};
use serde::Deserialize;
use serde_json::Value;

use super::{EncodedJson, FollowUp, HandlerSpec, ResultKind, Widening};

static BUILTIN_OVERRIDES: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/overrides");
static BUILTIN_DECLARATIONS: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/catalog");
const OVERLAY_SCHEMA: &str = include_str!("../../schemas/overlay.schema.json");
const DECLARATIONS_SCHEMA: &str = include_str!("../../schemas/declarations.schema.json");

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
    pub default_sort: Option<String>,
    pub result: Option<ResultKind>,
    /// Withdraw the action from the generic executor; the value is the reason.
    pub exclude: Option<String>,
    pub widen: Option<Vec<Widening>>,
    /// Per-parameter description overrides.
    pub params: Option<BTreeMap<String, String>>,
    /// String or multipart parameters that carry JSON text: their inner fields become ordinary
    /// parameters and the executor encodes them back (docs/encoded-parameters.md). A later
    /// file's list replaces an earlier one; an empty list turns the encoding off.
    pub encoded_json: Option<Vec<EncodedJson>>,
    /// A minimal example call (the arguments, as a client sends them).
    pub example: Option<Value>,
    /// Result fields whose secret value is the very purpose of the action (a new API key):
    /// shown once, with a note to store it, whatever redaction does elsewhere.
    pub reveals_secret: Option<Vec<String>>,
}

/// Corrections for one domain.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DomainOverlay {
    /// Rename every action of the domain into this domain.
    pub rename: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
}

/// One overlay file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverlayFile {
    #[serde(default)]
    pub domains: BTreeMap<String, DomainOverlay>,
    #[serde(default)]
    pub actions: BTreeMap<String, ActionOverlay>,
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

/// A loaded file with its origin, for error messages.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    pub origin: String,
    pub content: T,
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
        let mut layers = Layers::default();
        for (name, text) in yaml_files_in(&BUILTIN_OVERRIDES) {
            layers.overlays.push(Loaded {
                origin: format!("overrides/{name} (built in)"),
                content: parse_checked(&text, &format!("overrides/{name}"), OVERLAY_SCHEMA)?,
            });
        }
        for (name, text) in yaml_files_in(&BUILTIN_DECLARATIONS) {
            layers.declarations.push(Loaded {
                origin: format!("catalog/{name} (built in)"),
                content: parse_checked(&text, &format!("catalog/{name}"), DECLARATIONS_SCHEMA)?,
            });
        }
        Ok(layers)
    }

    /// Adds an operator's overlay directory (`*.yaml`, `*.yml`, in name order).
    pub fn add_overlay_dir(&mut self, dir: &Path) -> Result<()> {
        for path in yaml_paths(dir)? {
            let text = read(&path)?;
            let origin = path.display().to_string();
            self.overlays.push(Loaded {
                content: parse_checked(&text, &origin, OVERLAY_SCHEMA)?,
                origin,
            });
        }
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
        for path in yaml_paths(dir)?.into_iter().filter(|p| !is_spec(p)) {
            let text = read(&path)?;
            let origin = path.display().to_string();
            self.declarations.push(Loaded {
                content: parse_checked(&text, &origin, DECLARATIONS_SCHEMA)?,
                origin,
            });
        }
        Ok(())
    }
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| anyhow!("{}: cannot read: {e}", path.display()))
}

fn yaml_files_in(dir: &Dir<'_>) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = dir
        .files()
        .filter(|f| is_yaml(f.path()))
        .filter_map(|f| {
            Some((
                f.path().file_name()?.to_string_lossy().into_owned(),
                f.contents_utf8()?.to_string(),
            ))
        })
        .collect();
    files.sort();
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

/// Parses YAML text, validates it against a JSON Schema, and deserializes it.
///
/// Errors read `FILE:LINE: what is wrong`.
pub fn parse_checked<T: serde::de::DeserializeOwned>(
    text: &str,
    origin: &str,
    schema: &str,
) -> Result<T> {
    let value: Value = if text.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        yaml_serde::from_str(text).map_err(|e| {
            let line = e.location().map(|l| l.line()).unwrap_or(0);
            anyhow!("{origin}:{line}: invalid YAML: {e}")
        })?
    };
    let value = if value.is_null() {
        Value::Object(Default::default())
    } else {
        value
    };
    let schema: Value = serde_json::from_str(schema).expect("bundled schema is valid JSON");
    let validator = jsonschema::validator_for(&schema).expect("bundled schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .take(5)
        .map(|err| {
            let path: Vec<String> = err
                .instance_path()
                .into_iter()
                .map(|seg| match seg {
                    jsonschema::paths::LocationSegment::Property(p) => p.to_string(),
                    jsonschema::paths::LocationSegment::Index(i) => i.to_string(),
                })
                .collect();
            let line = locate_line(text, &path);
            let at = if path.is_empty() {
                String::new()
            } else {
                format!(" (at {})", path.join("."))
            };
            format!("{origin}:{line}: {err}{at}")
        })
        .collect();
    if !errors.is_empty() {
        return Err(anyhow!(errors.join("\n")));
    }
    serde_json::from_value(value).map_err(|e| anyhow!("{origin}:0: {e}"))
}

/// Finds the line of a YAML path (mapping keys and sequence indexes) in block-style YAML.
///
/// A best effort for error messages: block mappings and sequences are followed by indentation;
/// when the path cannot be followed further, the line of the deepest element found is returned.
pub fn locate_line(text: &str, path: &[String]) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let mut start = 0usize; // first line of the current node's body
    let mut end = lines.len();
    let mut min_indent: isize = -1; // children must be indented more than this
    let mut found_line = 1usize;
    for seg in path {
        let mut hit = None;
        let is_index = seg.parse::<usize>().ok();
        let mut seq_count = 0usize;
        let mut child_indent: Option<usize> = None;
        for (i, line) in lines.iter().enumerate().take(end).skip(start) {
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let indent = line.len() - trimmed.len();
            if (indent as isize) <= min_indent {
                break;
            }
            let ci = *child_indent.get_or_insert(indent);
            if indent != ci {
                continue;
            }
            match is_index {
                Some(n) if trimmed.starts_with('-') => {
                    if seq_count == n {
                        hit = Some((i, indent));
                        break;
                    }
                    seq_count += 1;
                }
                _ => {
                    let key = trimmed.trim_start_matches("- ");
                    let key = key
                        .split(':')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .trim_matches(['"', '\'']);
                    if key == seg {
                        hit = Some((i, indent));
                        break;
                    }
                }
            }
        }
        match hit {
            Some((i, indent)) => {
                found_line = i + 1;
                start = i + 1;
                min_indent = indent as isize;
                // A sequence item's own keys sit on the dash line and below it.
                if is_index.is_some() {
                    let mut j = i + 1;
                    while j < lines.len() {
                        let t = lines[j].trim_start();
                        if !t.is_empty() && ((lines[j].len() - t.len()) as isize) <= min_indent {
                            break;
                        }
                        j += 1;
                    }
                    end = j;
                    // Re-scan from the dash line with keys at indent+2.
                    return locate_in_item(
                        &lines,
                        i,
                        end,
                        indent,
                        &path[path.iter().position(|p| p == seg).unwrap_or(0) + 1..],
                    )
                    .unwrap_or(found_line);
                }
                let mut j = i + 1;
                while j < lines.len() {
                    let t = lines[j].trim_start();
                    if !t.is_empty()
                        && !t.starts_with('#')
                        && ((lines[j].len() - t.len()) as isize) <= min_indent
                    {
                        break;
                    }
                    j += 1;
                }
                end = j;
            }
            None => return found_line,
        }
    }
    found_line
}

fn locate_in_item(
    lines: &[&str],
    dash: usize,
    end: usize,
    indent: usize,
    rest: &[String],
) -> Option<usize> {
    if rest.is_empty() {
        return Some(dash + 1);
    }
    // Rebuild the item as its own block with the dash replaced by a space, then recurse.
    let mut block = String::new();
    for (k, line) in lines.iter().enumerate().take(end).skip(dash) {
        if k == dash {
            let mut l = line.to_string();
            l.replace_range(indent..indent + 1, " ");
            block.push_str(&l);
        } else {
            block.push_str(line);
        }
        block.push('\n');
    }
    Some(dash + locate_line(&block, rest))
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
        let text = "actions:\n  container.list:\n    title: 42\n";
        let err = parse_checked::<OverlayFile>(text, "my.yaml", OVERLAY_SCHEMA).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("my.yaml:3:"), "{msg}");
        let text = "actions:\n  container.list:\n    title: ok\n    bogus: 1\n";
        let msg = parse_checked::<OverlayFile>(text, "my.yaml", OVERLAY_SCHEMA)
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("my.yaml:2:") && msg.contains("bogus"),
            "{msg}"
        );
        let msg = parse_checked::<OverlayFile>("actions: [\n", "bad.yaml", OVERLAY_SCHEMA)
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("bad.yaml:") && msg.contains("invalid YAML"),
            "{msg}"
        );
    }

    #[test]
    fn locates_sequence_items() {
        let text = "actions:\n  - id: a.b\n    title: x\n  - id: c.d\n    title: y\n";
        assert_eq!(
            locate_line(text, &["actions".into(), "1".into(), "title".into()]),
            5
        );
        assert_eq!(locate_line(text, &["actions".into(), "0".into()]), 2);
    }
}
