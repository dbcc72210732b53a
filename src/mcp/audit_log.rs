//! The audit log of mutating calls (`--audit-log PATH`, docs/security.md): one JSON object per
//! line — when, which session and client, which user (a fingerprint of the Arcane key, never
//! the key), the action, environment and targets (its path parameters), the parameters with
//! secrets masked (JSON text read as JSON first, by the redactor previews use) but the
//! identifiers of what the call addresses kept as given, and the
//! outcome (sent and answered, failed, refused, previewed; confirmed how). Not to be confused
//! with the token audit (`crates/token-audit`), which measures tool definitions.
//!
//! Each line is written with one `write` under a lock, so lines from concurrent calls never
//! interleave and a process killed mid-write loses at most the line being written. When the
//! file would pass its size limit it is rotated (`PATH.1` … `PATH.3`, oldest dropped).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};
use serde_json::{Map, Value, json};

/// Rotated files kept beside the current one.
const KEEP: usize = 3;
/// Longest string parameter kept in a line; longer ones (compose files, bodies) are cut.
const MAX_STRING: usize = 256;

/// An open audit log.
pub struct AuditLog {
    path: PathBuf,
    max_bytes: u64,
    /// Whether the path is a regular file. A log sent to a pipe, a terminal or `/dev/stdout`
    /// (directly or through a symbolic link, as container images do) is never rotated:
    /// renaming the path would move the link or the device node and leave a plain file where
    /// the output went.
    rotates: bool,
    file: Mutex<(File, u64)>,
}

/// Who made a call: the MCP session, the client's name, the bearer token's name and
/// fingerprint, the key's fingerprint, the protocol version of the request.
#[derive(Debug, Clone, Default)]
pub struct Actor {
    /// The legacy session's ID; the 2026-07-28 protocol has no sessions.
    pub session: Option<String>,
    /// The client's name: from the session's `initialize`, or for a 2026-07-28 request from
    /// its own `_meta` (`io.modelcontextprotocol/clientInfo`).
    pub client: Option<String>,
    /// The name given to the bearer token (`alice=TOKEN`), when it has one.
    pub token: Option<String>,
    /// The bearer token's fingerprint (over HTTP with tokens).
    pub token_fingerprint: Option<String>,
    /// Fingerprint of the caller's own Arcane key; `None` = the server's key.
    pub user: Option<String>,
    /// The request's MCP protocol version.
    pub protocol: Option<String>,
    /// The MCP task the call runs in (docs/tasks.md), when it runs in one.
    pub task: Option<String>,
    /// The OAuth access token's holder (subject, issuer) and what it may do (docs/oauth.md);
    /// the call is refused what its scopes or users-file rule do not allow.
    pub grant: Option<std::sync::Arc<crate::mcp::caller::OAuthGrant>>,
}

/// What became of a mutating call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Sent to Arcane and answered with success.
    Ok,
    /// Sent (or attempted) and failed, or refused by local validation.
    Error,
    /// Not sent: withdrawn by policy, or destructive without confirmation.
    Refused,
    /// Not sent: safe mode answered with a preview of the request.
    Preview,
    /// Started as an MCP task; its outcome has a line of its own when it ends.
    Started,
    /// Cancelled by the client while it ran: the change may have started.
    Cancelled,
    /// An MCP task stopped by its TTL while it ran: the change may have started.
    Expired,
}

impl Disposition {
    /// The word of the audit line's `outcome` (and the trace span's `arcane.outcome`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Disposition::Ok => "ok",
            Disposition::Error => "error",
            Disposition::Refused => "refused",
            Disposition::Preview => "preview",
            Disposition::Started => "started",
            Disposition::Cancelled => "cancelled",
            Disposition::Expired => "expired",
        }
    }
}

/// One line of the log.
pub struct Entry<'a> {
    pub caller: &'a Actor,
    pub action: &'a str,
    pub domain: &'a str,
    pub environment: &'a str,
    pub params: &'a Map<String, Value>,
    /// The action's targets, its path parameters (`Action::targets`, the question's rule):
    /// the line's `targets`.
    pub targets: &'a [&'a str],
    /// The parameters whose values are identifiers (`Catalog::identifiers`: targets, the
    /// environment, names looked up), recorded as given: the line says what was deleted even
    /// when its name looks like a credential.
    pub identifiers: &'a [&'a str],
    pub outcome: Disposition,
    /// The error text of a failed or refused call (masked and cut here).
    pub error: Option<&'a str>,
    pub duration: std::time::Duration,
    /// `param` (confirm: true), `elicitation` (the user accepted), or none.
    pub confirmed: Option<&'static str>,
}

