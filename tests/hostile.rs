//! The threat model in one place: hostile values from Arcane, hostile client arguments and a
//! misbehaving upstream, each proven harmless through the real binary against the simulator
//! or a tiny fake upstream. See `docs/security.md`.

#[path = "server_support/mod.rs"]
mod server_support;

#[path = "hostile/engine.rs"]
mod engine;
#[path = "hostile/text.rs"]
mod text;
