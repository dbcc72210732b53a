//! The built-in Arcane document: Arcane 2.8.0's OpenAPI document from the repository's
//! `third_party/arcane/openapi-v2.8.0.json` (BSD-3-Clause; the notice is
//! `third_party/arcane/LICENSE`, shipped beside the binaries), deflated into the binary by
//! `build.rs`. It is what `arcane-sim` and `arcane-mcp demo` serve when no spec is given, so
//! that both run from any directory. Inflated once, on first use (a few milliseconds), and
//! kept for the life of the process.

use std::sync::OnceLock;

/// How logs, banners and errors name the built-in document.
pub const BUILTIN_SPEC_NAME: &str = "built-in Arcane 2.8.0 OpenAPI document";

/// The deflated document (`build.rs`).
pub static BUILTIN_SPEC_DEFLATED: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/openapi-v2.8.0.json.deflate"));

/// The document's length, which bounds the inflation.
fn inflated_len() -> usize {
    env!("ARCANE_SIM_BUILTIN_SPEC_LEN").parse().unwrap_or(0)
}

/// The built-in document's text. `build.rs` checked its round trip, so an error here means a
/// damaged binary; it says what to do instead.
pub fn builtin_spec() -> anyhow::Result<&'static str> {
    static TEXT: OnceLock<Result<String, String>> = OnceLock::new();
    let text = TEXT.get_or_init(|| {
        let len = inflated_len();
        miniz_oxide::inflate::decompress_to_vec_with_limit(BUILTIN_SPEC_DEFLATED, len)
            .map_err(|e| format!("{e:?}"))
            .and_then(|bytes| String::from_utf8(bytes).map_err(|e| e.to_string()))
            .and_then(|text| {
                if text.len() == len {
                    Ok(text)
                } else {
                    Err(format!("{} bytes instead of {len}", text.len()))
                }
            })
    });
    text.as_deref().map_err(|e| {
        anyhow::anyhow!(
            "the {BUILTIN_SPEC_NAME} cannot be read ({e}); the binary is damaged: reinstall it, \
             or pass --spec PATH (Arcane serves its document at /api/openapi.json)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_document_is_arcane_2_8_0_and_much_smaller_deflated() {
        let text = builtin_spec().unwrap();
        let doc: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(doc["info"]["version"], "2.8.0", "{}", doc["info"]);
        assert!(doc["paths"].as_object().is_some_and(|p| p.len() > 200));
        assert_eq!(text.len(), inflated_len());
        // The reason to deflate it: the binary carries a fraction of the document's size.
        assert!(
            BUILTIN_SPEC_DEFLATED.len() * 5 < text.len(),
            "{} deflated vs {}",
            BUILTIN_SPEC_DEFLATED.len(),
            text.len()
        );
        // The same text every time (inflated once).
        assert!(std::ptr::eq(text, builtin_spec().unwrap()));
    }
}
