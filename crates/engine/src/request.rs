//! Building the HTTP request of an action from its validated parameters: path, query, header,
//! body, multipart and octet-stream parameters by [`ParamLocation`], the default environment, an
//! explicit `sort` on list calls. A [`Prepared`] request can be previewed (secrets masked) or
//! sent.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::http::Auth;
use crate::path;
use crate::transfer::{FormField, file_bytes, multipart_form};
use arcane_catalog::{Action, BodyEncoding, ParamLocation};
use arcane_redact::{MASK, is_secret_name, mask_text, redacted, redacted_params};

/// Headers an argument may not set: our own credential and any other credential, the target
/// host, proxy and forwarding headers, and hop-by-hop or framing headers that would change how
/// the request is carried. Compared case-insensitively; `*` ends a prefix.
const FORBIDDEN_HEADERS: &[&str] = &[
    "x-api-key",
    "authorization",
    "cookie",
    "host",
    "forwarded",
    "x-forwarded-*",
    "x-real-ip",
    "x-arcane-agent-token",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-*",
    "content-length",
    "expect",
];

/// Whether an argument may set header `name`.
pub fn header_allowed(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    !FORBIDDEN_HEADERS.iter().any(|f| match f.strip_suffix('*') {
        Some(prefix) => n.starts_with(prefix),
        None => n == *f,
    })
}

/// A header value is sent only when it is visible ASCII, spaces and tabs: a line break would
/// start another header, other controls and non-ASCII are refused by servers and proxies.
fn header_value_ok(v: &str) -> bool {
    v.chars().all(|c| c == '\t' || (' '..='~').contains(&c))
}

/// The body of a prepared request.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    None,
    Json(Value),
    /// Raw bytes (octet-stream bodies, sent from a base64 `body` parameter).
    Bytes(Vec<u8>),
    /// multipart/form-data fields, sent by [`multipart_form`]; file fields as file parts
    /// (`base64:`-prefixed values decoded).
    Multipart(Vec<FormField>),
}

/// A request ready to preview or send.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub method: String,
    /// Full URL including the query string.
    pub url: String,
    /// Headers other than authentication.
    pub headers: Vec<(String, String)>,
    pub body: Body,
    /// The environment the call addresses (for hints), when the action has one.
    pub environment: Option<String>,
    /// Values of secret-looking path and query parameters, masked in previews of the URL.
    pub secret_values: Vec<String>,
    /// Where the filled path template is in `url` (bytes): the environment and the targets,
    /// identifiers the preview shows as given (`arcane_redact::shown_as_given`) while the
    /// rest of the URL is masked as text.
    pub path_span: std::ops::Range<usize>,
}

