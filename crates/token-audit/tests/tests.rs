//! The token audit's one integration-test binary (`cargo test --workspace --test token-audit`),
//! laid out as the server's `tests/tests.rs`: every `tests/*.rs` file is a module here, and the
//! root's `every_test_file_is_a_module` fails when one is not.

// Tests.
mod borders;
mod cli;
