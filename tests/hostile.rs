//! The threat model in one place (docs/security.md): hostile client arguments, a hostile or
//! misbehaving Arcane, against the real binary, the in-process simulator, or a tiny fake
//! upstream. `engine` covers what reaches Arcane and what is read back (paths, redirects, caps,
//! concurrency, headers); `text` covers what reaches the model (escaping, secrets); `http`
//! covers the Streamable HTTP listener (tokens, sessions, slow clients, logs, the audit log);
//! `team` what one token holder may take of it (connections, bodies, sessions) and how the
//! audit log and the warnings name people.

mod engine;
mod http;
mod team;
mod text;
