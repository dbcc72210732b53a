//! The engine's integration tests, one binary (as the server's `tests/tests.rs`).

mod borders;
