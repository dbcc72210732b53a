//! The server as its own authorization server (`--oauth-issuer self`, docs/oauth.md): the real
//! binary in front of the simulator, driven over HTTP as a client and a browser would (the
//! SDKs' OAuth clients, Chromium and HAProxy drive it too, in the end-to-end group:
//! `e2e_oauth_self`). Metadata, registration, the sign-in page with a password and
//! with a pasted key, PKCE, tokens, calls as the person, refresh rotation and reuse detection,
//! revocation, a key deleted in Arcane, two replicas sharing a key file, and the attack pass:
//! open redirects, code reuse, PKCE downgrade, redirect URI tricks, CSRF, tokens of one
//! client used by another, oversized registrations.

use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;

use crate::process_support::{HttpServer, free_port, post_call_2026};
use crate::server_support::Sim;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;
const REDIRECT: &str = "http://127.0.0.1:9/callback";

pub(crate) async fn sim_with_people() -> Sim {
    use arcane_sim::{SimRole, SimUser};
    Sim::start_with_users(vec![
        SimUser {
            name: "alice".into(),
            key: "alice-key".into(),
            role: SimRole::Admin,
            password: Some("alice-password".into()),
        },
        SimUser {
            name: "bob".into(),
            key: "bob-key".into(),
            role: SimRole::Viewer,
            password: None,
        },
    ])
    .await
}

