//! The markdown crate's one integration-test binary (`cargo test --workspace --test markdown`),
//! laid out as the server's `tests/tests.rs`: every `tests/*.rs` file is a module here, and the
//! root's `every_test_file_is_a_module` fails when one is not.

// Support: rendered Markdown read back the way a GFM reader reads it.
mod support;

// Tests.
mod borders;
mod escape;
mod props;
mod render;
