//! The one filler of path templates: every value that goes into a path segment (HTTP requests,
//! WebSocket endpoints, `arcane://` resource URIs, environment IDs) is checked and encoded here.
//!
//! Four rules (see `docs/security.md`, "Path parameters"):
//! - A value that would be read as a dot segment or an empty segment is refused: empty, `.`,
//!   `..`, or anything that decodes to one of them (`%2e%2E`, `%252e`…). Such a value moves the
//!   request to another endpoint (`/containers/..` is the environment), so nothing is sent.
//! - A value that holds path structure is refused: `/`, `\`, `?` or `#`, as typed or after any
//!   round of percent-decoding (`%2F`, `%252F`, `%5c`, `%3F`…). Arcane 2.8.x's manager decodes
//!   the path of a request for a remote environment before it proxies it to the agent
//!   (`backend/internal/middleware/environment_middleware.go`, `buildTargetURL` and
//!   `buildProxyPath` use the decoded `URL.Path`), so an escaped `/` becomes a real one there:
//!   `volumes/backups%2F<id>` reaches the volume-backup route. Only a parameter the catalog
//!   declares as taking a path (`takesPath`, docs/overlays.md) may hold `/`, and then each of
//!   its `/`-separated parts obeys the other rules ([`segment_path`]).
//! - A value that holds an invisible or bidi character (a control, U+200B–U+200F,
//!   U+202A–U+202E, U+2066–U+2069, U+FEFF, any other format character), as typed or decoded, is
//!   refused: such a value chooses a target, and the person confirming the call would read
//!   another one than the one sent (docs/security.md#what-the-confirmation-shows).
//! - Only what must be escaped is escaped: `:` `@` and the sub-delimiters `!$&'()*+,;=` go out
//!   literally, because Arcane 2.8.x hands path parameters to its handlers without decoding them
//!   (`sha256%3A…` is looked up as is and not found). Escaped are `%`, space, controls,
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

/// Characters that any hop between the server and the Docker host may read as path structure
/// once decoded: the separator, the backslash some proxies and servers take for one, and the
/// starts of a query and a fragment.
const STRUCTURE: [char; 4] = ['/', '\\', '?', '#'];

/// Why a value cannot be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Empty, `.` or `..`, as typed or decoded.
    DotOrEmpty,
    /// Holds (or decodes to) a character that is path structure.
    Structure(char),
    /// Holds (or decodes to) an invisible or bidi character ([`arcane_markdown::is_hidden_char`]):
    /// the value that chooses the target would read differently from what is sent.
    Hidden(char),
}

/// A value that cannot be a path segment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.text())]
pub struct SegmentError {
    /// The parameter's name.
    pub name: String,
    /// The refused value (shown shortened).
    pub value: String,
    /// What is wrong with it.
    pub why: Refusal,
}

impl SegmentError {
    fn new(name: &str, value: &str, why: Refusal) -> SegmentError {
        SegmentError {
            name: name.to_string(),
            value: value.chars().take(40).collect(),
            why,
        }
    }

    fn text(&self) -> String {
        let SegmentError { name, value, why } = self;
        // Invisible and control characters shown as `\uXXXX` (the presentation's one way to
        // echo a value the model sent); quoted once, here, and not a code span: the text is an
        // excerpt in the error that carries it. Every text below uses this `value` as it is
        // (a `{value:?}` would quote and escape it a second time: `"\"a\\u0000b\""`).
        let value = format!("\"{}\"", arcane_markdown::visible(value));
        match why {
            Refusal::DotOrEmpty => format!(
                "{name} {value} cannot be sent: an empty, \".\" or \"..\" path segment (also percent-encoded) would address another endpoint of Arcane; use the object's real ID or name (the matching list action shows them)"
            ),
            Refusal::Structure(c) => format!(
                "{name} {value} cannot be sent: pass the object's ID or plain name (its list action shows them), not a path — a '{c}' (also percent-encoded) would address another endpoint, as Arcane decodes a remote environment's path before proxying it"
            ),
            Refusal::Hidden(c) => format!(
                "{name} {value} cannot be sent: it holds the invisible character U+{:04X} (also percent-encoded), so the target a person reads is not the one sent; pass the object's ID or plain name as its list action shows it",
                *c as u32
            ),
        }
    }
}

/// The rounds of decoding a value goes through on its way: as typed, then up to
/// `DECODE_ROUNDS` rounds of percent-decoding (stopping when a round changes nothing).
fn decodings(value: &str) -> impl Iterator<Item = String> {
    let mut next = Some(value.to_string());
    std::iter::from_fn(move || {
        let cur = next.take()?;
        let decoded = percent_decode_str(&cur).decode_utf8_lossy().into_owned();
        if decoded != cur {
            next = Some(decoded);
        }
        Some(cur)
    })
    .take(DECODE_ROUNDS + 1)
}

