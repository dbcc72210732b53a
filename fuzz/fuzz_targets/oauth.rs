//! Fuzzes what OAuth resource-server mode reads from outside (docs/oauth.md): an access token
//! (`header_of`, then `validate` against a fixed RSA key), a JWKS document (`keys_of`) and the
//! users file (`users::parse`); and what the built-in authorization server (`--oauth-issuer
//! self`) reads: a registration (`clients::register`), a sealed token (`Sealer::open`), a
//! query or form (`issuer::params`) and a PKCE verifier. The input's first byte chooses which.
//!
//! Invariants: no panic; no token is accepted — the fuzzer holds no private key, so an
//! accepted token would be a forgery (`none`, HMAC with the public key, a confused parser); a
//! JWKS yields at most as many keys as its `keys` array holds; a refused users file's errors
//! are lines of `fuzz.yaml:LINE: …`, and an accepted one's rules have non-empty keys; an
//! accepted registration's client ID opens under the key and holds 1 to 8 redirect URIs that
//! each pass `redirect_ok`; no fuzzed text opens as any sealed kind (that would be a forgery
//! of the AEAD tag), and a text sealed from the input opens as itself and only as its kind.
#![no_main]

use arcane_mcp::oauth::seal::{Kind, Sealer};
use arcane_mcp::oauth::{clients, header_of, issuer, provider::keys_of, users, validate};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// A 2048-bit RSA public key (RFC 7517 §A.1's example key).
const JWK: &str = r#"{"kty":"RSA","kid":"2011-04-29","alg":"RS256","e":"AQAB","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"}"#;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let sealer = Sealer::new([42; 32], true);
    const KINDS: [Kind; 5] = [Kind::Client, Kind::Form, Kind::Code, Kind::Access, Kind::Refresh];
    match which % 6 {
        3 => {
            if let Ok(v) = clients::register(&sealer, rest) {
                let uris = v["redirect_uris"].as_array().unwrap();
                assert!((1..=clients::MAX_REDIRECTS).contains(&uris.len()));
                assert!(uris.iter().all(|u| clients::redirect_ok(u.as_str().unwrap()).is_ok()));
                let id = v["client_id"].as_str().unwrap();
                assert!(sealer.open::<Value>(Kind::Client, id).is_some());
                assert!(sealer.open::<Value>(Kind::Access, id).is_none());
            }
            return;
        }
        4 => {
            let text = String::from_utf8_lossy(rest);
            for k in KINDS {
                assert!(sealer.open::<Value>(k, &text).is_none(), "a forged {k:?}: {text:?}");
            }
            let value = Value::String(text.into_owned());
            let sealed = sealer.seal(Kind::Refresh, &value).unwrap();
            assert_eq!(sealer.open::<Value>(Kind::Refresh, &sealed).as_ref(), Some(&value));
            for k in [Kind::Client, Kind::Form, Kind::Code, Kind::Access] {
                let as_other = sealed.replacen(Kind::Refresh.prefix(), k.prefix(), 1);
                assert!(sealer.open::<Value>(k, &as_other).is_none());
            }
            return;
        }
        5 => {
            let _ = issuer::params(rest);
            let text = String::from_utf8_lossy(rest);
            let mid = text.char_indices().nth(text.chars().count() / 2).map_or(text.len(), |(i, _)| i);
            let (a, b) = text.split_at(mid);
            let _ = issuer::pkce_ok(a, b);
            return;
        }
        _ => {}
    }
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match which % 3 {
        0 => {
            let set: Value = serde_json::from_str(&format!(r#"{{"keys":[{JWK}]}}"#)).unwrap();
            let set = keys_of(&set).unwrap();
            if let Ok(header) = header_of(text) {
                let jwk = &set.keys[0];
                let accepted = validate(text, &header, jwk, "https://idp.example", "https://mcp.example/mcp");
                assert!(accepted.is_err(), "a token without the private key was accepted: {text:?}");
            }
        }
        1 => {
            if let Ok(doc) = serde_json::from_str::<Value>(text) {
                if let Some(set) = keys_of(&doc) {
                    let n = doc["keys"].as_array().map_or(0, Vec::len);
                    assert!(set.keys.len() <= n);
                }
            }
        }
        _ => {
            let env = |name: &str| (name == "KEY").then(|| "k".to_string());
            match users::parse(text, "fuzz.yaml", std::path::Path::new("/nonexistent"), &env) {
                Ok(rules) => assert!(rules.iter().all(|r| !r.key.is_empty())),
                Err(e) => {
                    for line in e.to_string().lines() {
                        let rest = line
                            .strip_prefix("fuzz.yaml:")
                            .unwrap_or_else(|| panic!("an error line without file: {line:?}"));
                        let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
                        assert!(!n.is_empty(), "an error line without a line number: {line:?}");
                    }
                }
            }
        }
    }
});
