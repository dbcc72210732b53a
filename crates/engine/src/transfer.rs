//! Downloads (files Arcane sends: PEM, tarballs, backups, bundles; docs/arcane-wire.md#downloads) and
//! the one multipart builder of uploads (`multipart/form-data` requests).
//!
//! Downloads are read with a size cap; the file name comes from `Content-Disposition`; the body
//! is classified as text or binary. A multipart form takes the action's parameter values: a
//! file field's value is its text, or `base64:` followed by the base64 of binary content, and
//! goes as a file part. (An octet-stream `body` is decoded where the request is built.)

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use serde_json::Value;

use arcane_markdown::sanitize;

/// Default download size cap: 10 MiB.
pub const DEFAULT_MAX_DOWNLOAD: usize = 10 * 1024 * 1024;

/// A downloaded file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Download {
    /// From `Content-Disposition` (path components and control characters removed), if sent.
    pub file_name: Option<String>,
    /// The `Content-Type` as sent (parameters included), if any.
    pub content_type: Option<String>,
    /// Size in bytes.
    pub size: usize,
    pub body: DownloadBody,
}

/// A download's content, decided by `is_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DownloadBody {
    /// UTF-8 text (PEM, compose files, logs, JSON, YAML…), unchanged.
    Text(String),
    /// Anything else (tar, gzip, zip, other binary).
    Binary(Vec<u8>),
}

/// A failed download.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum TransferError {
    /// The file is larger than the cap.
    #[error(
        "the file is larger than the download limit of {limit} bytes{}; download it directly from Arcane (its UI or curl with the API key), or raise the limit",
        .declared.map(|d| format!(" (Arcane announced {d} bytes)")).unwrap_or_default()
    )]
    TooLarge { limit: usize, declared: Option<u64> },
    /// The body broke off.
    #[error("the download broke off after {received} bytes ({detail}); retry")]
    Read { received: usize, detail: String },
}

/// Reads a successful download answer (the caller has checked the status) with a size cap
/// (`max_bytes`; see [`DEFAULT_MAX_DOWNLOAD`]). A declared `Content-Length` over the cap fails
/// before reading; otherwise reading stops as soon as the cap is passed.
pub async fn read_download(
    resp: reqwest::Response,
    max_bytes: usize,
) -> Result<Download, TransferError> {
    let headers = resp.headers().clone();
    let header = |name: reqwest::header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let content_type = header(reqwest::header::CONTENT_TYPE);
    let file_name = header(reqwest::header::CONTENT_DISPOSITION)
        .as_deref()
        .and_then(content_disposition_filename);
    let body = crate::http::read_capped(resp, max_bytes)
        .await
        .map_err(|e| match e {
            crate::http::BodyError::TooLarge { limit, declared } => {
                TransferError::TooLarge { limit, declared }
            }
            crate::http::BodyError::Read {
                received, detail, ..
            } => TransferError::Read { received, detail },
        })?;
    let size = body.len();
    let body = if is_text(content_type.as_deref(), &body) {
        match String::from_utf8(body) {
            Ok(s) => DownloadBody::Text(s),
            Err(e) => DownloadBody::Binary(e.into_bytes()),
        }
    } else {
        DownloadBody::Binary(body)
    };
    Ok(Download {
        file_name,
        content_type,
        size,
        body,
    })
}

/// The file name of a `Content-Disposition` header: `filename*=UTF-8''…` (RFC 5987, preferred),
/// else `filename="…"` (quoted, with `\"` escapes) or `filename=…` (unquoted). Only the last
/// path component is kept and control characters are removed, so the name is safe to show
/// and to save under. `None` when absent or empty.
pub fn content_disposition_filename(header: &str) -> Option<String> {
    let mut plain = None;
    let mut extended = None;
    for (key, value) in disposition_params(header) {
        match key.to_ascii_lowercase().as_str() {
            "filename*" => {
                // charset'lang'percent-encoded
                let mut parts = value.splitn(3, '\'');
                let (_charset, _lang, enc) = (parts.next(), parts.next(), parts.next());
                if let Some(enc) = enc {
                    extended = Some(
                        percent_encoding::percent_decode_str(enc)
                            .decode_utf8_lossy()
                            .into_owned(),
                    );
                }
            }
            "filename" => plain = Some(value),
            _ => {}
        }
    }
    let name = extended.or(plain)?;
    let base = name.rsplit(['/', '\\']).next().unwrap_or("");
    let clean = sanitize(base).replace(['\n', '\t', '\r'], " ");
    let clean = clean.trim();
    if clean.is_empty() || clean == "." || clean == ".." {
        None
    } else {
        Some(clean.to_string())
    }
}

