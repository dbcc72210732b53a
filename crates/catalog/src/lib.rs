//! arcane-catalog: every capability of Arcane as one immutable list of actions, built from
//! Arcane's OpenAPI document, the hand-written declarations (`catalog/*.yaml`) and the overlays
//! (`overrides/*.yaml`); the search index over it; and the policy that withdraws actions.
//!
//! Pure data and computation: no network, no async runtime, no MCP types (ARCHITECTURE.md).
//! The server decides where the document and the overlay files come from.

mod build;
mod derive;
mod diff;
mod encoded;
mod model;
mod overlay;
mod policy;
mod search;
mod spec;
mod yaml;

pub use build::{BuildInput, MAX_TOOL_NAME, build_catalog};
pub use diff::{CatalogDiff, diff};
pub use model::{
    Action, BodyEncoding, Catalog, Condition, Domain, EncodedJson, EncodedParam, ErrorHint,
    Excluded, FollowUp, HandlerSpec, NoEffect, Param, ParamLocation, ParamResolver, ResultKind,
    UnmatchedOverlay, Widening,
};
pub use overlay::{Layers, Preset, Vocabulary};
pub use policy::{ClientProfile, Policy, catalog_exclusion};
pub use search::{Hit, SearchIndex};
pub use spec::{RefResolver, SpecDoc};
