//! arcane-catalog: every capability of Arcane as one immutable list of actions, built from
//! Arcane's OpenAPI document, the hand-written declarations (`catalog/*.yaml`) and the overlays
//! (`overrides/*.yaml`); the search index over it; and the policy that withdraws actions.
//!
//! Pure data and computation: no network, no async runtime, no MCP types (ARCHITECTURE.md).
//! The server decides where the document and the overlay files come from.

mod build;
mod classify;
mod derive;
mod diff;
mod encoded;
mod impact;
mod model;
mod output_fit;
mod output_schema;
mod overlay;
mod policy;
mod profile;
mod prompt;
mod prompt_layers;
mod search;
pub mod semantic;
mod spec;
mod undo;
mod undo_check;
mod vocabulary;
mod yaml;

pub use build::{BuildInput, MAX_TOOL_NAME, build_catalog};
pub use diff::{CatalogDiff, diff};
pub use impact::{Impact, Reclass};
pub use model::{
    Action, BodyEncoding, Catalog, Condition, DiffFrom, Domain, EncodedJson, EncodedParam,
    ErrorHint, Excluded, FollowUp, HandlerSpec, NoEffect, Output, Param, ParamLocation,
    ParamResolver, Preset, Request, ResultKind, Safety, ScopeList, ScopeNote, SearchWords,
    UnmatchedOverlay, Widening,
};
pub use output_fit::{Adjustment, OutputFitter};
pub use output_schema::{declared_types, output_schema, served_output_schema, unwrap_envelope};
pub use overlay::{Layers, parse_checked_file, yaml_paths};
pub use policy::{ClientProfile, Confirmation, Narrowing, Policy, catalog_exclusion};
pub use profile::{
    FlatOutput, JsonTextError, MAX_FIELDS as FLAT_MAX_FIELDS,
    MAX_LIFT_DEPTH as FLAT_MAX_LIFT_DEPTH, Side, input_schema as flat_input_schema,
    params_property as flat_params_property, unmappable,
};
pub use prompt::{
    ArgumentError, CompletionSource, MAX_ARGUMENT_CHARS, Part as PromptPart, Prompt,
    PromptArgument, PromptOverlay, parse_template,
};
pub use search::{
    CLEAR_LEAD, Hit, SearchIndex, Weights, action_words, implicit_asks, is_weak, is_weak_with,
};
pub use spec::{MAX_INLINED_DEPTH, MAX_INLINED_NODES, RefResolver, SpecDoc, SpecFormat};
pub use undo::{Filled, Inverse, Source, Undo};
pub use vocabulary::Vocabulary;
pub use yaml::{
    DATA_FILE as YAML_DATA_FILE, Limits as YamlLimits, MAX_NODES, MAX_SPEC_BYTES, MAX_SPEC_NODES,
    SPEC_FILE as YAML_SPEC_FILE, YamlError, check as check_yaml,
};