impl AuditLog {
    /// Opens (creating) the log for appending; only the owner may read it.
    pub fn open(path: &Path, max_bytes: u64) -> Result<AuditLog> {
        let file = open_append(path)
            .with_context(|| format!("opening the audit log {}", path.display()))?;
        let meta = file.metadata().ok();
        let rotates = meta.as_ref().is_some_and(std::fs::Metadata::is_file);
        let len = meta.map(|m| m.len()).unwrap_or(0);
        Ok(AuditLog {
            path: path.to_path_buf(),
            max_bytes: max_bytes.max(1024),
            rotates,
            file: Mutex::new((file, len)),
        })
    }

    /// Appends one entry. A failure is logged (without the entry) and does not fail the call.
    pub fn record(&self, e: &Entry<'_>) {
        let mut line = serde_json::to_string(&line_of(e)).unwrap_or_default();
        line.push('\n');
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if self.rotates && guard.1 > 0 && guard.1 + line.len() as u64 > self.max_bytes {
            match self.rotate() {
                Ok(f) => *guard = (f, 0),
                Err(err) => tracing::warn!(error = %err, "audit log rotation failed; appending"),
            }
        }
        match guard.0.write_all(line.as_bytes()) {
            Ok(()) => guard.1 += line.len() as u64,
            Err(err) => tracing::warn!(
                path = %self.path.display(),
                error = %err,
                "could not write to the audit log"
            ),
        }
    }

    fn rotate(&self) -> std::io::Result<File> {
        let numbered = |n: usize| {
            let mut p = self.path.clone().into_os_string();
            p.push(format!(".{n}"));
            PathBuf::from(p)
        };
        let _ = std::fs::remove_file(numbered(KEEP));
        for n in (1..KEEP).rev() {
            let _ = std::fs::rename(numbered(n), numbered(n + 1));
        }
        std::fs::rename(&self.path, numbered(1))?;
        open_append(&self.path)
    }
}

/// The Arcane key a call was made with: the caller's own (`key:` its fingerprint) or the
/// server's.
fn key_of(caller: &Actor) -> String {
    caller
        .user
        .as_deref()
        .map_or_else(|| "server-key".to_string(), |f| format!("key:{f}"))
}

/// Who made a call, in one word of the log's: the OAuth subject, the bearer token's name, or
/// the Arcane key.
pub(crate) fn who(caller: &Actor) -> String {
    if let Some(g) = &caller.grant {
        return plain(&g.subject, 100);
    }
    if let Some(t) = &caller.token {
        return t.clone();
    }
    key_of(caller)
}

pub(crate) fn open_append(path: &Path) -> std::io::Result<File> {
    // A link is followed for what containers log to (`/dev/stdout`, a pipe), never to a
    // regular file: in a directory others can write, a planted link would have the server
    // append to any file it may write (a classic of shared /tmp).
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
        && std::fs::metadata(path).is_ok_and(|m| m.is_file())
    {
        return Err(std::io::Error::other(
            "it is a symbolic link to a regular file: give the file's own path (links are \
             followed only to devices and pipes, such as /dev/stdout)",
        ));
    }
    let mut o = OpenOptions::new();
    o.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking for the open only: a FIFO nobody reads would block the open (and with it
        // startup) forever; this way it fails with ENXIO, said below.
        o.mode(0o600).custom_flags(libc::O_NONBLOCK);
    }
    let file = o.open(path).map_err(|e| {
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ENXIO) {
            return std::io::Error::other(
                "it is a FIFO that no process reads: start the reader first, or log to a file",
            );
        }
        e
    })?;
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // Writes block as usual (a pipe's reader sets the pace, as the operator chose).
        // SAFETY: fcntl on a descriptor this function owns; no memory is passed.
        unsafe {
            let fd = file.as_raw_fd();
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }
    Ok(file)
}

/// The JSON of one entry: secrets masked, long strings cut, targets picked out. Parameters of
/// JSON text (the flat profile's, `project.create`'s raw `project`) are read as JSON before
/// they are masked, as previews read them: masked as text they would keep the secrets of the
/// names and files they carry.
fn line_of(e: &Entry<'_>) -> Value {
    let mut params = arcane_redact::redacted_params(e.params, e.domain, e.identifiers);
    cut_strings(&mut params);
    let targets: Map<String, Value> = params
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| e.targets.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let mut line = json!({
        "time": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "session": e.caller.session,
        "client": e.caller.client,
        "protocol": e.caller.protocol,
        "token": e.caller.token,
        "tokenFingerprint": e.caller.token_fingerprint,
        "user": key_of(e.caller),
        "action": e.action,
        "environment": e.environment,
        "targets": targets,
        "params": params,
        "outcome": e.outcome.as_str(),
        "error": e.error.map(plain_error),
        "durationMs": e.duration.as_millis() as u64,
        "confirmed": e.confirmed,
    });
    if let Some(task) = &e.caller.task {
        line["task"] = json!(task);
    }
    if let Some(g) = &e.caller.grant {
        line["oauth"] = json!({
            "subject": plain(&g.subject, 100),
            "issuer": plain(&g.issuer, 200),
            "client": g.client_id.as_deref().map(|c| plain(c, 100)),
            "scope": if g.write { "arcane:write" } else { "arcane:read" },
        });
    }
    // The server's own credentials, wherever in the line (a parameter, an error Arcane
    // echoed), by value.
    arcane_redact::mask_known_in(&mut line);
    line
}

