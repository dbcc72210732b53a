//! The pieces every tool result is made of: the model's text block, the error result (its
//! text masked), the text of a result, and the last masking of the server's own credentials.

use rmcp::model::{CallToolResult, ContentBlock};

use arcane_redact::mask_text;

/// The text blocks of a tool result, joined by newlines (what the audit log and token audit
/// read of a result).
pub fn result_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A text block for the model (audience `assistant`, docs/output-format.md).
pub fn assistant_text(text: impl Into<String>) -> ContentBlock {
    let mut t = rmcp::model::TextContent::new(text);
    t.annotations =
        Some(rmcp::model::Annotations::default().with_audience(vec![rmcp::model::Role::Assistant]));
    ContentBlock::Text(t)
}

/// The server's own credentials (held by `arcane_redact::hold_secret`: the configured key or
/// token, the HTTP bearer tokens, the caller's key over HTTP) masked in everything a result
/// carries — its text and embedded resources, and `structuredContent`, which otherwise keeps
/// Arcane's values — also with `--show-secrets`: Arcane has no reason to hand them back, and
/// one that echoes them must not hand them to the model. The last step of every tool result.
pub fn mask_known_result(r: &mut CallToolResult) {
    fn mask(s: &mut String) {
        if let std::borrow::Cow::Owned(t) = arcane_redact::mask_known(s) {
            *s = t;
        }
    }
    for block in &mut r.content {
        match block {
            ContentBlock::Text(t) => mask(&mut t.text),
            ContentBlock::Resource(e) => {
                if let rmcp::model::ResourceContents::TextResourceContents { text, .. } =
                    &mut e.resource
                {
                    mask(text);
                }
            }
            _ => {}
        }
    }
    if let Some(v) = &mut r.structured_content {
        arcane_redact::mask_known_in(v);
    }
}

/// [`mask_known_result`] for any other message the server answers with (a resource, a
/// completion, a question): read as JSON, masked, read back — only when it holds a credential.
pub fn mask_known_message<T>(message: T) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let Ok(mut v) = serde_json::to_value(&message) else {
        return message;
    };
    if !arcane_redact::mask_known_in(&mut v) {
        return message;
    }
    serde_json::from_value(v).unwrap_or(message)
}

/// The text of a failed call: an `isError` result, no structuredContent. Every error text
/// passes here, so this is where a password written in a URL (`ARCANE_URL` with
/// `user:password@`, or one Arcane echoed) is masked.
pub fn error_result(text: impl Into<String>) -> CallToolResult {
    let text = text.into();
    let text = match mask_text(&text) {
        std::borrow::Cow::Owned(masked) => masked,
        std::borrow::Cow::Borrowed(_) => text,
    };
    CallToolResult::error(vec![ContentBlock::text(text)])
}
