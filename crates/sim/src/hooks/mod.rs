//! The simulator's test hooks (`/__sim/…`, outside `/api`, no auth), both ends of their
//! protocol: the routes the simulator serves (`serve.rs`) and the typed client tests drive them
//! with ([`HooksClient`]). `crates/sim/README.md` ("Test hooks") describes each hook.

mod client;
pub(crate) mod serve;

pub use client::*;
