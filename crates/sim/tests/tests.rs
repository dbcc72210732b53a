//! The simulator's one integration-test binary (`cargo test -p arcane-sim --test integration`):
//! every `tests/*.rs` file is a module here, with `common` compiled once. `Cargo.toml` turns
//! off test auto-discovery, so a new test file runs only when it is declared here — the root's
//! `every_test_file_is_a_module` (`tests/tests.rs`) fails when one is not.

mod common;

mod auth;
mod cli;
mod client_stream;
mod conformance;
mod faults;
mod http;
mod layout;
mod story;
mod ws;