/// Longest error text kept in a line.
const MAX_ERROR: usize = 300;

/// The error text of a line, as plain text: the answer's Markdown undone (backslash escapes,
/// code spans), secrets masked, control characters and line breaks turned into spaces, cut to
/// [`MAX_ERROR`] characters. The line is JSON, read by people and log tools, not rendered.
fn plain_error(text: &str) -> String {
    plain(&arcane_redact::mask_text(&unmarkdown(text)), MAX_ERROR)
}

/// Untrusted text as a field of a line: escape sequences and invisible characters dropped,
/// control characters and line breaks turned into spaces, cut after `max` characters.
pub fn plain(text: &str, max: usize) -> String {
    let clean = arcane_markdown::sanitize(text);
    let one_line = clean
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    arcane_markdown::clip(&one_line, max).into_owned()
}

/// Inline Markdown as the text it shows: `\*` is `*`, a code span is its content.
fn unmarkdown(md: &str) -> String {
    let c: Vec<char> = md.chars().collect();
    let run_at = |i: usize| c[i..].iter().take_while(|&&ch| ch == '`').count();
    let mut out = String::with_capacity(md.len());
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '\\' if c.get(i + 1).is_some_and(char::is_ascii_punctuation) => {
                out.push(c[i + 1]);
                i += 2;
            }
            '`' => {
                let run = run_at(i);
                // The closing run: the next run of exactly as many backticks.
                let mut j = i + run;
                let close = loop {
                    match c[j..].iter().position(|&ch| ch == '`') {
                        None => break None,
                        Some(k) => {
                            let at = j + k;
                            let n = run_at(at);
                            if n == run {
                                break Some(at);
                            }
                            j = at + n;
                        }
                    }
                };
                match close {
                    Some(end) => {
                        let inner: String = c[i + run..end].iter().collect();
                        let padded = inner.len() >= 2
                            && inner.starts_with(' ')
                            && inner.ends_with(' ')
                            && !inner.trim().is_empty();
                        out.push_str(if padded {
                            &inner[1..inner.len() - 1]
                        } else {
                            &inner
                        });
                        i = end + run;
                    }
                    None => {
                        out.extend(&c[i..i + run]);
                        i += run;
                    }
                }
            }
            ch => {
                out.push(ch);
                i += 1;
            }
        }
    }
    out
}