/// Whether `value`, as typed or after up to `DECODE_ROUNDS` rounds of percent-decoding, is an
/// empty, `.` or `..` segment.
pub fn is_dot_or_empty(value: &str) -> bool {
    decodings(value).any(|v| matches!(v.as_str(), "" | "." | ".."))
}

/// The first path-structure character (`/ \ ? #`) that `value` holds, as typed or after up to
/// `DECODE_ROUNDS` rounds of percent-decoding.
pub fn structure_in(value: &str) -> Option<char> {
    decodings(value).find_map(|v| v.chars().find(|c| STRUCTURE.contains(c)))
}

/// Why `value` cannot fill one path segment, if it cannot.
pub fn refusal(value: &str) -> Option<Refusal> {
    if is_dot_or_empty(value) {
        return Some(Refusal::DotOrEmpty);
    }
    if let Some(c) = structure_in(value) {
        return Some(Refusal::Structure(c));
    }
    decodings(value)
        .find_map(|v| {
            v.chars()
                .find(|&c| c.is_control() || arcane_markdown::is_hidden_char(c))
        })
        .map(Refusal::Hidden)
}

/// Encodes one path segment, or refuses it (see the module docs). `name` names the parameter
/// in the error.
pub fn segment(name: &str, value: &str) -> Result<String, SegmentError> {
    match refusal(value) {
        Some(why) => Err(SegmentError::new(name, value, why)),
        None => Ok(encode(value)),
    }
}

/// Encodes the value of a parameter declared as taking a path (`takesPath`): each
/// `/`-separated part must be a valid segment ([`segment`]), and the `/`s between them go out
/// as `%2F`, for the handlers that decode their parameter themselves (image export, tag,
/// history and attestations take an image reference such as `ghcr.io/acme/api:1.2`).
pub fn segment_path(name: &str, value: &str) -> Result<String, SegmentError> {
    let parts: Result<Vec<String>, SegmentError> = value
        .split('/')
        .map(|part| match refusal(part) {
            Some(why) => Err(SegmentError::new(name, value, why)),
            None => Ok(encode(part)),
        })
        .collect();
    Ok(parts?.join("%2F"))
}

/// The encoding alone, without the check: for finding a value inside a URL already built
/// (masking secrets in previews). Requests are built with [`segment`] or [`fill`].
pub fn encode(value: &str) -> String {
    utf8_percent_encode(value, NOT_PCHAR).to_string()
}

/// One placeholder of a path template and the value that fills it.
#[derive(Debug, Clone, Copy)]
pub struct PathSlot<'a> {
    /// The placeholder's name in the template (`{placeholder}`).
    pub placeholder: &'a str,
    /// The parameter's name, for the error.
    pub name: &'a str,
    pub value: &'a str,
    /// The parameter is declared as taking a path ([`segment_path`]).
    pub takes_path: bool,
}

