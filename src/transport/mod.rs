//! Transports: Streamable HTTP for a team (stdio is served from [`crate::app`]).

pub(crate) mod http;
