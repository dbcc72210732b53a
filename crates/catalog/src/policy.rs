//! Which actions the server serves: read-only mode and exclusions withdraw actions from tool
//! lists, search, resources and calls alike (enforced server-side, not only as hints).

use crate::model::{Action, Catalog};

/// The shapes of tool schemas and results, for what a client can map (docs/output-schemas.md).
/// A profile changes only shapes, never what a call does. With the `clap` feature it is a
/// command-line value (`--client-profile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ClientProfile {
    /// Schemas and results as Arcane's document describes them (nested objects, arrays).
    #[default]
    Standard,
    /// First-level only, for clients such as Salesforce Agentforce that map only top-level
    /// fields: nested inputs are JSON-text parameters, results are lifted to top-level fields.
    #[cfg_attr(feature = "clap", value(alias = "agentforce"))]
    Flat,
}

impl ClientProfile {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientProfile::Standard => "standard",
            ClientProfile::Flat => "flat",
        }
    }
}

/// The active withdrawal rules.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// `--read-only`: every mutating action is withdrawn.
    pub read_only: bool,
    /// `--safe-mode`: mutating calls answer with a preview instead of being sent.
    pub safe_mode: bool,
    /// `--exclude-tools` entries, trimmed, non-empty: action IDs, tool names or domains.
    pub exclude: Vec<String>,
    /// `--output-schemas`: declare and enforce output schemas on the individual surface.
    pub output_schemas: bool,
    /// `--client-profile`: the shapes of schemas and results (never what a call does).
    pub profile: ClientProfile,
}

impl Policy {
    /// A policy from the configured settings.
    pub fn new(read_only: bool, safe_mode: bool, exclude: &[String]) -> Policy {
        Policy {
            read_only,
            safe_mode,
            exclude: exclude
                .iter()
                .map(|e| e.trim().to_string())
                .filter(|e| !e.is_empty())
                .collect(),
            output_schemas: false,
            profile: ClientProfile::Standard,
        }
    }

    /// The same policy with output schemas on or off.
    pub fn with_output_schemas(mut self, on: bool) -> Policy {
        self.output_schemas = on;
        self
    }

    /// The same policy with a client profile.
    pub fn with_profile(mut self, profile: ClientProfile) -> Policy {
        self.profile = profile;
        self
    }

    /// Whether the flat client profile is active.
    pub fn flat(&self) -> bool {
        self.profile == ClientProfile::Flat
    }

    /// Whether an action's tool declares an output schema: on the individual surface, with
    /// output schemas on, and not for a mutating action in safe mode (it answers a preview).
    pub fn declares_output_schema(&self, a: &Action) -> bool {
        self.output_schemas && !(self.safe_mode && a.mutating)
    }

    /// Why an action is withdrawn, or `None` when it is served.
    pub fn withdrawn(&self, a: &Action) -> Option<String> {
        if self.read_only && a.mutating {
            return Some(format!(
                "{} changes state and the server runs in read-only mode (ARCANE_MCP_READ_ONLY); \
                 only reading actions are served",
                a.id
            ));
        }
        let entry = self.exclude.iter().find(|e| matches_entry(e, a))?;
        Some(format!(
            "{} is excluded by the server's configuration (ARCANE_MCP_EXCLUDE_TOOLS entry {entry:?})",
            a.id
        ))
    }

    /// Whether an action is served.
    pub fn serves(&self, a: &Action) -> bool {
        self.withdrawn(a).is_none()
    }

    /// Exclusion entries that name no action or domain of the catalog (worth a warning).
    pub fn unknown_entries<'a>(&'a self, catalog: &Catalog) -> Vec<&'a str> {
        self.exclude
            .iter()
            .filter(|e| !catalog.actions.iter().any(|a| matches_entry(e, a)))
            .map(String::as_str)
            .collect()
    }
}

/// An exclusion entry names an action (ID, tool names, operationId) or its whole domain
/// (`container` or `arcane_container`).
fn matches_entry(entry: &str, a: &Action) -> bool {
    let stripped = entry.strip_prefix("arcane_").unwrap_or(entry);
    entry == a.id
        || stripped == a.id
        || stripped == a.domain
        || entry == a.individual_tool_name()
        || a.operation_id.as_deref() == Some(entry)
}

/// The reason an unresolvable name is not served when it names an operation the catalog
/// excludes (an overlay exclusion), by ID or operationId.
pub fn catalog_exclusion<'a>(catalog: &'a Catalog, name: &str) -> Option<&'a str> {
    let name = name.trim();
    catalog
        .excluded
        .iter()
        .find(|e| {
            e.operation_id == name
                || e.id.as_deref().is_some_and(|id| {
                    id == name
                        || name
                            .strip_prefix("arcane_")
                            .is_some_and(|rest| rest == id || rest == id.replacen('.', "_", 1))
                })
        })
        .map(|e| e.reason.as_str())
}