/// Fills `{placeholder}`s of a path template with encoded segments, each checked by
/// [`segment`] (or [`segment_path`] for a parameter that takes a path).
pub fn fill(template: &str, slots: &[PathSlot<'_>]) -> Result<String, SegmentError> {
    let mut path = template.to_string();
    for slot in slots {
        let seg = if slot.takes_path {
            segment_path(slot.name, slot.value)?
        } else {
            segment(slot.name, slot.value)?
        };
        path = path.replace(&format!("{{{}}}", slot.placeholder), &seg);
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

    /// A control, bidi or zero-width character would make the target a person reads differ
    /// from the one sent: refused, typed or percent-encoded.
    #[test]
    fn invisible_characters_are_refused() {
        for v in [
            "a\nb",
            "db\u{7f}",
            "web\u{200b}-1",
            "web-1\u{202e}lmth",
            "\u{feff}web",
            "web\u{2066}",
            "web%E2%80%AE1",
            "web%25E2%2580%258B1",
            "tag\u{e0041}",
        ] {
            let e = segment("containerId", v).expect_err(v);
            assert!(matches!(e.why, Refusal::Hidden(_)), "{v}: {e}");
            assert!(e.to_string().contains("invisible character U+"), "{e}");
        }
        assert!(segment_path("imageId", "ghcr.io/a\u{200d}b").is_err());
    }

    /// Found by an outside attack (docs/security.md): the refusal quoted an already quoted value again
    /// (`containerId "\\"a\\\u0000b\\""`). Each value is quoted once, its invisible
    /// characters shown as `\uXXXX`; a structure character is quoted once too.
    #[test]
    fn a_refused_value_is_quoted_once() {
        let text = |v: &str| segment("containerId", v).unwrap_err().to_string();
        assert!(
            text("a\0b").starts_with(
                "containerId \"a\\u0000b\" cannot be sent: it holds the invisible character U+0000"
            ),
            "{}",
            text("a\0b")
        );
        assert!(
            text("web-1\r\nX: y").starts_with("containerId \"web-1\\u000d\\u000aX: y\" cannot"),
            "{}",
            text("web-1\r\nX: y")
        );
        assert!(
            text("a\\b").starts_with("containerId \"a\\b\" cannot be sent"),
            "{}",
            text("a\\b")
        );
        assert!(text("a\\b").contains(" a '\\' (also"), "{}", text("a\\b"));
        assert!(
            text("..").starts_with("containerId \"..\" cannot"),
            "{}",
            text("..")
        );
        for v in ["a\0b", "web-1\r\nX: y", "a\\b", "a/b", ".."] {
            let t = text(v);
            assert!(!t.contains("\\\"") && !t.contains("\"\""), "{v:?}: {t}");
        }
    }

    #[test]
    fn what_must_be_escaped_is() {
        assert_eq!(segment("x", "50%").unwrap(), "50%25");
        assert_eq!(segment("x", "a b").unwrap(), "a%20b");
        assert_eq!(segment("x", "é").unwrap(), "%C3%A9");
        assert_eq!(
            segment("x", "a\"<>`{}|^[]").unwrap(),
            "a%22%3C%3E%60%7B%7D%7C%5E%5B%5D"
        );
    }

    /// Arcane 2.8.x decodes a remote environment's path before proxying it: any of these would
    /// reach another endpoint of the agent (`volumes/backups/<id>`, `images/sha256:…/vulnerabilities`).
    #[test]
    fn path_structure_is_refused_in_every_encoding() {
        for (v, c) in [
            ("backups/0b7f", '/'),
            ("sha256:ab12/vulnerabilities", '/'),
            ("a%2Fb", '/'),
            ("a%2fb", '/'),
            ("a%252Fb", '/'),
            ("a%25252fb", '/'),
            ("a\\b", '\\'),
            ("a%5Cb", '\\'),
            ("a?b", '?'),
            ("a%3Fx", '?'),
            ("a%253f", '?'),
            ("a#b", '#'),
            ("a%23b", '#'),
        ] {
            let e = segment("volumeName", v).unwrap_err();
            assert_eq!(e.why, Refusal::Structure(c), "{v}");
            let text = e.to_string();
            assert!(text.contains("volumeName"), "{text}");
            assert!(text.contains("another endpoint"), "{text}");
            assert!(text.contains("ID"), "{text}");
            assert!(fill("/volumes/{v}", &[slot("v", v, false)]).is_err(), "{v}");
        }
        // `:` and a `%` that decodes to nothing structural stay allowed.
        assert_eq!(segment("imageId", "sha256:ab12").unwrap(), "sha256:ab12");
        assert_eq!(segment("x", "%41").unwrap(), "%2541");
    }

    #[test]
    fn a_parameter_that_takes_a_path_may_hold_slashes_only() {
        assert_eq!(
            segment_path("name", "ghcr.io/acme/api:1.2").unwrap(),
            "ghcr.io%2Facme%2Fapi:1.2"
        );
        assert_eq!(segment_path("name", "nginx").unwrap(), "nginx");
        for v in [
            "a/../b", "a//b", "/a", "a/", "a?b", "a/b#c", "a/b%3F", "a%2Fb", "a\\b",
        ] {
            assert!(segment_path("name", v).is_err(), "{v}");
        }
        assert_eq!(
            fill("/images/{name}/tag", &[slot("name", "acme/api", true)]).unwrap(),
            "/images/acme%2Fapi/tag"
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
        for v in ["..a", "a..", ".hidden"] {
            assert!(segment("x", v).is_ok(), "{v}");
        }
    }

    #[test]
    fn fill_replaces_every_placeholder() {
        let p = fill(
            "/environments/{id}/containers/{containerId}",
            &[slot("id", "0", false), slot("containerId", "web-1", false)],
        )
        .unwrap();
        assert_eq!(p, "/environments/0/containers/web-1");
        assert!(fill("/environments/{id}", &[slot("id", "..", false)]).is_err());
    }

    fn slot<'a>(name: &'a str, value: &'a str, takes_path: bool) -> PathSlot<'a> {
        PathSlot {
            placeholder: name,
            name,
            value,
            takes_path,
        }
    }
}