/// `type; k=v; k="q\"v"` → `[(k, v)…]`, honouring quotes (a `;` inside quotes is not a separator).
fn disposition_params(header: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = header.chars().peekable();
    // Skip the disposition type.
    for c in chars.by_ref() {
        if c == ';' {
            break;
        }
    }
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ';') {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c == ';' {
                break;
            }
            key.push(c);
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'=') {
            chars.next();
            while chars.peek().is_some_and(|c| *c == ' ') {
                chars.next();
            }
            if chars.peek() == Some(&'"') {
                chars.next();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some(n) = chars.next() {
                                value.push(n);
                            }
                        }
                        '"' => break,
                        c => value.push(c),
                    }
                }
                // Skip anything up to the next separator.
                while chars.peek().is_some_and(|c| *c != ';') {
                    chars.next();
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c == ';' {
                        break;
                    }
                    value.push(c);
                    chars.next();
                }
                value = value.trim().to_string();
            }
        }
        out.push((key.trim().to_string(), value));
    }
    out
}

/// Text or binary: archive and other known binary types are binary; text types (`text/*`,
/// JSON, YAML, XML, PEM, TOML, shell, JavaScript, `+json`/`+xml`) are text when the body is
/// valid UTF-8; anything else (octet-stream, no type) is text only when it is valid UTF-8
/// without NUL and with few other control characters.
pub fn is_text(content_type: Option<&str>, body: &[u8]) -> bool {
    let mime = content_type
        .and_then(|c| c.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let binary_types = [
        "application/x-tar",
        "application/tar",
        "application/gzip",
        "application/x-gzip",
        "application/zip",
        "application/x-zip-compressed",
        "application/x-bzip2",
        "application/x-xz",
        "application/zstd",
        "application/x-7z-compressed",
        "application/pdf",
        "application/vnd.docker.image.rootfs.diff.tar.gzip",
    ];
    if binary_types.contains(&mime.as_str())
        || mime.starts_with("image/")
        || mime.starts_with("audio/")
        || mime.starts_with("video/")
        || mime.starts_with("font/")
    {
        return false;
    }
    let Ok(text) = std::str::from_utf8(body) else {
        return false;
    };
    let text_type = mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || mime.ends_with("+yaml")
        || [
            "application/json",
            "application/x-json-stream",
            "application/x-ndjson",
            "application/yaml",
            "application/x-yaml",
            "application/xml",
            "application/x-pem-file",
            "application/pem-certificate-chain",
            "application/x-x509-ca-cert",
            "application/toml",
            "application/javascript",
            "application/x-sh",
            "application/x-shellscript",
            "application/sql",
        ]
        .contains(&mime.as_str());
    if text_type {
        return true;
    }
    if text.contains('\0') {
        return false;
    }
    let controls = text
        .chars()
        .filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\x1b'))
        .count();
    controls * 100 <= text.chars().count().max(1)
}

// ---------------------------------------------------------------------------------------------
// Uploads

/// One multipart field, from one action parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    /// The field name on the wire.
    pub name: String,
    /// The parameter's value. Plain fields: a string is sent as is; numbers, booleans, objects
    /// and arrays as their JSON text (e.g. Arcane's "JSON encoded" `manifest`); `null` skips
    /// the field. File fields: see [`FormField::is_file`].
    pub value: Value,
    /// A file part. Its value is a string (the file's text, or `base64:<data>` for binary), an
    /// object `{"name": "…", "content": "…"}` to name the file, or an array of those for a
    /// multi-file field (`files`); each element becomes one part under the same field name.
    pub is_file: bool,
    /// File name for a file part whose value does not name it (e.g. from a companion
    /// parameter); default: the field name (with `-<n>` for the n-th of several).
    pub file_name: Option<String>,
}

/// Decodes a file parameter's value: `base64:<data>` → the decoded bytes (standard alphabet,
/// padding optional, whitespace ignored), anything else → its UTF-8 bytes.
pub fn file_bytes(value: &str) -> Result<Vec<u8>, String> {
    match value.strip_prefix("base64:") {
        Some(b64) => decode_b64(b64).map_err(|e| {
            format!("the value starts with base64: but the rest is not valid base64 ({e}); encode the file with standard base64, or send text without the prefix")
        }),
        None => Ok(value.as_bytes().to_vec()),
    }
}

fn decode_b64(s: &str) -> Result<Vec<u8>, base64::DecodeError> {
    let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.ends_with('=') {
        STANDARD.decode(compact)
    } else {
        STANDARD_NO_PAD.decode(compact)
    }
}

