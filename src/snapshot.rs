//! The live snapshot: everything a call needs, built in one function so that startup and hot
//! reload share it. `reload::Live<Snapshot>` holds it; a call loads it once and finishes on it.

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
    /// The compiled validators of the actions' input schemas.
    pub validators: arcane_engine::Validators,
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
        let validators = arcane_engine::Validators::for_catalog(&catalog);
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

    /// This snapshot as the engine sees it (`arcane_engine::Scope`).
    pub fn scope(&self) -> arcane_engine::Scope<'_> {
        arcane_engine::Scope {
            catalog: &self.catalog,
            policy: &self.policy,
            validators: &self.validators,
            caller: self,
        }
    }
}

/// The engine names actions as the active surface writes them, and reads parameters in the
/// shape of the active client profile.
impl arcane_engine::Caller for Snapshot {
    fn action_name(&self, action: &Action) -> String {
        surface::call_name(self.surface, action)
    }

    fn unknown_action_hint(&self) -> Option<&str> {
        (self.surface == Surface::Dynamic).then_some(" Search with arcane_find_action.")
    }

    fn action_params(
        &self,
        action: &Action,
        params: serde_json::Map<String, serde_json::Value>,
    ) -> std::result::Result<serde_json::Map<String, serde_json::Value>, String> {
        if self.policy.flat() {
            crate::flat::decode_params(action, params)
        } else {
            Ok(params)
        }
    }
}
