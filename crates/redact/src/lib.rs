//! The one redactor: what counts as a secret, and how it is masked, for every place that
//! shows Arcane's data or a request (safe-mode previews, resources, the text of results,
//! error texts, the audit log). `structuredContent` goes through it only for the server's
//! own credentials, masked by value ([`KnownSecrets`], [`hold_secret`]): otherwise it keeps
//! Arcane's values.
//!
//! What is masked:
//! * environment variables (`KEY=VALUE` strings in arrays under keys such as `env`, `Env`,
//!   `environment`, the entries of a map under those keys, the lines of a `.env` file): the
//!   value of a secret-named variable, and a value that looks like a credential
//!   ([`looks_like_credential`]: a PEM block, a long high-entropy string; tokens and URL
//!   passwords inside it by the text rules below). The rest is kept: `LOG_LEVEL=info` and
//!   `REDIS_URL=redis://cache:6379` are the clue to a crash;
//! * values of fields whose name says secret ([`is_secret_name`]: password, secret, token, API
//!   key, credential, private key, cookie, authorization, basic-auth labels…); a `{key|name,
//!   value}` pair whose name says secret or that is marked `isSecret`;
//! * in compose text, the value of `KEY: VALUE` / `KEY=VALUE` lines whose key says secret or
//!   whose value looks like a credential;
//! * in any text: the password of a URL (`scheme://user:PASSWORD@host`, up to the last `@`)
//!   and a web URL's lone user (`https://TOKEN@host`), tokens of a known shape (GitHub, GitLab,
//!   Slack, AWS, Arcane keys…, JWTs), the body of a PEM private key, the value of a
//!   secret-named command-line flag (`--db-password=…`, `--requirepass …`, also as the next
//!   item of an argument array, in text or in JSON), of a secret-named `KEY=VALUE` word (also
//!   `key = value`, after a quote: `-e"K=V"`, `["K=V"]`; a quoted value whole, keys inside a
//!   connection string too), a secret-named key of JSON or of a Python literal written in text
//!   (also escaped: `{\"password\":\"…\"}`), a credential after its scheme
//!   (`Authorization: token …`), a bearer token; a secret word of prose and its value
//!   (`password hunter2`, `the password is: x`), `curl -u user:PW`, `redis-cli -a PW`,
//!   `mysql -pPW`, pairs percent-encoded once more (`password%3DPW`), words spelt with JSON
//!   escapes (`\u0070assword`), quoted `.env` values going on over lines;
//! * by value, wherever they are and in whatever encoding: the credentials held with
//!   [`hold_secret`] (the server's own, a caller's key over HTTP), at least
//!   [`MIN_KNOWN_SECRET_CHARS`] characters long;
//! * for secret domains (`swarm_secret`), the secret's `data`.
//!
//! Parameters (the audit log, previews' multipart parts) are read as JSON where they are JSON
//! text ([`redacted_params`]), so the same rules see what they carry.
//!
//! See `docs/security.md` ("Secrets").
//!
//! The modules, lowest first (each imports only those above it): `known.rs` (the mask, masking
//! by value, fingerprints), `names.rs` (judging by name), `pairs.rs` (a secret's name and value
//! written in text), `text.rs` (the free-text rules, a credential's look), `document.rs` (`.env`
//! and compose text), `json.rs` (walking JSON).

mod document;
mod json;
mod known;
mod names;
mod pairs;
mod text;

pub use document::mask_document;
pub use json::{redact_for, redacted, redacted_params, redacted_view, shown_as_given};
pub use known::{
    KnownSecrets, MASK, MIN_KNOWN_SECRET_CHARS, SecretHold, fingerprint, hold_secret, mask_known,
    mask_known_in, mask_known_view,
};
pub use names::is_secret_name;
pub use text::{looks_like_credential, mask_text, mask_url_credentials};
