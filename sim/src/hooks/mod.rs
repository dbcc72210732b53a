//! The simulator's test hooks (`/__sim/…`, outside `/api`, no auth): the typed client tests
//! drive them with. `sim/README.md` ("Test hooks") describes each hook.

mod client;

pub use client::*;
