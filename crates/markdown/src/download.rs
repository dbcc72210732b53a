//! The text of a download: the file's name, size and type, then a text file's content in a
//! fenced block, or a note that a binary file travels as a separate resource.

use crate::context::{finish, push_line, title};
use crate::escape::{fenced, inline};
use crate::units::human_bytes;

/// Renders a text download: file name, size and type, then the text in a
/// fenced block.
///
/// ```
/// use arcane_markdown::render_text_download;
/// assert_eq!(
///     render_text_download("compose.yaml", 12, "application/yaml", "services: {}"),
///     "# compose.yaml\n\n- size: 12 bytes\n- type: application/yaml\n\n```yaml\nservices: {}\n```\n"
/// );
/// ```
pub fn render_text_download(file_name: &str, size: u64, content_type: &str, text: &str) -> String {
    let mut out = download_meta(file_name, size, content_type);
    out.push_str(&fenced(text, info_for(file_name, content_type)));
    finish(out)
}

/// Renders the metadata of a binary download; the file itself travels as a
/// separate embedded resource for the user.
///
/// ```
/// use arcane_markdown::render_binary_download_meta;
/// let text = render_binary_download_meta("backup.tar.gz", 1_500_000, "application/gzip");
/// assert!(text.starts_with("# backup.tar.gz\n\n- size: 1500000 bytes (1.5 MB)\n"));
/// ```
pub fn render_binary_download_meta(file_name: &str, size: u64, content_type: &str) -> String {
    let mut out = download_meta(file_name, size, content_type);
    push_line(
        &mut out,
        "The file is attached as a separate embedded resource for the user; its content is not shown here.",
    );
    finish(out)
}

fn download_meta(file_name: &str, size: u64, content_type: &str) -> String {
    let mut out = title(file_name);
    out.push_str(&format!("- size: {size} bytes"));
    if size >= 1000 {
        out.push_str(&format!(" ({})", human_bytes(size)));
    }
    out.push('\n');
    if !content_type.is_empty() {
        out.push_str("- type: ");
        out.push_str(&inline(content_type));
        out.push('\n');
    }
    out.push('\n');
    out
}

fn info_for(file_name: &str, content_type: &str) -> &'static str {
    let name = file_name.to_ascii_lowercase();
    let ct = content_type.to_ascii_lowercase();
    if name.ends_with(".yml") || name.ends_with(".yaml") || ct.contains("yaml") {
        "yaml"
    } else if name.ends_with(".json") || ct.contains("json") {
        "json"
    } else {
        "text"
    }
}
