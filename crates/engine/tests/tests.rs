//! The engine's one integration-test binary (`cargo test -p arcane-engine --test engine`), laid
//! out as the server's `tests/tests.rs`: every `tests/*.rs` file is a module here.

// Support: the finder of Arcane's documents and the hang guard, shared with the server's tests.
use arcane_test_support as fixtures;

// Tests.
mod borders;
mod feed;
mod handlers_ws;
mod limits;