/// Builds the request of `action` with `params` (already validated) against `base_url`
/// (without `/api`).
pub fn build(
    action: &Action,
    params: &Map<String, Value>,
    base_url: &str,
    default_env: &str,
) -> Result<Prepared, String> {
    let mut path = action.request.path.clone();
    let mut query: Vec<(String, String)> = Vec::new();
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut json_body = Map::new();
    let mut whole_body: Option<&Value> = None;
    let mut form: Vec<FormField> = Vec::new();
    let mut environment = None;
    let mut secret_values = Vec::new();

    for p in &action.params {
        let value = params.get(&p.name);
        if matches!(p.location, ParamLocation::Path | ParamLocation::Query)
            && is_secret_name(&p.name)
            && let Some(v) = value
        {
            secret_values.push(scalar(v));
        }
        match p.location {
            ParamLocation::Environment => {
                // Never sent itself: it only fills `{id}` of `/environments/{id}/…`.
                let env = value.map(scalar).unwrap_or_else(|| default_env.to_string());
                let seg = path::segment(&p.name, &env).map_err(|e| e.to_string())?;
                path = path.replacen("{id}", &seg, 1);
                environment = Some(env);
            }
            ParamLocation::Path => {
                let Some(v) = value else {
                    return Err(format!("missing path parameter {}", p.name));
                };
                let value = scalar(v);
                let seg = if p.takes_path {
                    path::segment_path(&p.name, &value)
                } else {
                    path::segment(&p.name, &value)
                }
                .map_err(|e| e.to_string())?;
                path = path.replace(&format!("{{{}}}", p.wire_name), &seg);
            }
            ParamLocation::Query => {
                if let Some(v) = value {
                    match v {
                        Value::Null => {}
                        // Arcane (huma) reads arrays in the query as comma-separated values.
                        Value::Array(xs) => query.push((
                            p.wire_name.clone(),
                            xs.iter().map(scalar).collect::<Vec<_>>().join(","),
                        )),
                        other => query.push((p.wire_name.clone(), scalar(other))),
                    }
                }
            }
            ParamLocation::Header => {
                if let Some(v) = value.filter(|v| !v.is_null()) {
                    if !header_allowed(&p.wire_name) {
                        return Err(format!(
                            "the header {} cannot be set from an argument (credentials, host, \
                             forwarding and connection headers are the server's own); leave {} \
                             out",
                            p.wire_name, p.name
                        ));
                    }
                    let text = scalar(v);
                    if !header_value_ok(&text) {
                        // The header is named (a name is no secret); its value is shown, its
                        // invisible characters escaped, unless the header carries a credential.
                        let param = if p.name == p.wire_name {
                            String::new()
                        } else {
                            format!(" (parameter {})", p.name)
                        };
                        let value = if is_secret_name(&p.wire_name) || is_secret_name(&p.name) {
                            String::new()
                        } else {
                            format!(
                                " \"{}\"",
                                arcane_markdown::clip(&arcane_markdown::visible(&text), 80)
                            )
                        };
                        return Err(format!(
                            "the value{value} of the header {}{param} holds a line break, a \
                             control or a non-ASCII character, not allowed in an HTTP header; \
                             send visible ASCII only",
                            p.wire_name
                        ));
                    }
                    headers.push((p.wire_name.clone(), text));
                }
            }
            ParamLocation::BodyProperty => {
                if let Some(v) = value {
                    json_body.insert(p.wire_name.clone(), v.clone());
                }
            }
            ParamLocation::Body => whole_body = value,
            ParamLocation::FormField => {
                if let Some(v) = value.filter(|v| !v.is_null()) {
                    // A file field (`format: binary`, or a list of them) goes as file parts:
                    // Arcane reads those apart from text values.
                    form.push(FormField {
                        name: p.wire_name.clone(),
                        value: v.clone(),
                        is_file: is_file(&p.schema) || is_file_array(&p.schema),
                        file_name: None,
                    });
                }
            }
            // Already folded into their parameter's JSON text by `encode.rs`.
            ParamLocation::Handler | ParamLocation::Encoded => {}
        }
    }

    if action.output.list && action.request.sortable && !params.contains_key("sort") {
        // Paging is only stable with an explicit order.
        query.push(("sort".into(), default_sort(action)));
    }

    let body = match action.request.body {
        BodyEncoding::None => Body::None,
        BodyEncoding::Json => match whole_body {
            Some(v) => Body::Json(v.clone()),
            None if json_body.is_empty() && !body_required(action) => Body::None,
            None => Body::Json(Value::Object(json_body)),
        },
        BodyEncoding::OctetStream => match whole_body {
            Some(v) => Body::Bytes(
                base64::engine::general_purpose::STANDARD
                    .decode(scalar(v).trim())
                    .map_err(|e| format!("body: invalid base64: {e}"))?,
            ),
            None => Body::None,
        },
        BodyEncoding::Multipart => {
            // Checked now (base64 of file fields), so a bad value fails before anything is sent.
            multipart_form(&form).map_err(|e| e.to_string())?;
            Body::Multipart(form)
        }
    };

    let mut url = format!("{}/api", base_url.trim_end_matches('/'));
    let path_span = url.len()..url.len() + path.len();
    url.push_str(&path);
    if !query.is_empty() {
        let qs = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(query.iter())
            .finish();
        url.push('?');
        url.push_str(&qs);
    }
    Ok(Prepared {
        method: action.request.method.clone(),
        url,
        headers,
        body,
        environment,
        secret_values,
        path_span,
    })
}

/// Whether a form field's schema is a file (`format: binary`).
fn is_file(schema: &Value) -> bool {
    schema.get("format").and_then(Value::as_str) == Some("binary")
}

/// Whether a form field's schema is a list of files.
fn is_file_array(schema: &Value) -> bool {
    schema.get("items").is_some_and(is_file)
}

/// Whether any body property is required (then an empty object is still sent).
fn body_required(action: &Action) -> bool {
    action
        .params
        .iter()
        .any(|p| p.location == ParamLocation::BodyProperty && p.required)
}

