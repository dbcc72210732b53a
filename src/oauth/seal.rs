//! Sealed state of the built-in authorization server (`--oauth-issuer self`): client
//! registrations, sign-in forms, codes and tokens are JSON sealed with XChaCha20-Poly1305
//! (RustCrypto's `chacha20poly1305`) under one key, so that any replica holding the key file
//! opens what another made, and no database is needed. Each kind has its own prefix, which is
//! also the associated data: a sealed refresh token does not open as an access token.

use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde::Serialize;
use serde::de::DeserializeOwned;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The longest sealed text opened, and made: the largest thing sealed, a sign-in form holding
/// a client ID at its cap (`clients::MAX_CLIENT_ID`), a redirect URI at its cap and a `state`
/// at its cap, stays below it (a test in clients.rs checks); a longer text is refused before
/// any decoding.
pub const MAX_SEALED: usize = 16 * 1024;

/// What a sealed text is; its prefix names it, so that a token's kind shows (and a secret
/// scanner can find one) without opening it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Client,
    Form,
    Code,
    Access,
    Refresh,
}

impl Kind {
    pub fn prefix(self) -> &'static str {
        match self {
            Kind::Client => "amcp_c_",
            Kind::Form => "amcp_f_",
            Kind::Code => "amcp_code_",
            Kind::Access => "amcp_at_",
            Kind::Refresh => "amcp_rt_",
        }
    }
}

/// The key of every sealed text (never logged, never shown).
pub struct Sealer {
    cipher: XChaCha20Poly1305,
    /// What the associated data adds to the kind's prefix: the issuer (`bound_to`), so that
    /// two deployments sharing a key file do not open each other's tokens.
    context: String,
    /// Whether the key came from `--state-key-file` (else grants end with the process).
    pub from_file: bool,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer")
            .field("from_file", &self.from_file)
            .finish_non_exhaustive()
    }
}

/// The 32 bytes of a key file: 64 hexadecimal digits or base64 (standard or URL-safe), blanks
/// around it ignored (`openssl rand -hex 32 > state.key` makes one).
pub fn parse_key(text: &str) -> Result<[u8; 32], String> {
    let t = text.trim();
    let bytes = if t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        (0..32)
            .map(|i| u8::from_str_radix(&t[2 * i..2 * i + 2], 16).unwrap_or(0))
            .collect::<Vec<u8>>()
    } else {
        let t = t.trim_end_matches('=');
        base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(t)
            .or_else(|_| B64.decode(t))
            .map_err(|_| {
                "it holds neither 64 hexadecimal digits nor base64 of 32 bytes; make one with \
                 `openssl rand -hex 32`"
                    .to_string()
            })?
    };
    bytes.try_into().map_err(|b: Vec<u8>| {
        format!(
            "it holds {} bytes, not 32; make one with `openssl rand -hex 32`",
            b.len()
        )
    })
}

/// A warning when the key file at `path` may be read by others than its owner (its group or
/// everyone): whoever reads it can make tokens for any Arcane key they hold and open every
/// token and registration.
pub fn key_file_warning(path: &std::path::Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode();
        (mode & 0o077 != 0).then(|| {
            format!(
                "--state-key-file {} may be read by its group or by everyone (mode {:o}): \
                 chmod 600 it",
                path.display(),
                mode & 0o777
            )
        })
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// The key of `--state-key-file`: read, parsed, and a warning logged when others may read the
/// file. One key seals the built-in authorization server's state and (through a key derived
/// from it, `crate::mcp::confirm::RoundTrips::with_key`) the confirmations' request states.
pub fn read_key_file(path: &std::path::Path) -> anyhow::Result<[u8; 32]> {
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("reading --state-key-file {}: {e}", path.display()))?;
    // Read as bytes: a file of raw random bytes (`openssl rand 32`, without -hex) is the usual
    // mistake, and "not valid UTF-8" would not say what the file should hold.
    let text = String::from_utf8(bytes).map_err(|_| {
        anyhow::anyhow!(
            "--state-key-file {}: it is not text, so not the 64 hexadecimal digits a key file \
             holds (raw bytes, as `openssl rand 32` writes, are not read); make one with \
             `openssl rand -hex 32 > {}`",
            path.display(),
            path.display()
        )
    })?;
    let key = parse_key(&text)
        .map_err(|why| anyhow::anyhow!("--state-key-file {}: {why}", path.display()))?;
    if let Some(w) = key_file_warning(path) {
        tracing::warn!("{w}");
    }
    Ok(key)
}

impl Sealer {
    pub fn new(key: [u8; 32], from_file: bool) -> Sealer {
        Sealer {
            cipher: XChaCha20Poly1305::new(&key.into()),
            context: String::new(),
            from_file,
        }
    }

    /// This sealer with its texts bound to `issuer`: what another issuer sealed does not open.
    pub fn bound_to(mut self, issuer: &str) -> Sealer {
        self.context = issuer.to_string();
        self
    }

    /// The associated data of `kind`: its prefix, a NUL, the issuer.
    fn aad(&self, kind: Kind) -> Vec<u8> {
        let mut a = kind.prefix().as_bytes().to_vec();
        if !self.context.is_empty() {
            a.push(0);
            a.extend_from_slice(self.context.as_bytes());
        }
        a
    }

