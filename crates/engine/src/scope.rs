//! What the engine needs of the server's current state, passed in by the caller: the catalog,
//! the policy (with the client profile, whose parameters the engine decodes itself through
//! `arcane_catalog`), the compiled validators, and how the calling surface names actions. The
//! engine knows no surface or snapshot of its own.

use std::sync::OnceLock;

use arcane_catalog::Policy;
use arcane_catalog::{Action, Catalog};

/// The calling surface, as the engine sees it.
pub trait Caller: Sync {
    /// An action's name as the calling surface writes it (in hints and suggestions).
    fn action_name(&self, action: &Action) -> String;
    /// What the text of an unknown name adds at its end (where to search), if anything.
    fn unknown_action_hint(&self) -> Option<&str>;
}

/// One call's view of the server's state; everything borrowed from one snapshot.
#[derive(Clone, Copy)]
pub struct Scope<'a> {
    pub catalog: &'a Catalog,
    pub policy: &'a Policy,
    pub validators: &'a Validators,
    pub caller: &'a dyn Caller,
}

impl Scope<'_> {
    /// A served action of a domain, by name, as the calling surface writes it.
    pub fn served(&self, domain: &str, names: &[&str]) -> Option<String> {
        names.iter().find_map(|n| {
            let a = self.catalog.get(&format!("{domain}.{n}"))?;
            self.policy.serves(a).then(|| self.caller.action_name(a))
        })
    }
}

/// One validator per action of a catalog (same order as `catalog.actions`), compiled on first
/// use so that startup stays fast.
pub struct Validators(Vec<OnceLock<Result<jsonschema::Validator, ValidatorError>>>);

/// Why an action has no validator; the `Display` is one sentence for the validation error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidatorError {
    /// The action is not one of the catalog the validators were made for.
    #[error("{action} is not in this catalog")]
    NotInCatalog { action: String },
    /// The catalog has more actions than the validators have slots.
    #[error("{action} has no validator slot")]
    NoSlot { action: String },
    /// The action's input schema is not a valid JSON Schema.
    #[error("the input schema of {action} does not compile: {detail}")]
    DoesNotCompile { action: String, detail: String },
}

impl Validators {
    /// Empty slots for every action of `catalog`.
    pub fn for_catalog(catalog: &Catalog) -> Validators {
        Validators(catalog.actions.iter().map(|_| OnceLock::new()).collect())
    }

    /// The compiled validator of an action's full input schema.
    pub fn get(
        &self,
        catalog: &Catalog,
        action: &Action,
    ) -> Result<&jsonschema::Validator, ValidatorError> {
        let idx = catalog
            .actions
            .iter()
            .position(|a| a.id == action.id)
            .ok_or_else(|| ValidatorError::NotInCatalog {
                action: action.id.clone(),
            })?;
        self.0
            .get(idx)
            .ok_or_else(|| ValidatorError::NoSlot {
                action: action.id.clone(),
            })?
            .get_or_init(|| {
                jsonschema::draft202012::new(&action.request.input_schema).map_err(|e| {
                    ValidatorError::DoesNotCompile {
                        action: action.id.clone(),
                        detail: e.to_string(),
                    }
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}