/// A value as it goes into a path, query or header.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The sort key of a list call when the caller gave none: the first of the `sort` parameter's
/// enum (preferring `name`), else `name`, `id` or the first field of the listed items.
pub fn default_sort(action: &Action) -> String {
    if let Some(sort) = &action.request.default_sort {
        return sort.clone();
    }
    if let Some(Value::Array(options)) = action.param("sort").and_then(|p| p.schema.get("enum")) {
        let names: Vec<&str> = options.iter().filter_map(Value::as_str).collect();
        for want in ["name", "id"] {
            if names.contains(&want) {
                return want.to_string();
            }
        }
        if let Some(first) = names.first() {
            return first.to_string();
        }
    }
    let item_props = action.output.response_schema.as_ref().and_then(|s| {
        s.pointer("/properties/data/items/properties")
            .or_else(|| s.pointer("/items/properties"))
            .and_then(Value::as_object)
    });
    match item_props {
        Some(props) => ["name", "id"]
            .into_iter()
            .find(|k| props.contains_key(*k))
            .map(str::to_string)
            .or_else(|| props.keys().find(|k| *k != "$schema").cloned())
            .unwrap_or_else(|| "id".into()),
        None => "name".into(),
    }
}

/// A file field as previewed: its size, never its content (a file may hold anything).
fn file_preview(v: &Value) -> Value {
    match v {
        Value::Array(xs) => Value::Array(xs.iter().map(file_preview).collect()),
        Value::String(s) => Value::String(match file_bytes(s) {
            Ok(b) => format!("<file, {} bytes>", b.len()),
            Err(_) => "<file, invalid base64>".into(),
        }),
        Value::Object(o) => {
            let size = o
                .get("content")
                .and_then(Value::as_str)
                .and_then(|c| file_bytes(c).ok())
                .map(|b| b.len())
                .unwrap_or(0);
            json!({"name": o.get("name"), "content": format!("<file, {size} bytes>")})
        }
        other => other.clone(),
    }
}

impl Prepared {
    /// The request as a safe-mode preview: method, URL, headers (the credential masked), body;
    /// secrets masked by the one redactor (`arcane_redact`), including JSON sent as a
    /// multipart field and a password in the URL. `domain` is the action's domain.
    pub fn preview(&self, auth: &Auth, domain: &str) -> Value {
        let mut headers = Map::new();
        let (name, _) = auth.header();
        headers.insert(name.into(), Value::String(MASK.into()));
        for (k, v) in &self.headers {
            let masked = if is_secret_name(k) {
                MASK.to_string()
            } else {
                mask_text(v).into_owned()
            };
            headers.insert(k.clone(), Value::String(masked));
        }
        let body = match &self.body {
            Body::None => Value::Null,
            Body::Json(v) => redacted(v, domain),
            Body::Bytes(b) => json!({"bytes": b.len(), "contentType": "application/octet-stream"}),
            Body::Multipart(fields) => {
                // Seen as one object of parameters, so that field names, JSON-encoded parts
                // (`project`, `manifest`) and `.env`/compose text get the same rules as a JSON
                // body, as the audit log sees them. Files show their size only.
                let mut form = Map::new();
                for f in fields {
                    let v = if f.is_file {
                        file_preview(&f.value)
                    } else {
                        f.value.clone()
                    };
                    form.insert(f.name.clone(), v);
                }
                redacted_params(&form, domain, &[])
            }
        };
        let url = self.preview_url();
        json!({"method": self.method, "url": url, "headers": headers, "body": body})
    }

