//! The redactor's one integration-test binary (`cargo test -p arcane-redact --test redact`),
//! laid out as the server's `tests/tests.rs`: every `tests/*.rs` file is a module here.

mod borders;
mod redaction;
