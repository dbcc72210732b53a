//! The flat client profile's checker over served tools: what a client that maps only the first
//! level can map of a tool's input and output schemas (`arcane_catalog::unmappable`, run over
//! rmcp's `Tool`). The profile's schemas and decoding are `arcane_catalog`'s (its `profile.rs`).

use rmcp::model::Tool;
use serde_json::Value;

use arcane_catalog::{Side, unmappable};

/// The checker's verdict on one tool.
#[derive(Debug, Clone, Default)]
pub struct ToolCheck {
    /// What does not map in the input schema.
    pub input: Vec<String>,
    /// What does not map in the output schema (empty when none is declared).
    pub output: Vec<String>,
    /// Whether the tool declares an output schema.
    pub has_output: bool,
}

impl ToolCheck {
    /// Whether everything the tool declares maps.
    pub fn maps(&self) -> bool {
        self.input.is_empty() && self.output.is_empty()
    }
}

/// Runs [`unmappable`] over a served tool's input and output schemas.
pub fn check_tool(tool: &Tool) -> ToolCheck {
    let input = unmappable(&Value::Object((*tool.input_schema).clone()), Side::Input);
    let (output, has_output) = match &tool.output_schema {
        Some(s) => (
            unmappable(&Value::Object((**s).clone()), Side::Output),
            true,
        ),
        None => (Vec::new(), false),
    };
    ToolCheck {
        input,
        output,
        has_output,
    }
}