    /// A sealer with a key from the system's randomness.
    pub fn random() -> anyhow::Result<Sealer> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key)
            .map_err(|e| anyhow::anyhow!("no system randomness for the OAuth state key: {e}"))?;
        Ok(Sealer::new(key, false))
    }

    /// `value` sealed as `kind`: its prefix, then base64url of a random 24-byte nonce and the
    /// ciphertext with its tag.
    pub fn seal<T: Serialize>(&self, kind: Kind, value: &T) -> anyhow::Result<String> {
        let plain = serde_json::to_vec(value)?;
        let mut nonce = [0u8; 24];
        getrandom::fill(&mut nonce).map_err(|e| anyhow::anyhow!("no system randomness: {e}"))?;
        let sealed = self
            .cipher
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: &plain,
                    aad: &self.aad(kind),
                },
            )
            .map_err(|_| anyhow::anyhow!("sealing failed"))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        let text = format!("{}{}", kind.prefix(), B64.encode(out));
        // What could not be opened is not handed out.
        anyhow::ensure!(
            text.len() <= MAX_SEALED,
            "the sealed text would be too long"
        );
        Ok(text)
    }

    /// What `text` holds, when it is a `kind` this key sealed and reads as `T`; `None` for
    /// anything else (another key, another kind, altered, too long, not base64).
    pub fn open<T: DeserializeOwned>(&self, kind: Kind, text: &str) -> Option<T> {
        if text.len() > MAX_SEALED {
            return None;
        }
        let body = text.strip_prefix(kind.prefix())?;
        let raw = B64.decode(body).ok()?;
        if raw.len() < 24 + 16 {
            return None;
        }
        let (nonce, sealed) = raw.split_at(24);
        let nonce: [u8; 24] = nonce.try_into().ok()?;
        let plain = self
            .cipher
            .decrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: sealed,
                    aad: &self.aad(kind),
                },
            )
            .ok()?;
        serde_json::from_slice(&plain).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn a_sealed_text_opens_only_as_its_kind_under_its_key() {
        let s = Sealer::new([7; 32], true);
        let t = s.seal(Kind::Refresh, &json!({"u": "alice"})).unwrap();
        assert!(t.starts_with("amcp_rt_"));
        assert_eq!(
            s.open::<Value>(Kind::Refresh, &t).unwrap(),
            json!({"u": "alice"})
        );
        // Another kind, even with the prefix swapped: the associated data differs.
        let swapped = t.replacen("amcp_rt_", "amcp_at_", 1);
        assert!(s.open::<Value>(Kind::Access, &swapped).is_none());
        assert!(
            Sealer::new([8; 32], true)
                .open::<Value>(Kind::Refresh, &t)
                .is_none()
        );
        // One changed character anywhere in the body.
        let mut bytes = t.clone().into_bytes();
        let at = bytes.len() - 3;
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(bytes).unwrap();
        assert!(s.open::<Value>(Kind::Refresh, &altered).is_none());
        assert!(s.open::<Value>(Kind::Refresh, "amcp_rt_").is_none());
        assert!(
            s.open::<Value>(Kind::Refresh, &"A".repeat(MAX_SEALED + 1))
                .is_none()
        );
        // Two seals of one value differ (a fresh nonce each).
        assert_ne!(t, s.seal(Kind::Refresh, &json!({"u": "alice"})).unwrap());
    }

    #[test]
    fn a_sealed_text_opens_only_at_its_issuer() {
        let a = Sealer::new([7; 32], true).bound_to("https://a.example");
        let b = Sealer::new([7; 32], true).bound_to("https://b.example");
        let t = a.seal(Kind::Access, &json!({"u": "alice"})).unwrap();
        assert!(a.open::<Value>(Kind::Access, &t).is_some());
        assert!(b.open::<Value>(Kind::Access, &t).is_none());
        assert!(
            Sealer::new([7; 32], true)
                .open::<Value>(Kind::Access, &t)
                .is_none()
        );
        assert!(
            a.seal(Kind::Form, &json!({"x": "y".repeat(MAX_SEALED)}))
                .is_err()
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_key_file_others_may_read_is_warned_of() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.key");
        std::fs::write(&path, "ab".repeat(32)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(key_file_warning(&path).unwrap().contains("chmod 600"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(key_file_warning(&path), None);
    }

    #[test]
    fn key_files_hold_hex_or_base64_of_32_bytes() {
        assert_eq!(parse_key(&"ab".repeat(32)).unwrap(), [0xab; 32]);
        assert_eq!(
            parse_key(&format!(" {}\n", B64.encode([3u8; 32]))).unwrap(),
            [3; 32]
        );
        assert_eq!(
            parse_key(&base64::engine::general_purpose::STANDARD.encode([250u8; 32])).unwrap(),
            [250; 32]
        );
        assert!(parse_key("short").unwrap_err().contains("openssl rand"));
        assert!(parse_key(&"ab".repeat(16)).unwrap_err().contains("not 32"));
    }
}
