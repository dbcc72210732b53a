//! MCP resources: the catalog (`arcane://tools`), Docker state as redacted views, and guides.

pub mod guides;
pub mod redact;
pub mod tools;