    /// The URL as a preview shows it: the values of secret-named path and query parameters
    /// masked wherever they are; the filled path (the environment, the targets — identifiers,
    /// shown as the question shows them) kept as it is; the base URL (a password in it) and
    /// the query masked as text.
    fn preview_url(&self) -> String {
        let secrets_masked = |part: &str| {
            let mut part = part.to_string();
            for secret in self.secret_values.iter().filter(|s| !s.is_empty()) {
                for form in [
                    path::encode(secret),
                    url::form_urlencoded::byte_serialize(secret.as_bytes()).collect(),
                ] {
                    part = part.replace(&form, MASK);
                }
            }
            part
        };
        let span = &self.path_span;
        let parts = self
            .url
            .get(..span.start)
            .and_then(|base| Some((base, self.url.get(span.clone())?, self.url.get(span.end..)?)));
        match parts {
            Some((base, path, rest)) => format!(
                "{}{}{}",
                mask_text(&secrets_masked(base)),
                secrets_masked(path),
                mask_text(&secrets_masked(rest))
            ),
            None => mask_text(&secrets_masked(&self.url)).into_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_bodies_are_masked_in_previews() {
        let p = Prepared {
            method: "POST".into(),
            url: "http://a/api/x".into(),
            headers: vec![],
            body: Body::Json(
                json!({"username": "bot", "password": "p", "token": "t", "apiKey": "k",
                          "nested": {"clientSecret": "s"},
                          "env": ["A=1", "B", "API_TOKEN=t2"],
                          "envContent": "X=1\nX_PASSWORD=2"}),
            ),
            environment: None,
            secret_values: vec![],
            path_span: 0..0,
        };
        let m = &p.preview(&Auth::ApiKey("k".into()), "")["body"];
        assert_eq!(m["username"], "bot");
        for k in ["password", "token", "apiKey"] {
            assert_eq!(m[k], MASK, "{k}");
        }
        assert_eq!(m["nested"]["clientSecret"], MASK);
        // Variables are judged by name and shape: ordinary values are shown.
        assert_eq!(m["env"], json!(["A=1", "B", format!("API_TOKEN={MASK}")]));
        assert_eq!(m["envContent"], format!("X=1\nX_PASSWORD={MASK}"));
    }

    #[test]
    fn secret_path_values_are_masked_in_previews() {
        let p = Prepared {
            method: "POST".into(),
            url: "http://a/api/webhooks/trigger/s3cr%2Ft?x=1".into(),
            headers: vec![("X-Registry-Token".into(), "t".into())],
            body: Body::None,
            environment: None,
            secret_values: vec!["s3cr/t".into()],
            path_span: 12..38,
        };
        let v = p.preview(&Auth::ApiKey("k".into()), "webhook");
        assert_eq!(
            v["url"],
            format!("http://a/api/webhooks/trigger/{MASK}?x=1")
        );
        assert_eq!(v["headers"]["X-Registry-Token"], MASK);
        assert_eq!(v["headers"]["X-API-Key"], MASK);
    }

    /// Found by an outside attack (docs/security.md): the preview's URL masked a target that looks like a credential
    /// (`/volumes/********`). The filled path is shown as given; the base URL's password and
    /// the query's secrets stay masked.
    #[test]
    fn targets_in_the_path_are_shown_as_given_in_previews() {
        let mut a = crate::effect::test_action(
            "DELETE",
            "volume.delete",
            "Delete volume",
            "/environments/{id}/volumes/{volumeName}",
            &[
                ("environmentId", "environment"),
                ("volumeName", "path"),
                ("note", "query"),
            ],
        );
        a.request.body = arcane_catalog::BodyEncoding::None;
        let params = json!({"volumeName": "sk-proj-abcdefghijklmnopqrstuvwxyz01",
            "environmentId": "AKIAIOSFODNN7EXAMPLE", "note": "glpat-abcdefghijklmnopqrst"});
        let p = build(&a, params.as_object().unwrap(), "http://u:pw-base-1@a", "0").unwrap();
        let url = p.preview(&Auth::ApiKey("k".into()), "volume")["url"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            url.contains(
                "/api/environments/AKIAIOSFODNN7EXAMPLE/volumes/sk-proj-abcdefghijklmnopqrstuvwxyz01?"
            ),
            "{url}"
        );
        assert!(
            !url.contains("pw-base-1") && !url.contains("glpat-"),
            "{url}"
        );
    }

    #[test]
    fn json_text_in_form_fields_is_masked_in_previews() {
        let p = Prepared {
            method: "POST".into(),
            url: "http://a/api/environments/0/projects".into(),
            headers: vec![],
            body: Body::Multipart(vec![
                field(
                    "project",
                    json!(r#"{"name":"web","envContent":"DB_PASSWORD=hunter2\nPORT=80"}"#),
                    false,
                ),
                field("note", json!("plain"), false),
                field(
                    "files",
                    json!(["server { listen 80; }", "base64:AJ+Slv8="]),
                    true,
                ),
            ]),
            environment: None,
            secret_values: vec![],
            path_span: 0..0,
        };
        let v = p.preview(&Auth::ApiKey("k".into()), "project");
        assert_eq!(v["body"]["project"]["name"], "web");
        assert_eq!(
            v["body"]["project"]["envContent"],
            format!("DB_PASSWORD={MASK}\nPORT=80")
        );
        assert!(!v.to_string().contains("hunter2"));
        assert_eq!(v["body"]["note"], "plain");
        assert_eq!(
            v["body"]["files"],
            json!(["<file, 21 bytes>", "<file, 5 bytes>"])
        );
    }

    fn field(name: &str, value: Value, is_file: bool) -> FormField {
        FormField {
            name: name.into(),
            value,
            is_file,
            file_name: None,
        }
    }

    #[test]
    fn auth_debug_hides_the_credential() {
        assert_eq!(
            format!("{:?}", Auth::ApiKey("sekrit".into())),
            "ApiKey(***)"
        );
    }
}
