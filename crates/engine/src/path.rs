//! The one filler of path templates: every value that goes into a path segment (HTTP requests,
//! WebSocket endpoints, `arcane://` resource URIs, environment IDs) is checked and encoded here.
//!
//! Two rules (see `docs/security.md`, "Path parameters"):
//! - A value that would be read as a dot segment or an empty segment is refused: empty, `.`,
//!   `..`, or anything that decodes to one of them (`%2e%2E`, `%252e`…). Such a value moves the
//!   request to another endpoint (`/containers/..` is the environment), so nothing is sent.
//! - Only what must be escaped is escaped: `:` `@` and the sub-delimiters `!$&'()*+,;=` go out
//!   literally, because Arcane 2.8.x hands path parameters to its handlers without decoding them
//!   (`sha256%3A…` is looked up as is and not found). Escaped are `/ ? # %`, space, controls,
//!   non-ASCII and every other character that RFC 3986 does not allow in a segment.
//!
//! A pure function of its input, so that callers resolving names to IDs can use it directly.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// What is escaped in a segment: everything but RFC 3986 `pchar` (unreserved, sub-delims, `:`,
/// `@`). `%` is escaped too, so a value's own percent signs reach Arcane as typed.
const NOT_PCHAR: &AsciiSet = &NON_ALPHANUMERIC
    // unreserved
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    // sub-delims
    .remove(b'!')
    .remove(b'$')
    .remove(b'&')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b'+')
    .remove(b',')
    .remove(b';')
    .remove(b'=')
    // the two more of pchar
    .remove(b':')
    .remove(b'@');

/// How many rounds of percent-decoding are checked for a dot segment (a proxy, the router and
/// the handler could each decode once).
const DECODE_ROUNDS: usize = 4;

/// A value that cannot be a path segment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{name} {value:?} cannot be sent: an empty, \".\" or \"..\" path segment (also percent-encoded) would address another endpoint of Arcane; use the object's real ID or name (the matching list action shows them)"
)]
pub struct SegmentError {
    /// The parameter's name.
    pub name: String,
    /// The refused value (shown shortened).
    pub value: String,
}

/// Whether `value`, as typed or after up to `DECODE_ROUNDS` rounds of percent-decoding, is an
/// empty, `.` or `..` segment.
pub fn is_dot_or_empty(value: &str) -> bool {
    let mut cur = value.to_string();
    for _ in 0..=DECODE_ROUNDS {
        if matches!(cur.as_str(), "" | "." | "..") {
            return true;
        }
        let next = percent_decode_str(&cur).decode_utf8_lossy().into_owned();
        if next == cur {
            break;
        }
        cur = next;
    }
    false
}

/// Encodes one path segment, or refuses it (see the module docs). `name` names the parameter
/// in the error.
pub fn segment(name: &str, value: &str) -> Result<String, SegmentError> {
    if is_dot_or_empty(value) {
        return Err(SegmentError {
            name: name.to_string(),
            value: value.chars().take(40).collect(),
        });
    }
    Ok(encode(value))
}

/// The encoding alone, without the check: for finding a value inside a URL already built
/// (masking secrets in previews). Requests are built with [`segment`] or [`fill`].
pub fn encode(value: &str) -> String {
    utf8_percent_encode(value, NOT_PCHAR).to_string()
}

/// Fills `{wire_name}` placeholders of a path template with encoded segments. Each value is
/// checked by [`segment`]; `values` are `(placeholder, parameter name, value)`.
pub fn fill(template: &str, values: &[(&str, &str, &str)]) -> Result<String, SegmentError> {
    let mut path = template.to_string();
    for (placeholder, name, value) in values {
        let seg = segment(name, value)?;
        path = path.replace(&format!("{{{placeholder}}}"), &seg);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references_go_out_raw() {
        assert_eq!(
            segment("imageId", "sha256:abc").unwrap(),
            "sha256:abc",
            "`:` is legal in a segment"
        );
        assert_eq!(segment("imageId", "nginx:1.27").unwrap(), "nginx:1.27");
        assert_eq!(segment("x", "user@host").unwrap(), "user@host");
        assert_eq!(segment("x", "a!$&'()*+,;=b").unwrap(), "a!$&'()*+,;=b");
        assert_eq!(segment("x", "worker-1").unwrap(), "worker-1");
        assert_eq!(segment("x", "a.b_c~d").unwrap(), "a.b_c~d");
        assert_eq!(segment("x", "...").unwrap(), "...");
    }

    #[test]
    fn what_must_be_escaped_is() {
        assert_eq!(segment("x", "a/b").unwrap(), "a%2Fb");
        assert_eq!(segment("x", "a?b#c").unwrap(), "a%3Fb%23c");
        assert_eq!(segment("x", "50%").unwrap(), "50%25");
        assert_eq!(segment("x", "a b").unwrap(), "a%20b");
        assert_eq!(segment("x", "a\nb\u{7f}").unwrap(), "a%0Ab%7F");
        assert_eq!(segment("x", "é").unwrap(), "%C3%A9");
        assert_eq!(
            segment("x", "a\"<>`{}|\\^[]").unwrap(),
            "a%22%3C%3E%60%7B%7D%7C%5C%5E%5B%5D"
        );
    }

    #[test]
    fn dot_and_empty_segments_are_refused() {
        for v in [
            "",
            ".",
            "..",
            "%2e",
            "%2E%2e",
            ".%2E",
            "%252e%252e",
            "%2525252e",
        ] {
            let e = segment("containerId", v).unwrap_err();
            assert!(e.to_string().contains("another endpoint"), "{v}: {e}");
            assert!(e.to_string().contains("containerId"), "{e}");
        }
        for v in ["..a", "a..", ".hidden", "%2e%2e%2f"] {
            assert!(segment("x", v).is_ok(), "{v}");
        }
    }

    #[test]
    fn fill_replaces_every_placeholder() {
        let p = fill(
            "/environments/{id}/containers/{containerId}",
            &[
                ("id", "environmentId", "0"),
                ("containerId", "containerId", "web-1"),
            ],
        )
        .unwrap();
        assert_eq!(p, "/environments/0/containers/web-1");
        assert!(fill("/environments/{id}", &[("id", "environmentId", "..")]).is_err());
    }
}
