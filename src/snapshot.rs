//! The live snapshot: everything a call needs, built in one function so that startup and hot
//! reload share it. `reload::Live<Snapshot>` holds it; a call loads it once and finishes on it.

use std::sync::OnceLock;

use anyhow::Result;
use rmcp::model::Tool;

use crate::config::Surface;
use crate::surface;
use arcane_catalog::Policy;
use arcane_catalog::SearchIndex;
use arcane_catalog::{Action, Catalog};

/// Catalog + search index + tool list + validators + the active policy.
pub struct Snapshot {
    pub catalog: Catalog,
    pub search: SearchIndex,
    pub policy: Policy,
    pub surface: Surface,
    /// The tool definitions of the active surface (computed once per snapshot).
    pub tools: Vec<Tool>,
    /// Output-schema fitting, when output schemas are declared (individual surface, flag on).
    pub fitter: Option<crate::output_schema::OutputFitter>,
    /// One validator per action (same order as `catalog.actions`), compiled on first use so
    /// that startup stays fast.
    validators: Vec<OnceLock<Result<jsonschema::Validator, String>>>,
}

impl Snapshot {
    /// Builds a snapshot of a catalog for a surface and policy.
    pub fn build(catalog: Catalog, surface: Surface, policy: Policy) -> Result<Snapshot> {
        let policy = policy.resolve_preset(&catalog)?;
        let search = SearchIndex::build(&catalog)?;
        for entry in policy.unknown_entries(&catalog) {
            tracing::warn!(
                entry,
                "an exclusion, allow-list or preset entry names no action, tool or domain of the catalog"
            );
        }
        let tools = surface::tools(surface, &catalog, &policy);
        let validators = catalog.actions.iter().map(|_| OnceLock::new()).collect();
        let fitter = (policy.output_schemas && surface == Surface::Individual)
            .then(|| crate::output_schema::OutputFitter::for_profile(&catalog, policy.profile));
        Ok(Snapshot {
            fitter,
            catalog,
            search,
            policy,
            surface,
            tools,
            validators,
        })
    }

    /// The compiled validator of an action's full input schema.
    pub fn validator(&self, action: &Action) -> Result<&jsonschema::Validator, String> {
        let idx = self
            .catalog
            .actions
            .iter()
            .position(|a| a.id == action.id)
            .ok_or_else(|| format!("{} is not in this catalog", action.id))?;
        self.validators[idx]
            .get_or_init(|| {
                jsonschema::draft202012::new(&action.input_schema)
                    .map_err(|e| format!("the input schema of {} does not compile: {e}", action.id))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}
