//! Fuzzes the path-segment encoder: whatever the value, an accepted segment has no `/ \ ? #`
//! and never decodes into one, is never a dot segment, is plain ASCII without controls or
//! spaces, and decodes back to the value; a refused value is exactly one that is (or decodes
//! to) an empty or dot segment, holds path structure, or holds a control or hidden character
//! (docs/security.md).
#![no_main]

use arcane_engine::{is_dot_or_empty, segment, structure_in};
use libfuzzer_sys::fuzz_target;

/// A control or hidden character in the value or in what it percent-decodes to, decoded again
/// and again (`%25250C` is a form feed three decodings down).
fn hides(value: &str) -> bool {
    let mut v = value.to_string();
    for _ in 0..=value.len() {
        if v.chars()
            .any(|c| c.is_control() || arcane_markdown::is_hidden_char(c))
        {
            return true;
        }
        v = percent_encoding::percent_decode_str(&v)
            .decode_utf8_lossy()
            .into_owned();
    }
    false
}

fuzz_target!(|data: &[u8]| {
    let value = String::from_utf8_lossy(data);
    match segment("p", &value) {
        Ok(seg) => {
            assert!(!seg.contains(['/', '\\', '?', '#']), "{seg:?}");
            assert!(structure_in(&seg).is_none(), "{seg:?}");
            assert!(!is_dot_or_empty(&seg), "{seg:?}");
            assert!(
                seg.bytes().all(|b| b.is_ascii_graphic()),
                "{seg:?} has a control, space or non-ASCII byte"
            );
            let back = percent_encoding::percent_decode_str(&seg)
                .decode_utf8()
                .expect("decodes as UTF-8");
            assert_eq!(back, value, "{seg:?}");
        }
        Err(_) => assert!(
            is_dot_or_empty(&value) || structure_in(&value).is_some() || hides(&value),
            "{value:?} refused"
        ),
    }
});
