//! arcane-token-audit: what arcane-mcp's tool definitions cost in a model's context, per
//! surface, and what its main read results cost against their JSON, in o200k tokens; each
//! checked against a committed baseline (docs/measurements.md). A developer tool: the shipped
//! server does not link the tokenizer.

mod baseline;
mod command;
mod definitions;
mod results;
mod tokens;

pub use baseline::MAX_DRIFT;
pub use command::{Cli, run};
pub use definitions::{Audit, SurfaceFigures, drift, measure, table};
pub use results::{
    RESULT_ACTIONS, ResultFigures, ResultsAudit, measure_results, results_drift, results_table,
};
pub use tokens::tokens;