pub(crate) async fn server_at(sim: &Sim, port: u16, extra: &[&str]) -> HttpServer {
    let public = format!("http://127.0.0.1:{port}");
    let mut args = vec!["--public-url", &public, "--oauth-issuer", "self"];
    args.extend_from_slice(extra);
    HttpServer::start_at(port, &sim.base(), Some(sim.sim.api_key()), &args, &[]).await
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A PKCE verifier and its S256 challenge.
fn pkce() -> (String, String) {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).unwrap();
    let verifier = B64.encode(b);
    let challenge = B64.encode(sha2::Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

async fn register(base: &str, body: Value) -> (u16, Value) {
    let r = http()
        .post(format!("{base}/register"))
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

pub(crate) async fn client_id(base: &str, name: &str) -> String {
    let (status, v) = register(
        base,
        json!({"client_name": name, "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    v["client_id"].as_str().unwrap().to_string()
}

/// The value of the hidden field `name` of the sign-in page.
fn field(html: &str, name: &str) -> String {
    let at = html
        .find(&format!("name=\"{name}\" value=\""))
        .unwrap_or_else(|| panic!("no field {name}: {html}"));
    let rest = &html[at + name.len() + 15..];
    rest[..rest.find('"').unwrap()].to_string()
}

/// The sign-in page of an authorization request: its status, its HTML, its CSRF cookie and
/// the answer's headers (a redirect's `location`).
struct Page {
    status: u16,
    html: String,
    cookie: String,
    headers: reqwest::header::HeaderMap,
}

async fn authorize(base: &str, query: &[(&str, &str)]) -> Page {
    let r = http()
        .get(format!("{base}/authorize"))
        .query(query)
        .send()
        .await
        .unwrap();
    let headers = r.headers().clone();
    let cookie = headers
        .get("set-cookie")
        .map(|c| c.to_str().unwrap().split(';').next().unwrap().to_string())
        .unwrap_or_default();
    Page {
        status: r.status().as_u16(),
        html: r.text().await.unwrap(),
        cookie,
        headers,
    }
}

fn request<'a>(client: &'a str, challenge: &'a str, state: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("response_type", "code"),
        ("client_id", client),
        ("redirect_uri", REDIRECT),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256"),
        ("state", state),
        ("scope", "arcane:read arcane:write"),
    ]
}

/// Posts the page's form with `fields`; the answer's status, `location` and body.
async fn answer(base: &str, page: &Page, fields: &[(&str, &str)]) -> (u16, String, String) {
    let mut form = vec![
        ("form".to_string(), field(&page.html, "form")),
        ("csrf".to_string(), field(&page.html, "csrf")),
    ];
    form.extend(fields.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let r = http()
        .post(format!("{base}/authorize"))
        .header("cookie", &page.cookie)
        .header("origin", base)
        .form(&form)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let location = r
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, location, r.text().await.unwrap())
}

fn query_of(location: &str) -> std::collections::HashMap<String, String> {
    url::Url::parse(location)
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

async fn token(base: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let r = http()
        .post(format!("{base}/token"))
        .form(form)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    assert_eq!(
        r.headers()
            .get("cache-control")
            .map(|v| v.to_str().unwrap()),
        Some("no-store")
    );
    (status, r.json().await.unwrap())
}

/// A whole sign-in of `client` with `fields`: the code and the verifier.
pub(crate) async fn code_for(
    base: &str,
    client: &str,
    fields: &[(&str, &str)],
) -> (String, String) {
    let (verifier, challenge) = pkce();
    let page = authorize(base, &request(client, &challenge, "st-1")).await;
    assert_eq!(page.status, 200, "{}", page.html);
    let (status, location, body) = answer(base, &page, fields).await;
    assert_eq!(status, 303, "{body}");
    let q = query_of(&location);
    assert_eq!(q["state"], "st-1");
    (q["code"].clone(), verifier)
}

pub(crate) async fn exchange(base: &str, client: &str, code: &str, verifier: &str) -> (u16, Value) {
    token(
        base,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("client_id", client),
            ("code_verifier", verifier),
        ],
    )
    .await
}

pub(crate) async fn refresh(base: &str, client: &str, rt: &str) -> (u16, Value) {
    token(
        base,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", rt),
            ("client_id", client),
        ],
    )
    .await
}

pub(crate) const PASSWORD: [(&str, &str); 4] = [
    ("method", "password"),
    ("username", "alice"),
    ("password", "alice-password"),
    ("access", "write"),
];

pub(crate) async fn users_seen(sim: &Sim) -> Vec<String> {
    sim.requests()
        .await
        .iter()
        .filter(|r| !r["path"].as_str().unwrap_or("").starts_with("/api/auth/"))
        .map(|r| r["user"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Alice's personal keys in the simulator, through a signed-in session of hers.
pub(crate) async fn alice_keys(sim: &Sim) -> (String, Vec<Value>) {
    let h = reqwest::Client::new();
    let login: Value = h
        .post(format!("{}/api/auth/login", sim.base()))
        .json(&json!({"username": "alice", "password": "alice-password"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let session = login["data"]["token"].as_str().unwrap().to_string();
    let keys: Value = h
        .get(format!("{}/api/auth/me/api-keys", sim.base()))
        .bearer_auth(&session)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    (session, keys["data"].as_array().unwrap().clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_with_an_arcane_account() {
    let sim = sim_with_people().await;
    let port = free_port();
    let server = server_at(&sim, port, &[]).await;
    let base = server.base.clone();

    // Discovery: the resource points at this server, whose metadata is RFC 8414's.
    let pr: Value = reqwest::get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(pr["authorization_servers"], json!([base]));
    let m: Value = reqwest::get(format!("{base}/.well-known/oauth-authorization-server"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(m["issuer"], base.as_str());
    assert_eq!(m["token_endpoint"], format!("{base}/token"));
    assert_eq!(m["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(m["client_id_metadata_document_supported"], true);

    let client = client_id(&base, "Claude <b>").await;
    // The page names the client (escaped) and what it may do, under a strict CSP.
    let (verifier, challenge) = pkce();
    let page = authorize(&base, &request(&client, &challenge, "xyz")).await;
    assert_eq!(page.status, 200);
    assert!(page.html.contains("Claude &lt;b&gt;"), "{}", page.html);
    assert!(page.html.contains("and change them"));
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert!(!page.html.contains("<script"), "no script on the page");
    assert!(
        page.cookie.starts_with("arcane_mcp_csrf="),
        "{}",
        page.cookie
    );
    let set = page.headers["set-cookie"].to_str().unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );

    // A wrong password: the page again, with Arcane's verdict; nothing issued.
    let (status, location, body) = answer(
        &base,
        &page,
        &[
            ("method", "password"),
            ("username", "alice"),
            ("password", "wrong"),
        ],
    )
    .await;
    assert_eq!((status, location.as_str()), (200, ""));
    assert!(
        body.contains("did not accept this username and password"),
        "{body}"
    );

    // The right one: a code for the redirect URI, with the state and the issuer.
    let (status, location, _) = answer(&base, &page, &PASSWORD).await;
    assert_eq!(status, 303);
    assert!(location.starts_with(REDIRECT), "{location}");
    let q = query_of(&location);
    assert_eq!(
        (q["state"].as_str(), q["iss"].as_str()),
        ("xyz", base.as_str())
    );
    // Arcane made a key named after the client, which the calls run with.
    let (_, keys) = alice_keys(&sim).await;
    assert!(
        keys.iter().any(|k| k["name"] == "arcane-mcp: Claude <b>"),
        "{keys:?}"
    );
    let (status, tokens) = exchange(&base, &client, &q["code"], &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["scope"], "arcane:read arcane:write");
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let rt = tokens["refresh_token"].as_str().unwrap().to_string();
    assert!(access.starts_with("amcp_at_") && rt.starts_with("amcp_rt_"));

    // The code is single-use: a second exchange fails and revokes what the first gave.
    let (status, again) = exchange(&base, &client, &q["code"], &verifier).await;
    assert_eq!(
        (status, again["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    assert!(
        again["error_description"]
            .as_str()
            .unwrap()
            .contains("sign in again")
    );
    let (status, _, body) =
        post_call_2026(&base, &access, "phone", "container.list", json!({})).await;
    assert_eq!(status, 401, "the first exchange's token is revoked: {body}");

    // A fresh sign-in: calls run as alice with the key made for this client.
    let (code, verifier) = code_for(&base, &client, &PASSWORD).await;
    let (_, tokens) = exchange(&base, &client, &code, &verifier).await;
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let rt = tokens["refresh_token"].as_str().unwrap().to_string();
    sim.reset().await;
    let (status, _, body) = post_call_2026(
        &base,
        &access,
        "phone",
        "container.restart",
        json!({"containerId": "web-1"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let seen = users_seen(&sim).await;
    assert!(
        !seen.is_empty() && seen.iter().all(|u| u == "alice"),
        "{seen:?}"
    );

    // Refresh rotates; the spent refresh token presented again ends the grant for both.
    let (status, second) = refresh(&base, &client, &rt).await;
    assert_eq!(status, 200, "{second}");
    let rt2 = second["refresh_token"].as_str().unwrap().to_string();
    assert_ne!(rt2, rt);
    let (status, third) = refresh(&base, &client, &rt2).await;
    assert_eq!(status, 200, "{third}");
    let (status, reused) = refresh(&base, &client, &rt2).await;
    assert_eq!(status, 400);
    assert!(
        reused["error_description"]
            .as_str()
            .unwrap()
            .contains("used already"),
        "{reused}"
    );
    let (status, _) = refresh(&base, &client, third["refresh_token"].as_str().unwrap()).await;
    assert_eq!(status, 400, "the whole grant ended");

    // Revocation (RFC 7009): the access token is refused at once; another client cannot revoke.
    let (code, verifier) = code_for(&base, &client, &PASSWORD).await;
    let (_, tokens) = exchange(&base, &client, &code, &verifier).await;
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let other = client_id(&base, "other").await;
    let r = http()
        .post(format!("{base}/revoke"))
        .form(&[("token", access.as_str()), ("client_id", other.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let (status, _, _) = post_call_2026(&base, &access, "phone", "container.list", json!({})).await;
    assert_eq!(status, 200, "another client's revocation does nothing");
    let r = http()
        .post(format!("{base}/revoke"))
        .form(&[("token", access.as_str()), ("client_id", client.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let (status, h, body) =
        post_call_2026(&base, &access, "phone", "container.list", json!({})).await;
    assert_eq!(status, 401, "{body}");
    assert!(
        h["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("invalid_token")
    );

    // Without --state-key-file the key is the process's: a restart ends the sign-ins. (Stopped
    // and waited for: a process killed but not yet gone still holds the port.)
    server.stop().await;
    let server = server_at(&sim, port, &[]).await;
    let (status, h, _) =
        post_call_2026(&server.base, &access, "phone", "container.list", json!({})).await;
    assert_eq!(status, 401);
    assert!(
        h["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("current key")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_key_and_a_pasted_key_and_replicas() {
    let sim = sim_with_people().await;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("state.key");
    std::fs::write(&key, format!("{}\n", "5a".repeat(32))).unwrap();
    let key = key.to_str().unwrap();
    let (p1, p2) = (free_port(), free_port());
    // Two replicas sharing the key file and one public URL (as behind a balancer; sealed
    // data is bound to the issuer, so a replica under another URL would open nothing).
    let one = server_at(&sim, p1, &["--state-key-file", key]).await;
    let two = crate::process_support::HttpServer::start_at(
        p2,
        &sim.base(),
        Some(sim.sim.api_key()),
        &[
            "--public-url",
            &one.base,
            "--oauth-issuer",
            "self",
            "--state-key-file",
            key,
        ],
        &[],
    )
    .await;
    let elsewhere = server_at(&sim, free_port(), &["--state-key-file", key]).await;

    // Bob has no password (as an account with a passkey): he pastes his API key.
    let client = client_id(&one.base, "ChatGPT").await;
    let (code, verifier) = code_for(
        &one.base,
        &client,
        &[
            ("method", "key"),
            ("api_key", "bob-key"),
            ("access", "read"),
        ],
    )
    .await;
    let (status, tokens) = exchange(&one.base, &client, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(tokens["scope"], "arcane:read", "read only was chosen");
    let access = tokens["access_token"].as_str().unwrap().to_string();
    sim.reset().await;
    // The other replica opens the same token.
    let (status, _, body) =
        post_call_2026(&two.base, &access, "phone", "container.list", json!({})).await;
    assert_eq!(status, 200, "{body}");
    // A server under another public URL, even with the same key file, does not.
    let (status, _, _) = post_call_2026(
        &elsewhere.base,
        &access,
        "phone",
        "container.list",
        json!({}),
    )
    .await;
    assert_eq!(status, 401);
    assert!(users_seen(&sim).await.iter().all(|u| u == "bob"));
    let (_, _, body) = post_call_2026(
        &two.base,
        &access,
        "phone",
        "container.restart",
        json!({"containerId": "web-1"}),
    )
    .await;
    assert!(
        body.contains("arcane:write"),
        "read only cannot write: {body}"
    );
    // A pasted key Arcane refuses: the page says so.
    let (_, challenge) = pkce();
    let page = authorize(&one.base, &request(&client, &challenge, "s")).await;
    let (status, _, body) =
        answer(&one.base, &page, &[("method", "key"), ("api_key", "nope")]).await;
    assert_eq!(status, 200);
    assert!(body.contains("did not accept this API key"), "{body}");

    // Alice signs in at replica one, refreshes at replica two.
    let (code, verifier) = code_for(&one.base, &client, &PASSWORD).await;
    let (_, tokens) = exchange(&two.base, &client, &code, &verifier).await;
    let rt = tokens["refresh_token"].as_str().unwrap().to_string();
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let (status, t2) = refresh(&two.base, &client, &rt).await;
    assert_eq!(status, 200, "{t2}");
    // Her key deleted in Arcane: replica one (which never checked it) refuses the token,
    // and the refresh says to sign in again.
    let (session, keys) = alice_keys(&sim).await;
    for k in &keys {
        reqwest::Client::new()
            .delete(format!(
                "{}/api/auth/me/api-keys/{}",
                sim.base(),
                k["id"].as_str().unwrap()
            ))
            .bearer_auth(&session)
            .send()
            .await
            .unwrap();
    }
    let (status, h, body) =
        post_call_2026(&one.base, &access, "phone", "container.list", json!({})).await;
    assert_eq!(status, 401, "{body}");
    let challenge = h["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains("deleted or expired in Arcane"),
        "{challenge}"
    );
    let (status, v) = refresh(&one.base, &client, t2["refresh_token"].as_str().unwrap()).await;
    assert_eq!(status, 400);
    let d = v["error_description"].as_str().unwrap();
    assert!(
        d.contains("no longer accepts the API key") && d.contains("sign in again"),
        "{d}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_pass() {
    let sim = sim_with_people().await;
    let port = free_port();
    let server = server_at(&sim, port, &[]).await;
    let base = server.base.clone();
    let client = client_id(&base, "victim").await;
    let (verifier, challenge) = pkce();

    // Open redirect: an unregistered redirect URI (or a near miss) ends on a page, never a
    // redirect to it.
    for bad in [
        "https://evil.example/cb",
        "http://127.0.0.1:9/callback/../evil",
        "http://127.0.0.1:9/callback?x=1",
        "http://127.0.0.1:9/Callback",
    ] {
        let mut q = request(&client, &challenge, "s");
        q[2] = ("redirect_uri", bad);
        let page = authorize(&base, &q).await;
        assert_eq!(page.status, 400, "{bad}");
        assert!(page.headers.get("location").is_none(), "{bad}");
        assert!(
            page.html.contains("not one this client registered"),
            "{bad}"
        );
    }
    // An unknown or forged client: a page too.
    for forged in ["amcp_c_AAAA", "https://127.0.0.1/c.json", "client"] {
        let mut q = request(forged, &challenge, "s");
        q[1] = ("client_id", forged);
        let page = authorize(&base, &q).await;
        assert_eq!(page.status, 400, "{forged}: {}", page.html);
        assert!(page.headers.get("location").is_none());
    }
    // PKCE downgrade (no challenge, or `plain`), no response_type, another resource, an
    // unknown scope: registration is open, so even a registered redirect URI is not trusted
    // with an automatic error redirect (RFC 9700 §4.11.2). The error shows here, with a link.
    let evil = "https://evil.example/phish";
    let (status, v) = register(&base, json!({"redirect_uris": [evil]})).await;
    assert_eq!(status, 201, "{v}");
    let phisher = v["client_id"].as_str().unwrap().to_string();
    for (i, value, expected) in [
        (4, "plain", "invalid_request"),
        (4, "", "invalid_request"),
        (0, "", "unsupported_response_type"),
        (6, "arcane:admin", "invalid_scope"),
    ] {
        let mut q = request(&phisher, &challenge, "s");
        q[2] = ("redirect_uri", evil);
        if value.is_empty() {
            q.remove(i);
        } else {
            q[i].1 = value;
        }
        if i == 4 && value == "plain" {
            q[3].1 = &verifier;
        }
        let page = authorize(&base, &q).await;
        assert_eq!(page.status, 400, "{q:?}: {}", page.html);
        assert!(page.headers.get("location").is_none(), "{q:?}");
        assert!(
            page.html.contains("Return to evil.example"),
            "{}",
            page.html
        );
        assert!(page.html.contains(expected), "{expected}: {}", page.html);
        assert!(!page.html.contains("code="));
    }
    let mut q = request(&phisher, &challenge, "s");
    q[2] = ("redirect_uri", evil);
    q.push(("resource", "x"));
    let page = authorize(&base, &q).await;
    assert_eq!(page.status, 400);
    assert!(page.headers.get("location").is_none());
    assert!(page.html.contains("invalid_target"), "{}", page.html);
    // A state that is not printable ASCII, or too long: a page, without a link.
    let long = "s".repeat(600);
    for state in ["a\u{202e}b", long.as_str()] {
        let page = authorize(&base, &request(&client, &challenge, state)).await;
        assert_eq!(page.status, 400);
        assert!(page.html.contains("state parameter"), "{}", page.html);
    }
    // A CSRF cookie the browser brings is never adopted: each page sets a new one.
    let chosen = "0123456789abcdef0123456789abcdef";
    let r = http()
        .get(format!("{base}/authorize"))
        .query(&request(&client, &challenge, "s"))
        .header("cookie", format!("arcane_mcp_csrf={chosen}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let set = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(set.starts_with("arcane_mcp_csrf="), "{set}");
    assert!(!set.contains(chosen), "{set}");
    assert!(!r.text().await.unwrap().contains(chosen));
    // A name with bidirectional and zero-width characters: kept without them, and marked as
    // the client's own word.
    let (status, v) = register(
        &base,
        json!({"client_name": "claude.ai\u{202e}\u{200b}", "redirect_uris": [REDIRECT]}),
    )
    .await;
    assert_eq!(
        (status, v["client_name"].as_str()),
        (201, Some("claude.ai"))
    );
    let page = authorize(
        &base,
        &request(v["client_id"].as_str().unwrap(), &challenge, "s"),
    )
    .await;
    assert!(!page.html.contains('\u{202e}') && !page.html.contains('\u{200b}'));
    assert!(
        page.html.contains("<b id=\"client\">claude.ai</b>"),
        "{}",
        page.html
    );
    assert!(page.html.contains("a name the client gave itself"));
    // No redirect URI at all: a page (the code would be bound to none).
    let mut q = request(&client, &challenge, "s");
    q.remove(2);
    let page = authorize(&base, &q).await;
    assert_eq!(page.status, 400);
    assert!(page.html.contains("redirect_uri"), "{}", page.html);
    // A parameter given twice is refused.
    let mut q = request(&client, &challenge, "s");
    q.push(("redirect_uri", "https://evil.example/cb"));
    assert_eq!(authorize(&base, &q).await.status, 400);

    // CSRF: the form without the cookie, with another cookie, or from another origin.
    let page = authorize(&base, &request(&client, &challenge, "s")).await;
    for cookie in ["", "arcane_mcp_csrf=00000000000000000000000000000000"] {
        let forged = Page {
            status: 200,
            html: page.html.clone(),
            cookie: cookie.into(),
            headers: page.headers.clone(),
        };
        let (status, location, body) = answer(&base, &forged, &PASSWORD).await;
        assert_eq!((status, location.as_str()), (403, ""), "{body}");
        assert!(body.contains("CSRF"), "{body}");
    }
    let r = http()
        .post(format!("{base}/authorize"))
        .header("cookie", &page.cookie)
        .header("origin", "https://evil.example")
        .form(&[
            ("form", field(&page.html, "form")),
            ("csrf", field(&page.html, "csrf")),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403, "a post from another origin");

    // Code substitution: a code of one client, or for another redirect URI, or with another
    // verifier, gives nothing.
    let (code, verifier) = code_for(&base, &client, &PASSWORD).await;
    let attacker = client_id(&base, "attacker").await;
    let (status, v) = exchange(&base, &attacker, &code, &verifier).await;
    assert_eq!(status, 400);
    assert!(
        v["error_description"]
            .as_str()
            .unwrap()
            .contains("another client"),
        "{v}"
    );
    let (other_verifier, _) = pkce();
    let (status, v) = exchange(&base, &client, &code, &other_verifier).await;
    assert_eq!(status, 400);
    assert!(
        v["error_description"].as_str().unwrap().contains("PKCE"),
        "{v}"
    );
    let (status, v) = exchange(&base, &client, &code, &verifier[..42]).await;
    assert_eq!((status, v["error"].as_str()), (400, Some("invalid_grant")));
    let (status, v) = token(
        &base,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", "http://127.0.0.1:9/other"),
            ("client_id", &client),
            ("code_verifier", &verifier),
        ],
    )
    .await;
    assert_eq!(status, 400, "{v}");
    // None of those spent it: the right exchange works.
    let (status, tokens) = exchange(&base, &client, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    // Token substitution: a refresh token of one client refused to another; an access token
    // is not a refresh token, nor a code.
    let rt = tokens["refresh_token"].as_str().unwrap();
    let access = tokens["access_token"].as_str().unwrap();
    let (status, _) = refresh(&base, &attacker, rt).await;
    assert_eq!(status, 400);
    let (status, _) = refresh(&base, &client, access).await;
    assert_eq!(status, 400);
    let swapped = access.replacen("amcp_at_", "amcp_rt_", 1);
    assert_eq!(refresh(&base, &client, &swapped).await.0, 400);
    let (status, _, _) = post_call_2026(&base, rt, "phone", "container.list", json!({})).await;
    assert_eq!(status, 401, "a refresh token is no access token");
    let (status, _, _) = post_call_2026(&base, &code, "phone", "container.list", json!({})).await;
    assert_eq!(status, 401, "a code is no access token");
    // A tampered access token.
    let mut t = access.as_bytes().to_vec();
    let at = t.len() - 5;
    t[at] = if t[at] == b'A' { b'B' } else { b'A' };
    let (status, _, _) = post_call_2026(
        &base,
        std::str::from_utf8(&t).unwrap(),
        "phone",
        "container.list",
        json!({}),
    )
    .await;
    assert_eq!(status, 401);

    // Registrations: oversized, too many redirect URIs, a javascript: or remote http redirect.
    let r = http()
        .post(format!("{base}/register"))
        .header("content-type", "application/json")
        .body(format!(
            r#"{{"redirect_uris":["{REDIRECT}"],"client_name":"{}"}}"#,
            "x".repeat(20_000)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    let many: Vec<String> = (0..20).map(|i| format!("https://a.example/{i}")).collect();
    for body in [
        json!({"redirect_uris": many}),
        json!({"redirect_uris": ["javascript:alert(1)"]}),
        json!({"redirect_uris": ["http://evil.example/cb"]}),
        json!({"redirect_uris": ["https://a.example/cb#x"]}),
        json!({"redirect_uris": ["https://a.example/cb"], "grant_types": ["password"]}),
        json!({"client_name": "no redirect"}),
    ] {
        let (status, v) = register(&base, body.clone()).await;
        assert_eq!(status, 400, "{body}: {v}");
        assert!(v["error"].as_str().unwrap().starts_with("invalid_"), "{v}");
    }
    // The token endpoint: unknown grant types, no client.
    let (status, v) = token(&base, &[("grant_type", "password"), ("client_id", &client)]).await;
    assert_eq!(
        (status, v["error"].as_str()),
        (400, Some("unsupported_grant_type"))
    );
    let (status, v) = token(&base, &[("grant_type", "authorization_code")]).await;
    assert_eq!((status, v["error"].as_str()), (401, Some("invalid_client")));
}

/// RFC 8707 at the token endpoint: the MCP SDKs send `resource` with the code exchange and
/// each refresh; a token asked for another resource is refused with `invalid_target` (it was
/// once issued for this server's resource all the same), ours — with or without a trailing
/// slash — is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_issued_for_this_resource_only() {
    let sim = sim_with_people().await;
    let port = free_port();
    let server = server_at(&sim, port, &[]).await;
    let base = server.base.clone();
    let ours = format!("{base}/mcp");
    let client = client_id(&base, "Resource").await;
    let (code, verifier) = code_for(&base, &client, &PASSWORD).await;
    let exchange = |resource: &str| {
        [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT),
            ("client_id", client.as_str()),
            ("code_verifier", verifier.as_str()),
            ("resource", resource),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    };
    let (status, v) = token_of(&base, exchange("https://other.example.com/mcp")).await;
    assert_eq!(
        (status, v["error"].as_str()),
        (400, Some("invalid_target")),
        "{v}"
    );
    assert!(
        v["error_description"].as_str().unwrap().contains(&ours),
        "{v}"
    );
    // The refused request did not spend the code.
    let (status, v) = token_of(&base, exchange(&format!("{ours}/"))).await;
    assert_eq!(status, 200, "{v}");
    let rt = v["refresh_token"].as_str().unwrap().to_string();
    let refresh = |resource: &str| {
        [
            ("grant_type", "refresh_token"),
            ("refresh_token", rt.as_str()),
            ("client_id", client.as_str()),
            ("resource", resource),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    };
    let (status, v) = token_of(&base, refresh(&format!("{base}/other"))).await;
    assert_eq!(
        (status, v["error"].as_str()),
        (400, Some("invalid_target")),
        "{v}"
    );
    let (status, v) = token_of(&base, refresh(&ours)).await;
    assert_eq!(
        status, 200,
        "the refused refresh did not spend the token: {v}"
    );
    server.stop().await;
}

/// [`token`] with an owned form.
async fn token_of<const N: usize>(base: &str, form: [(String, String); N]) -> (u16, Value) {
    let form = form.each_ref().map(|(k, v)| (k.as_str(), v.as_str()));
    token(base, &form).await
}

/// A client ID metadata document (an URL as `client_id`), served on loopback (allowed only
/// because the server's own public URL is on loopback).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_id_metadata_document() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let at = listener.local_addr().unwrap();
    let good = format!("http://{at}/client.json");
    let liar = format!("http://{at}/liar.json");
    let (g, l) = (good.clone(), liar.clone());
    let docs = axum::Router::new()
        .route(
            "/client.json",
            axum::routing::get(move || async move {
                axum::Json(json!({"client_id": g, "client_name": "Doc client", "redirect_uris": [REDIRECT]}))
            }),
        )
        .route(
            "/liar.json",
            axum::routing::get(move || async move {
                let _ = l;
                axum::Json(json!({"client_id": "http://elsewhere.example/c.json", "redirect_uris": [REDIRECT]}))
            }),
        )
        .route(
            "/huge.json",
            axum::routing::get(|| async { "x".repeat(100_000) }),
        );
    tokio::spawn(async move { axum::serve(listener, docs).await.unwrap() });
    let sim = sim_with_people().await;
    let server = server_at(&sim, free_port(), &[]).await;
    let (verifier, challenge) = pkce();
    let page = authorize(&server.base, &request(&good, &challenge, "d")).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(page.html.contains("Doc client"));
    let (status, location, _) = answer(&server.base, &page, &PASSWORD).await;
    assert_eq!(status, 303);
    let (status, tokens) =
        exchange(&server.base, &good, &query_of(&location)["code"], &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    for bad in [
        liar,
        format!("http://{at}/huge.json"),
        format!("http://{at}/missing.json"),
    ] {
        let page = authorize(&server.base, &request(&bad, &challenge, "d")).await;
        assert_eq!(page.status, 400, "{bad}");
        assert!(
            page.html.contains("metadata document"),
            "{bad}: {}",
            page.html
        );
    }
}

/// A sign-in form answers once; its key expires; wrong passwords are limited per form and per
/// username.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_forms_are_single_use_and_guessing_is_limited() {
    let sim = sim_with_people().await;
    let server = server_at(&sim, free_port(), &[]).await;
    let base = server.base.clone();
    let client = client_id(&base, "replayer").await;
    let (_, challenge) = pkce();
    let (_, before) = alice_keys(&sim).await;
    let page = authorize(&base, &request(&client, &challenge, "st-1")).await;
    let (status, location, body) = answer(&base, &page, &PASSWORD).await;
    assert_eq!(status, 303, "{body}");
    assert!(query_of(&location).contains_key("code"));
    let (status, location, body) = answer(&base, &page, &PASSWORD).await;
    assert_eq!((status, location.as_str()), (400, ""), "{body}");
    assert!(body.contains("already used"), "{body}");
    let (_, after) = alice_keys(&sim).await;
    assert_eq!(
        after.len(),
        before.len() + 1,
        "exactly one new key: {after:?}"
    );
    let made = after.last().unwrap();
    let expires = made["expiresAt"].as_str().expect("the key has an expiry");
    let expires = chrono::DateTime::parse_from_rfc3339(expires)
        .unwrap()
        .timestamp();
    let in_days = (expires - chrono::Utc::now().timestamp()) / 86_400;
    assert!((29..=30).contains(&in_days), "{made}");

    // Ten wrong passwords through one form: Arcane is asked five times at most, then the
    // page says to wait.
    let logins = |reqs: &[Value]| {
        reqs.iter()
            .filter(|r| r["path"] == "/api/auth/login")
            .count()
    };
    let asked = logins(&sim.requests().await);
    let page = authorize(&base, &request(&client, &challenge, "st-1")).await;
    let wrong = [
        ("method", "password"),
        ("username", "alice"),
        ("password", "guess"),
    ];
    let mut last = (0, String::new());
    for _ in 0..10 {
        let (status, _, body) = answer(&base, &page, &wrong).await;
        last = (status, body);
    }
    assert_eq!(last.0, 429, "{}", last.1);
    assert!(
        last.1.contains("Wait") || last.1.contains("wait"),
        "{}",
        last.1
    );
    let tried = logins(&sim.requests().await) - asked;
    assert!((1..=5).contains(&tried), "{tried} logins");
    // A new form does not reset the username's count: even the right password waits.
    let page = authorize(&base, &request(&client, &challenge, "st-1")).await;
    let (status, _, body) = answer(&base, &page, &PASSWORD).await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("seconds"), "{body}");
    assert_eq!(logins(&sim.requests().await) - asked, tried);
}

/// Forty sign-in forms answered at once with wrong passwords for one username send Arcane at
/// most five guesses: each attempt is reserved before Arcane is asked, so the failures plus the
/// attempts in flight never pass the lockout's count. (Checking the count before the awaited
/// sign-in let all forty through.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_forms_send_no_more_guesses_than_the_lockout_allows() {
    let sim = sim_with_people().await;
    let server = server_at(&sim, free_port(), &[]).await;
    let base = server.base.clone();
    let client = client_id(&base, "guesser").await;
    let (_, challenge) = pkce();
    let mut pages = Vec::new();
    for _ in 0..40 {
        pages.push(authorize(&base, &request(&client, &challenge, "st-1")).await);
    }
    // Arcane takes its time over each sign-in, so that all forty are answered while the first
    // guesses are still being checked.
    sim.reset().await;
    sim.fault(json!({"method": "POST", "path": "/auth/login$", "kind": "delay", "delayMs": 1500, "times": 0}))
        .await;
    let wrong = [
        ("method", "password"),
        ("username", "alice"),
        ("password", "guess"),
    ];
    let answers = futures::future::join_all(pages.iter().map(|p| answer(&base, p, &wrong))).await;
    let logins = sim
        .requests()
        .await
        .iter()
        .filter(|r| r["path"] == "/api/auth/login")
        .count();
    assert!(
        (1..=5).contains(&logins),
        "{logins} guesses reached Arcane: {:?}",
        answers.iter().map(|a| a.0).collect::<Vec<_>>()
    );
    let waiting = answers.iter().filter(|a| a.0 == 429).count();
    assert_eq!(waiting, 40 - logins, "the others are told to wait");
    assert!(
        answers
            .iter()
            .any(|a| a.0 == 429 && a.2.contains("being checked")),
        "{:?}",
        answers.iter().map(|a| &a.2).collect::<Vec<_>>()
    );
    // The username is now locked: even the right password waits, and nothing is sent.
    let page = authorize(&base, &request(&client, &challenge, "st-1")).await;
    let (status, _, body) = answer(&base, &page, &PASSWORD).await;
    assert_eq!(status, 429, "{body}");
    server.stop().await;
}

/// Registrations are capped so that their sign-in forms fit what the server opens; a refresh
/// fails closed when Arcane cannot say the key still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_sizes_and_refresh_when_arcane_fails() {
    let sim = sim_with_people().await;
    let server = server_at(&sim, free_port(), &[]).await;
    let base = server.base.clone();
    let long = |n: usize, len: usize| -> Vec<String> {
        (0..n)
            .map(|i| {
                let head = format!("{REDIRECT}?n={i}&p=");
                format!("{head}{}", "x".repeat(len - head.len()))
            })
            .collect()
    };
    let (status, v) = register(&base, json!({"redirect_uris": long(7, 968)})).await;
    assert_eq!(
        (status, v["error"].as_str()),
        (400, Some("invalid_redirect_uri")),
        "{v}"
    );
    let uris = long(5, 900);
    let (status, v) = register(&base, json!({"redirect_uris": uris})).await;
    assert_eq!(status, 201, "{v}");
    let client = v["client_id"].as_str().unwrap().to_string();
    let (verifier, challenge) = pkce();
    let mut q = request(&client, &challenge, "st-1");
    q[2] = ("redirect_uri", &uris[4]);
    let page = authorize(&base, &q).await;
    assert_eq!(page.status, 200, "{}", page.html);
    let (status, location, body) = answer(&base, &page, &PASSWORD).await;
    assert_eq!(status, 303, "{body}");
    let code = query_of(&location)["code"].clone();
    let (status, tokens) = token(
        &base,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", &uris[4]),
            ("client_id", &client),
            ("code_verifier", &verifier),
        ],
    )
    .await;
    assert_eq!(status, 200, "{tokens}");
    let rt = tokens["refresh_token"].as_str().unwrap().to_string();

    // Arcane answers /auth/me with 500: no new tokens (503), and the refresh token still works
    // once Arcane answers again.
    sim.fault(
        json!({"method": "GET", "path": "/auth/me$", "kind": "status", "status": 500, "times": 1}),
    )
    .await;
    let (status, v) = refresh(&base, &client, &rt).await;
    assert_eq!(
        (status, v["error"].as_str()),
        (503, Some("temporarily_unavailable")),
        "{v}"
    );
    let (status, v) = refresh(&base, &client, &rt).await;
    assert_eq!(status, 200, "{v}");
}

/// Client ID metadata documents are fetched directly, never through HTTP(S)_PROXY / ALL_PROXY
/// (a proxy would resolve the name itself, past the address check).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_documents_are_not_fetched_through_a_proxy() {
    use tokio::io::AsyncReadExt;
    let docs = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let doc_url = format!("http://{}/client.json", docs.local_addr().unwrap());
    let d = doc_url.clone();
    let app = axum::Router::new().route(
        "/client.json",
        axum::routing::get(move || async move {
            axum::Json(
                json!({"client_id": d, "client_name": "Direct", "redirect_uris": [REDIRECT]}),
            )
        }),
    );
    tokio::spawn(async move { axum::serve(docs, app).await.unwrap() });
    // The "proxy" keeps the first bytes of each request it gets, and answers nothing.
    let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut c, _)) = proxy.accept().await {
            let s = s.clone();
            tokio::spawn(async move {
                let mut b = [0u8; 512];
                let n = c.read(&mut b).await.unwrap_or(0);
                s.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&b[..n]).into_owned());
            });
        }
    });
    let sim = sim_with_people().await;
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}");
    let server = crate::process_support::HttpServer::start_at(
        port,
        &sim.base(),
        Some(sim.sim.api_key()),
        &["--public-url", &public, "--oauth-issuer", "self"],
        &[
            ("HTTP_PROXY", &proxy_url),
            ("HTTPS_PROXY", &proxy_url),
            ("ALL_PROXY", &proxy_url),
            ("http_proxy", &proxy_url),
            ("all_proxy", &proxy_url),
        ],
    )
    .await;
    let (_, challenge) = pkce();
    let page = authorize(&server.base, &request(&doc_url, &challenge, "d")).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(page.html.contains("Direct"));
    let path = doc_url.trim_start_matches("http://");
    assert!(
        !seen.lock().unwrap().iter().any(|r| r.contains(path)),
        "{:?}",
        seen.lock().unwrap()
    );
}

/// An access token of a sign-in for `client` that granted `access` ("read" or "write").
pub(crate) async fn signed_in(base: &str, client: &str, access: &str) -> String {
    let fields = [
        ("method", "password"),
        ("username", "alice"),
        ("password", "alice-password"),
        ("access", access),
    ];
    let (code, verifier) = code_for(base, client, &fields).await;
    let (status, tokens) = exchange(base, client, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    tokens["access_token"].as_str().unwrap().to_string()
}

/// The IDs `arcane_find_action` offers for `query`, and its text.
async fn found(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    query: &str,
) -> (Vec<String>, String) {
    let r = crate::server_support::call(
        client,
        "arcane_find_action",
        json!({"query": query, "limit": 20}),
    )
    .await;
    let text = crate::server_support::text(&r);
    let ids = r
        .structured_content
        .as_ref()
        .and_then(|v| v["results"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e["id"].as_str().map(String::from))
        .collect();
    (ids, text)
}

/// A sign-in that granted reading only is shown only reading actions (docs/oauth.md#scopes):
/// the search never offers `container.restart`, the execute tool is annotated read-only, and
/// calling the change anyway names the scope. A sign-in granting changes, and the static token,
/// see everything, the same list as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_sign_in_is_shown_only_what_it_may_run() {
    let sim = sim_with_people().await;
    let port = free_port();
    let server = server_at(&sim, port, &["--auth-token", "static-token"]).await;
    let base = server.base.clone();
    let client = client_id(&base, "reader").await;
    let read = signed_in(&base, &client, "read").await;
    let write = signed_in(&base, &client, "write").await;

    let everyone = crate::process_support::http_client(&base, "static-token", &[]).await;
    let reader = crate::process_support::http_client(&base, &read, &[]).await;
    let writer = crate::process_support::http_client(&base, &write, &[]).await;

    let query = "restart a container";
    let (all, text) = found(&everyone, query).await;
    assert!(all.iter().any(|id| id == "container.restart"), "{text}");
    let (mine, _) = found(&writer, query).await;
    assert_eq!(mine, all, "a write sign-in sees what the server serves");
    let (reads, text_read) = found(&reader, query).await;
    assert!(!reads.is_empty(), "{text_read}");
    // Never offered; named only to say it is withdrawn for this sign-in, and why.
    assert!(
        !reads.iter().any(|id| id == "container.restart")
            && text_read.starts_with("This asks for `container.restart`")
            && text_read.contains("arcane:write")
            && text_read.matches("container.restart").count() == 2,
        "{text_read}"
    );
    let catalog = crate::server_support::catalog();
    for id in &reads {
        let a = catalog.get(id).unwrap();
        assert!(
            !a.safety.mutating && a.safety.reveals_secret.is_none(),
            "{id} offered: {text_read}"
        );
    }

    // The dynamic surface's two tools: only the execute tool's annotation differs.
    let tools = |c: &rmcp::service::RunningService<rmcp::RoleClient, ()>| {
        let c = c.peer().clone();
        async move { serde_json::to_value(c.list_all_tools().await.unwrap()).unwrap() }
    };
    let (all_tools, write_tools, read_tools) = (
        tools(&everyone).await,
        tools(&writer).await,
        tools(&reader).await,
    );
    assert_eq!(write_tools, all_tools);
    let execute = |v: &Value| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "arcane_execute_action")
            .unwrap()["annotations"]
            .clone()
    };
    assert_eq!(execute(&all_tools)["readOnlyHint"], false);
    assert_eq!(execute(&read_tools)["readOnlyHint"], true);
    assert_eq!(execute(&read_tools)["destructiveHint"], false);

    // Calling the change anyway: refused naming the scope, nothing sent.
    sim.reset().await;
    let (tool, args) = crate::server_support::shape(
        "dynamic",
        "container.restart",
        json!({"containerId": "web-1"}),
        true,
    );
    let r = crate::server_support::call(&reader, &tool, args).await;
    let refused = crate::server_support::text(&r);
    assert_eq!(r.is_error, Some(true), "{refused}");
    assert!(refused.contains("arcane:write"), "{refused}");
    assert!(
        !sim.requests()
            .await
            .iter()
            .any(|r| r["path"].as_str().unwrap_or("").ends_with("/restart")),
        "nothing reached Arcane"
    );
    for c in [everyone, reader, writer] {
        c.cancel().await.ok();
    }
    server.stop().await;
}

/// A 2025-11-25 session over HTTP, its requests written by hand (rmcp's client cannot send
/// that form's `tasks/*`).
struct CoreSession {
    base: String,
    token: String,
    id: String,
}

impl CoreSession {
    async fn open(base: &str, token: &str) -> CoreSession {
        let mut s = CoreSession {
            base: base.to_string(),
            token: token.to_string(),
            id: String::new(),
        };
        let (_, headers) = s
            .post(
                json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "core", "version": "1"}}}),
            )
            .await;
        s.id = headers["mcp-session-id"].to_str().unwrap().to_string();
        s.post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        s
    }

    async fn post(&self, body: Value) -> (Value, reqwest::header::HeaderMap) {
        let mut r = http()
            .post(format!("{}/mcp", self.base))
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if !self.id.is_empty() {
            r = r
                .header("mcp-session-id", &self.id)
                .header("mcp-protocol-version", "2025-11-25");
        }
        let r = r.body(body.to_string()).send().await.unwrap();
        let headers = r.headers().clone();
        let text = r.text().await.unwrap();
        let answer = serde_json::from_str::<Value>(&text).ok().or_else(|| {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|v| v.get("result").is_some() || v.get("error").is_some())
        });
        (answer.unwrap_or(Value::Null), headers)
    }

    async fn request(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": method, "method": method, "params": params});
        self.post(body).await.0
    }
}

/// A task belongs to the grant that made it, not to the person: Alice's read-only sign-in
/// neither lists, reads, waits for nor cancels the task of her read-and-change sign-in (a task
/// of `swarm.join_tokens` would hand it the manager token). And the caller's view must still
/// serve the task's action: the same grant, refreshed down to reading, no longer sees its pull.
/// Before, both were the same caller (her subject) and saw everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_its_grants_and_only_while_the_grant_may_run_it() {
    let sim = sim_with_people().await;
    sim.hooks().set_stream_pace_ms(100).await.unwrap();
    let server = server_at(&sim, free_port(), &[]).await;
    let base = server.base.clone();
    let client = client_id(&base, "tasker").await;
    let write_fields = [
        ("method", "password"),
        ("username", "alice"),
        ("password", "alice-password"),
        ("access", "write"),
    ];
    let (code, verifier) = code_for(&base, &client, &write_fields).await;
    let (status, writes) = exchange(&base, &client, &code, &verifier).await;
    assert_eq!(status, 200, "{writes}");
    let read = signed_in(&base, &client, "read").await;

    let writer = CoreSession::open(&base, writes["access_token"].as_str().unwrap()).await;
    let created = writer
        .request(
            "tools/call",
            json!({"name": "arcane_execute_action",
                "arguments": {"action": "image.pull", "params": {"imageName": "redis:7.2-alpine"}},
                "task": {"ttl": 60000}}),
        )
        .await;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_string();

    let unknown = |v: &Value| {
        assert_eq!(v["error"]["code"], -32602, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("unknown task"),
            "{v}"
        );
    };
    let reader = CoreSession::open(&base, &read).await;
    let listed = reader.request("tasks/list", json!({})).await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    unknown(&reader.request("tasks/get", json!({"taskId": id})).await);
    unknown(&reader.request("tasks/result", json!({"taskId": id})).await);
    unknown(&reader.request("tasks/cancel", json!({"taskId": id})).await);

    // The same grant, refreshed down to reading: its view no longer serves the pull.
    let (status, narrowed) = token(
        &base,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", writes["refresh_token"].as_str().unwrap()),
            ("client_id", &client),
            ("scope", "arcane:read"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{narrowed}");
    assert_eq!(narrowed["scope"], "arcane:read", "{narrowed}");
    let narrowed = CoreSession::open(&base, narrowed["access_token"].as_str().unwrap()).await;
    let listed = narrowed.request("tasks/list", json!({})).await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    unknown(&narrowed.request("tasks/get", json!({"taskId": id})).await);
    unknown(
        &narrowed
            .request("tasks/result", json!({"taskId": id}))
            .await,
    );

    // Its own grant's token still lists it and reads its result.
    let listed = writer.request("tasks/list", json!({})).await;
    assert_eq!(listed["result"]["tasks"][0]["taskId"], id, "{listed}");
    let result = writer.request("tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["result"]["isError"], false, "{result}");
    server.stop().await;
}

/// [`exchange`] naming `redirect` as the authorization request's redirect URI.
async fn exchange_to(
    base: &str,
    client: &str,
    code: &str,
    verifier: &str,
    redirect: &str,
) -> (u16, Value) {
    token(
        base,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect),
            ("client_id", client),
            ("code_verifier", verifier),
        ],
    )
    .await
}

/// RFC 8252 §7.3: a redirect URI registered on a loopback IP literal matches at /authorize
/// with any port (a native app listens where the system lets it); the code then goes to that
/// port, and /token wants that very URI. Any other difference — host, path, query, scheme,
/// user information, a look-alike name — is still not this client's (docs/oauth.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_redirect_uri_matches_with_any_port_and_nothing_else() {
    let sim = sim_with_people().await;
    let port = free_port();
    let server = server_at(&sim, port, &[]).await;
    let base = server.base.clone();
    let client = client_id(&base, "native app").await;
    let elsewhere = "http://127.0.0.1:54321/callback";

    // Another port: the page, a code sent to that port, exchanged with that URI only.
    let (verifier, challenge) = pkce();
    let mut q = request(&client, &challenge, "st-2");
    q[2] = ("redirect_uri", elsewhere);
    let page = authorize(&base, &q).await;
    assert_eq!(page.status, 200, "{}", page.html);
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("http://127.0.0.1:54321"), "{csp}");
    let (status, location, body) = answer(&base, &page, &PASSWORD).await;
    assert_eq!(status, 303, "{body}");
    assert!(location.starts_with(&format!("{elsewhere}?")), "{location}");
    let code = query_of(&location)["code"].clone();
    // The registered port is not the authorization request's: refused (the code is bound).
    let (status, v) = exchange_to(&base, &client, &code, &verifier, REDIRECT).await;
    assert_eq!(
        (status, v["error"].as_str()),
        (400, Some("invalid_grant")),
        "{v}"
    );
    let (verifier, challenge) = pkce();
    let mut q = request(&client, &challenge, "st-3");
    q[2] = ("redirect_uri", elsewhere);
    let page = authorize(&base, &q).await;
    let (_, location, _) = answer(&base, &page, &PASSWORD).await;
    let code = query_of(&location)["code"].clone();
    let (status, v) = exchange_to(&base, &client, &code, &verifier, elsewhere).await;
    assert_eq!(status, 200, "{v}");
    assert!(v["access_token"].as_str().unwrap().starts_with("amcp_at_"));

    // No port at all, and IPv6's loopback literal, match too.
    let (status, v) = register(
        &base,
        json!({"redirect_uris": ["http://[::1]/cb"], "token_endpoint_auth_method": "none"}),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    let v6 = v["client_id"].as_str().unwrap().to_string();
    for (who, uri) in [
        (client.as_str(), "http://127.0.0.1/callback"),
        (v6.as_str(), "http://[::1]:40000/cb"),
    ] {
        let mut q = request(who, &challenge, "s");
        q[2] = ("redirect_uri", uri);
        let page = authorize(&base, &q).await;
        assert_eq!(page.status, 200, "{uri}: {}", page.html);
    }

    // Near misses: a page, never a redirect.
    for bad in [
        "http://127.0.0.1:54321/callback/../evil",
        "http://127.0.0.1:54321/callback?x=1",
        "http://127.0.0.1:54321/Callback",
        "http://127.0.0.1:54321/",
        "https://127.0.0.1:54321/callback",
        "http://127.0.0.2:54321/callback",
        "http://127.0.0.1.evil.example:54321/callback",
        "http://127.0.0.1@evil.example/callback",
        "http://127.0.0.1:54321@evil.example/callback",
        "http://evil.example@127.0.0.1:54321/callback",
        "http://0x7f.0.0.1:54321/callback",
        "http://localhost:54321/callback",
        "http://[::1]:54321/callback",
        "http://127.0.0.1:654321/callback",
    ] {
        let mut q = request(&client, &challenge, "s");
        q[2] = ("redirect_uri", bad);
        let page = authorize(&base, &q).await;
        assert_eq!(page.status, 400, "{bad}: {}", page.html);
        assert!(page.headers.get("location").is_none(), "{bad}");
        assert!(
            page.html.contains("not one this client registered"),
            "{bad}: {}",
            page.html
        );
    }
    // Not on loopback: exact, port included.
    let (status, v) = register(
        &base,
        json!({"redirect_uris": ["https://app.example/cb"], "token_endpoint_auth_method": "none"}),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    let mut q = request(v["client_id"].as_str().unwrap(), &challenge, "s");
    q[2] = ("redirect_uri", "https://app.example:8443/cb");
    assert_eq!(authorize(&base, &q).await.status, 400);
    server.stop().await;
}

/// An error's next step names the key the person has: after sign-in with Arcane, the key their
/// sign-in made — not an `X-Arcane-API-Key` header they never sent (a 401 and a 403 alike).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_names_the_key_the_sign_in_made() {
    let sim = sim_with_people().await;
    let server = server_at(&sim, free_port(), &[]).await;
    let client = client_id(&server.base, "Claude").await;
    let (code, verifier) = code_for(&server.base, &client, &PASSWORD).await;
    let (status, tokens) = exchange(&server.base, &client, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_string();
    for status in [401, 403] {
        sim.fault(
            json!({"method": "GET", "path": "/containers$", "kind": "status",
            "status": status, "times": 1,
            "body": {"success": false, "error": "permission denied: containers:list"}}),
        )
        .await;
        let (_, _, body) =
            post_call_2026(&server.base, &access, "phone", "container.list", json!({})).await;
        assert!(
            body.contains("the Arcane API key your sign-in made"),
            "{status}: {body}"
        );
        assert!(!body.contains("X-Arcane-API-Key"), "{status}: {body}");
    }
}
