//! The sign-in page of the built-in authorization server (`GET /authorize`): one small
//! server-rendered form, no script and no asset of anyone else, under a CSP that allows
//! only its own inline style (by nonce), posting to itself and being redirected to the
//! client's redirect URI, and never framed.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Text escaped for HTML (element content and double-quoted attributes).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() || super::clients::invisible(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// What the page shows.
pub struct Page<'a> {
    pub client: &'a str,
    /// Who vouches for the client's name, shown after it (a registration names itself).
    pub name_note: &'a str,
    /// Where the person goes back to (the redirect URI's origin, or its scheme).
    pub returns_to: &'a str,
    /// Whether the client asked to change things too (else it reads only).
    pub write: bool,
    pub form: &'a str,
    pub csrf: &'a str,
    /// A problem of the last attempt, shown above the form.
    pub message: Option<&'a str>,
    /// The username typed last (never the password or the key).
    pub username: &'a str,
}

const STYLE: &str = "body{font:16px/1.45 system-ui,sans-serif;max-width:30rem;margin:2rem auto;padding:0 1rem;color:#111;background:#fafafa}\
h1{font-size:1.3rem}fieldset{border:1px solid #ccc;border-radius:6px;margin:1rem 0;padding:.8rem 1rem}\
label{display:block;margin:.5rem 0 .2rem}input[type=text],input[type=password]{width:100%;box-sizing:border-box;padding:.45rem;font:inherit}\
button{margin-top:.8rem;padding:.45rem 1rem;font:inherit}.msg{background:#fde8e8;border:1px solid #e0a0a0;padding:.6rem;border-radius:6px}\
.who{background:#eef3fb;padding:.6rem;border-radius:6px}small{color:#555}";

/// The security headers of every answer of the sign-in endpoint; `form_target` is the
/// source the form may end at (the client's redirect URI is where the POST is redirected,
/// and `form-action` governs redirects too).
pub fn headers(r: &mut Response, nonce: &str, form_target: Option<&str>) {
    let target = form_target.map(|t| format!(" {t}")).unwrap_or_default();
    let csp = format!(
        "default-src 'none'; style-src 'nonce-{nonce}'; form-action 'self'{target}; \
         frame-ancestors 'none'; base-uri 'none'"
    );
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // `same-origin`, not `no-referrer`: under the latter a browser posts the form with
    // `Origin: null`, and the origin check could not tell the page from a sandboxed frame.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}

fn document(nonce: &str, title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{title}</title><style nonce=\"{nonce}\">{STYLE}</style></head><body>{body}</body></html>",
        title = esc(title)
    )
}

/// The sign-in form.
pub fn render(p: &Page<'_>, nonce: &str, status: StatusCode, form_target: &str) -> Response {
    let can = if p.write {
        "read your containers, projects, images and the rest of Arcane, <b>and change them</b> \
         (start, stop, deploy, delete — each destructive step still asks you first)"
    } else {
        "read your containers, projects, images and the rest of Arcane (no changes)"
    };
    let message = p
        .message
        .map(|m| {
            format!(
                "<p class=\"msg\" id=\"message\" role=\"alert\">{}</p>",
                esc(m)
            )
        })
        .unwrap_or_default();
    let access = if p.write {
        "<fieldset><legend>Access</legend>\
         <label><input type=\"radio\" name=\"access\" value=\"write\" checked> Read and change</label>\
         <label><input type=\"radio\" name=\"access\" value=\"read\"> Read only</label></fieldset>"
    } else {
        "<input type=\"hidden\" name=\"access\" value=\"read\">"
    };
    let body = format!(
        "<h1>Sign in to Arcane</h1>\
         <p class=\"who\"><b id=\"client\">{client}</b> <small id=\"name-note\">({note})</small> asks to use arcane-mcp as you. It will be able to {can}.\
         <br><small>After you sign in you go back to <span id=\"returns\">{returns}</span>.</small></p>\
         {message}\
         <form method=\"post\" action=\"authorize\">\
         <input type=\"hidden\" name=\"form\" value=\"{form}\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         {access}\
         <fieldset><legend>Your Arcane account</legend>\
         <label for=\"username\">Username</label><input type=\"text\" id=\"username\" name=\"username\" autocomplete=\"username\" value=\"{user}\">\
         <label for=\"password\">Password</label><input type=\"password\" id=\"password\" name=\"password\" autocomplete=\"current-password\">\
         <button type=\"submit\" name=\"method\" value=\"password\" id=\"sign-in\">Sign in</button>\
         <br><small>A new API key named after this client is made for you in Arcane (Settings → API Keys), where you can delete it to end this access.</small></fieldset>\
         <fieldset><legend>Or an Arcane API key</legend>\
         <label for=\"api_key\">API key</label><input type=\"password\" id=\"api_key\" name=\"api_key\" autocomplete=\"off\">\
         <button type=\"submit\" name=\"method\" value=\"key\" id=\"use-key\">Use this key</button>\
         <br><small>For accounts with a passkey or two-factor sign-in: make a key in Arcane under Settings → API Keys and paste it here. The client then works with that key until you delete it.</small></fieldset>\
         <button type=\"submit\" name=\"method\" value=\"deny\" id=\"deny\">Cancel</button>\
         </form>",
        client = esc(p.client),
        note = esc(p.name_note),
        returns = esc(p.returns_to),
        form = esc(p.form),
        csrf = esc(p.csrf),
        user = esc(p.username),
    );
    let mut r = (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        document(nonce, "Sign in to Arcane", &body),
    )
        .into_response();
    headers(&mut r, nonce, Some(form_target));
    r
}

/// A page that ends the flow here (no redirect: the request did not prove where to send the
/// person, so sending them anywhere would be an open redirect).
pub fn error(nonce: &str, status: StatusCode, text: &str) -> Response {
    let body = format!(
        "<h1>This sign-in cannot go on</h1><p class=\"msg\" id=\"message\">{}</p>\
         <p><small>Go back to the application and connect again.</small></p>",
        esc(text)
    );
    error_page(nonce, status, &body)
}

/// The error page around `body`, with the page's headers.
fn error_page(nonce: &str, status: StatusCode, body: &str) -> Response {
    let mut r = (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        document(nonce, "Sign-in error", body),
    )
        .into_response();
    headers(&mut r, nonce, None);
    r
}

/// An error of a request whose redirect URI is registered but proves nothing (registration
/// is open: RFC 9700 §4.11.2): shown here, with a link back that the person may follow.
pub fn error_back(nonce: &str, status: StatusCode, text: &str, link: &str, to: &str) -> Response {
    let body = format!(
        "<h1>This sign-in cannot go on</h1><p class=\"msg\" id=\"message\">{}</p>\
         <p><a id=\"back\" href=\"{}\">Return to {}</a></p>",
        esc(text),
        esc(link),
        esc(to)
    );
    error_page(nonce, status, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untrusted_text_is_escaped() {
        assert_eq!(
            esc("<script>\"x\"&'y'\u{7}</script>"),
            "&lt;script&gt;&quot;x&quot;&amp;&#39;y&#39;&lt;/script&gt;"
        );
    }
}
