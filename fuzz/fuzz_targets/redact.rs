//! Fuzzes the redactor (`crates/redact`): values of any shape (the input as JSON, also read
//! per domain), free text, downloaded documents, URLs, and masking by value.
//!
//! Invariants: no panic; redacting a value is idempotent (a second pass finds nothing the first
//! left: anything it found would be a secret the first pass missed); a view is borrowed exactly when
//! nothing was masked (text masking is bounded, not idempotent); a known credential (any value of at least `MIN_KNOWN_SECRET_CHARS`
//! characters) is gone from a text after masking, as written and percent-encoded, and no
//! masking grows a text past one mask per character.
#![no_main]

use std::borrow::Cow;

use arcane_redact::{
    KnownSecrets, MASK, mask_document, mask_text, mask_url_credentials, redacted, redacted_view,
};
use libfuzzer_sys::fuzz_target;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;

const DOMAINS: [&str; 4] = ["container", "project", "swarm_secret", "environment"];

fn bounded(input: &str, out: &str) {
    assert!(
        out.len() <= input.len() * (MASK.len() + 1) + MASK.len(),
        "{} bytes masked to {}",
        input.len(),
        out.len()
    );
}

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);

    if let Ok(v) = serde_json::from_str::<Value>(&s) {
        for domain in DOMAINS {
            let once = redacted(&v, domain);
            assert_eq!(redacted(&once, domain), once, "not idempotent in {domain}");
            match redacted_view(&v, domain) {
                Cow::Borrowed(b) => assert_eq!(b, &once),
                Cow::Owned(o) => {
                    assert_eq!(o, once);
                    assert_ne!(o, v, "copied though nothing was masked");
                }
            }
        }
    }

    // Text masking is not idempotent, by design: a second pass may read `********]}` as a
    // value and take the rest of the word with it. What holds: bounded growth, and no mask of
    // the first pass comes undone.
    for f in [mask_text, mask_document, mask_url_credentials] {
        let once = f(&s).into_owned();
        bounded(&s, &once);
        let twice = f(&once);
        assert!(
            twice.matches(MASK).count() >= once.matches(MASK).count().min(1),
            "{twice:?}"
        );
    }

    // A credential taken from the input: its first line, if long enough to be held.
    let secret = s.lines().next().unwrap_or("").trim();
    if secret.chars().count() >= arcane_redact::MIN_KNOWN_SECRET_CHARS && !secret.contains('*') {
        let known = KnownSecrets::new([secret]);
        let encoded = utf8_percent_encode(secret, NON_ALPHANUMERIC).to_string();
        let text = format!("{s} x={secret} u=https://h/?k={encoded}&{secret}");
        let out = known.mask(&text);
        assert!(!out.contains(secret), "{secret:?} left in {out:?}");
        assert!(!out.contains(&encoded), "{encoded:?} left in {out:?}");
        bounded(&text, &out);
        let mut v = serde_json::json!({"a": [text.clone()], (text.clone()): secret});
        assert!(known.mask_value(&mut v));
        assert!(!v.to_string().contains(secret), "{secret:?} left in {v}");
    }
});