/// A file field of a multipart body whose value cannot become a file part; its `Display` names
/// the field and says how to fix the value (`file field manifest: …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("file field {field}: {problem}")]
pub struct FormError {
    /// The field's name.
    pub field: String,
    problem: String,
}

fn form_error(field: &str, problem: impl Into<String>) -> FormError {
    FormError {
        field: field.to_string(),
        problem: problem.into(),
    }
}

/// Builds a `multipart/form-data` body from the fields (in order). Errors name the field and
/// say how to fix its value.
pub fn multipart_form(fields: &[FormField]) -> Result<reqwest::multipart::Form, FormError> {
    use reqwest::multipart::{Form, Part};
    let mut form = Form::new();
    for f in fields {
        if f.value.is_null() {
            continue;
        }
        if !f.is_file {
            let text = match &f.value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            form = form.text(f.name.clone(), text);
            continue;
        }
        let items: Vec<&Value> = match &f.value {
            Value::Array(a) => a.iter().collect(),
            v => vec![v],
        };
        let many = items.len() > 1;
        for (i, item) in items.into_iter().enumerate() {
            let default_name = match (&f.file_name, many) {
                (Some(n), false) => n.clone(),
                (Some(n), true) => format!("{n}-{}", i + 1),
                (None, false) => f.name.clone(),
                (None, true) => format!("{}-{}", f.name, i + 1),
            };
            let (name, content) = match item {
                Value::String(s) => (default_name, s.as_str()),
                Value::Object(o) => {
                    let content = o.get("content").and_then(Value::as_str).ok_or_else(|| {
                        form_error(
                            &f.name,
                            "an object needs a string \"content\" (text, or base64:… for binary)",
                        )
                    })?;
                    let name = o
                        .get("name")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or(default_name);
                    (name, content)
                }
                _ => {
                    return Err(form_error(
                        &f.name,
                        "expected the file's text, base64:<data>, or {\"name\",\"content\"}",
                    ));
                }
            };
            let bytes = file_bytes(content).map_err(|e| form_error(&f.name, e))?;
            let part = Part::bytes(bytes)
                .file_name(name)
                .mime_str("application/octet-stream")
                .map_err(|e| form_error(&f.name, e.to_string()))?;
            form = form.part(f.name.clone(), part);
        }
    }
    Ok(form)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispositions() {
        let f = content_disposition_filename;
        assert_eq!(
            f("attachment; filename=\"nginx_1.27.tar\"").as_deref(),
            Some("nginx_1.27.tar")
        );
        assert_eq!(
            f("attachment; filename=abc.tar.gz").as_deref(),
            Some("abc.tar.gz")
        );
        assert_eq!(
            f("attachment; filename=\"a\\\"b;c.txt\"").as_deref(),
            Some("a\"b;c.txt")
        );
        assert_eq!(
            f("attachment; filename=\"x.txt\"; filename*=UTF-8''%E2%82%AC%20rates.txt").as_deref(),
            Some("€ rates.txt")
        );
        assert_eq!(
            f("attachment; filename=\"../../etc/passwd\"").as_deref(),
            Some("passwd")
        );
        assert_eq!(
            f("attachment; filename=\"\x1b[31mred.txt\"").as_deref(),
            Some("red.txt")
        );
        assert_eq!(f("attachment"), None);
        assert_eq!(f("attachment; filename=\"\""), None);
    }

    #[test]
    fn text_or_binary() {
        assert!(is_text(
            Some("application/x-pem-file"),
            b"-----BEGIN CERTIFICATE-----\n"
        ));
        assert!(!is_text(Some("application/x-tar"), b"plain ascii"));
        assert!(is_text(
            Some("application/octet-stream"),
            b"services:\n  web: {}\n"
        ));
        assert!(!is_text(Some("application/octet-stream"), b"a\0b"));
        assert!(!is_text(Some("text/plain"), &[0xff, 0xfe]));
        assert!(!is_text(None, &[0x1f, 0x8b, 0x08, 0x00]));
    }

    #[test]
    fn base64_values() {
        assert_eq!(file_bytes("base64:AAEC").unwrap(), vec![0, 1, 2]);
        assert_eq!(file_bytes("base64:AAECAw").unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(file_bytes("plain").unwrap(), b"plain".to_vec());
        assert!(
            file_bytes("base64:!!")
                .unwrap_err()
                .contains("not valid base64")
        );
        let bad = FormField {
            name: "files".into(),
            value: serde_json::json!([1]),
            is_file: true,
            file_name: None,
        };
        assert!(
            multipart_form(&[bad])
                .unwrap_err()
                .to_string()
                .contains("files")
        );
    }
}
