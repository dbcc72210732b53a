//! The two scopes of OAuth mode (docs/oauth.md#scopes), in a leaf of their own: the
//! resource server and the built-in authorization server both name them.

/// The scope of reading actions, resources and search.
pub const SCOPE_READ: &str = "arcane:read";
/// The scope of every action (destructive ones still need the person's confirmation).
pub const SCOPE_WRITE: &str = "arcane:write";