fn cut_strings(v: &mut Value) {
    match v {
        Value::String(s) if s.chars().count() > MAX_STRING => {
            let n = s.chars().count();
            *s = format!(
                "{}… ({n} characters)",
                s.chars().take(MAX_STRING).collect::<String>()
            );
        }
        Value::Array(a) => a.iter_mut().for_each(cut_strings),
        Value::Object(m) => m.values_mut().for_each(cut_strings),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_link_to_a_regular_file_is_refused_and_one_to_a_device_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "untouched\n").unwrap();
        let link = dir.path().join("audit.jsonl");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let err = AuditLog::open(&link, 1 << 20).err().expect("refused");
        assert!(
            format!("{err:#}").contains("symbolic link to a regular file"),
            "{err:#}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched\n");
        let to_null = dir.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &to_null).unwrap();
        assert!(
            AuditLog::open(&to_null, 1 << 20).is_ok(),
            "a link to a device is followed"
        );
    }

    fn entry<'a>(caller: &'a Actor, params: &'a Map<String, Value>) -> Entry<'a> {
        Entry {
            caller,
            action: "container.restart",
            domain: "container",
            environment: "0",
            params,
            targets: &["containerId"],
            identifiers: &["environmentId", "containerId"],
            outcome: Disposition::Ok,
            error: None,
            duration: std::time::Duration::from_millis(12),
            confirmed: Some("param"),
        }
    }

    #[test]
    fn lines_mask_secrets_cut_long_text_and_name_targets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path, 1 << 20).unwrap();
        let caller = Actor {
            session: Some("s1".into()),
            client: Some("claude".into()),
            user: Some(arcane_redact::fingerprint("user-key")),
            ..Actor::default()
        };
        let params =
            json!({"containerId": "abc", "password": "hunter2", "compose": "x".repeat(1000)});
        log.record(&entry(&caller, params.as_object().unwrap()));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1);
        let line: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(line["action"], "container.restart");
        assert_eq!(line["targets"], json!({"containerId": "abc"}));
        assert_eq!(line["outcome"], "ok");
        assert_eq!(line["confirmed"], "param");
        assert_eq!(line["session"], "s1");
        assert!(line["user"].as_str().unwrap().starts_with("key:"));
        assert!(
            !text.contains("hunter2") && !text.contains("user-key"),
            "{text}"
        );
        assert!(text.len() < 1000, "long strings are cut: {}", text.len());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "only the owner reads the audit log");
        }
    }

    /// Found by an outside attack (docs/security.md): the line of a `volume.delete` named no target, and a
    /// target that looks like a credential was masked, so nothing said what was deleted.
    #[test]
    fn targets_are_the_path_parameters_recorded_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path, 1 << 20).unwrap();
        let caller = Actor::default();
        let params = json!({"volumeName": "sk-proj-abcdefghijklmnopqrstuvwxyz01",
            "environmentId": "AKIAIOSFODNN7EXAMPLE", "token": "glpat-abcdefghijklmnopqrst",
            "note": "glpat-zyxwvutsrqponmlkjihg"});
        log.record(&Entry {
            action: "volume.delete",
            domain: "volume",
            targets: &["volumeName", "token"],
            identifiers: &["environmentId", "volumeName", "token"],
            ..entry(&caller, params.as_object().unwrap())
        });
        let text = std::fs::read_to_string(&path).unwrap();
        let line: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(
            line["targets"],
            json!({"volumeName": "sk-proj-abcdefghijklmnopqrstuvwxyz01",
                   "token": arcane_redact::MASK}),
            "{text}"
        );
        assert_eq!(
            line["params"]["volumeName"],
            "sk-proj-abcdefghijklmnopqrstuvwxyz01"
        );
        assert_eq!(line["params"]["environmentId"], "AKIAIOSFODNN7EXAMPLE");
        assert!(
            !text.contains("glpat-abcdefghijklmnopqrst") && !text.contains("zyxwvuts"),
            "a secret-named target and other values stay masked: {text}"
        );
    }

    #[test]
    fn error_text_is_plain_masked_and_one_line() {
        let md = "Arcane answered 409 for \\`container.kill\\`: container \\*web\\_1\\* is \
                  `not running`.\npassword=hunter2 \x1b[31mred\x1b[0m\u{7} and a \\\\ \
                  backslash ``a ` b``";
        let plain = plain_error(md);
        assert_eq!(
            plain,
            "Arcane answered 409 for `container.kill`: container *web_1* is not running. \
             password=******** red and a \\ backslash a ` b",
            "{plain}"
        );
        assert!(!plain.contains("hunter2"));
        assert!(!plain.chars().any(char::is_control), "{plain:?}");
        assert_eq!(plain_error(&"x".repeat(400)).chars().count(), MAX_ERROR + 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_without_a_reader_is_refused_instead_of_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.fifo");
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo is available");
        let (tx, rx) = std::sync::mpsc::channel();
        let p = path.clone();
        std::thread::spawn(move || {
            let _ = tx.send(AuditLog::open(&p, 1 << 20).map(|_| ()));
        });
        let opened = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("opening a FIFO without a reader must not block");
        let err = format!("{:#}", opened.expect_err("no reader: refused"));
        assert!(err.contains("FIFO that no process reads"), "{err}");
        assert!(err.contains("audit.fifo"), "{err}");
    }

    #[test]
    fn concurrent_lines_never_interleave_and_rotation_keeps_three() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = std::sync::Arc::new(AuditLog::open(&path, 4096).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    let caller = Actor::default();
                    for i in 0..50 {
                        let params = json!({"name": format!("t{t}-{i}")});
                        log.record(&entry(&caller, params.as_object().unwrap()));
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let mut files = vec![path.clone()];
        files.extend((1..=KEEP).map(|n| dir.path().join(format!("audit.jsonl.{n}"))));
        assert!(!dir.path().join("audit.jsonl.4").exists());
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            assert!(text.len() as u64 <= 4096, "{} over its limit", f.display());
            for l in text.lines() {
                let v: Value = serde_json::from_str(l).expect("every line is whole JSON");
                assert_eq!(v["user"], "server-key");
            }
        }
    }
}
