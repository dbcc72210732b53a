//! o200k token counts (tiktoken-rs embeds the BPE data, so counting needs no network).

/// The o200k tokens of `text`, special tokens read as plain text.
pub fn tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len()
}
