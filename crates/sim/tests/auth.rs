//! Signing in as Arcane 2.8.0 does (crates/sim/src/auth.rs): a user's password gives an access token
//! and a refresh token, a wrong one Arcane's 401; a refresh spends the refresh token; a personal
//! API key made from a session works at once and is refused at once once deleted; an API key
//! cannot make or delete personal keys.

use serde_json::{Value, json};

use crate::common::start_with;

#[tokio::test]
async fn users_sign_in_refresh_and_manage_their_personal_keys() {
    let mut cfg = arcane_sim::SimConfig::new(crate::common::spec_v2());
    cfg.users = vec![
        "alice=alice-key:admin:pa:ss w0rd".parse().unwrap(),
        "bob=bob-key:viewer:bob-pass".parse().unwrap(),
        "carol=carol-key:viewer".parse().unwrap(),
    ];
    let s = start_with(cfg).await;
    let login = |user: &str, password: &str| {
        s.post("/auth/login")
            .anonymous()
            .json(json!({"username": user, "password": password}))
    };

    // A wrong password, an unknown user, a user without a password: Arcane's 401.
    for (user, password) in [("alice", "nope"), ("mallory", "x"), ("carol", "carol-key")] {
        let b = login(user, password).await.expect(401);
        assert_eq!(b["detail"], "Invalid username or password", "{user}");
    }

    // The right one: tokens, and the user.
    let b = login("alice", "pa:ss w0rd").await.expect(200);
    let data = &b["data"];
    assert_eq!(data["status"], "authenticated");
    assert_eq!(data["user"]["username"], "alice");
    let token = data["token"].as_str().unwrap().to_string();
    let refresh = data["refreshToken"].as_str().unwrap().to_string();
    assert!(data["expiresAt"].is_string());
    let me = s.get("/auth/me").bearer(&token).await.expect(200);
    assert_eq!(me["data"]["username"], "alice");
    s.get("/environments/0/containers")
        .bearer(&token)
        .await
        .expect(200);

    // A refresh gives a new pair and spends the old refresh token.
    let b = s
        .post("/auth/refresh")
        .anonymous()
        .json(json!({"refreshToken": refresh}))
        .await
        .expect(200);
    let token = b["data"]["token"].as_str().unwrap().to_string();
    assert_ne!(b["data"]["refreshToken"], json!(refresh));
    let b = s
        .post("/auth/refresh")
        .anonymous()
        .json(json!({"refreshToken": refresh}))
        .await
        .expect(401);
    assert_eq!(b["detail"], "Invalid or expired refresh token");

    // A personal key, made from the session: shown once, usable at once, named in the log as
    // its owner.
    let b = s
        .post("/auth/me/api-keys")
        .bearer(&token)
        .json(json!({"name": "arcane-mcp: claude.ai"}))
        .await
        .expect(200);
    let key = b["data"]["key"].as_str().unwrap().to_string();
    let id = b["data"]["id"].as_str().unwrap().to_string();
    assert!(key.starts_with("arc_") && key.len() == 68, "{key}");
    assert_eq!(b["data"]["keyPrefix"], json!(&key[..12]));
    assert_eq!(b["data"]["kind"], "personal");
    s.hooks.reset().await.unwrap();
    s.get("/environments/0/containers")
        .key(&key)
        .await
        .expect(200);
    let log = s.hooks.requests().await.unwrap();
    assert_eq!(log.last().unwrap()["user"], "alice");
    let listed = s.get("/auth/me/api-keys").key(&key).await.expect(200);
    let names: Vec<&Value> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| &k["name"])
        .collect();
    assert_eq!(names, vec![&json!("arcane-mcp: claude.ai")]);
    assert!(
        !listed.to_string().contains(&key),
        "a list never shows the key"
    );

    // An API key cannot make or delete personal keys: only a signed-in session can.
    for call in [
        s.post("/auth/me/api-keys")
            .key(&key)
            .json(json!({"name": "x"})),
        s.delete(&format!("/auth/me/api-keys/{id}"))
            .key("alice-key"),
    ] {
        let b = call.await.expect(403);
        assert_eq!(
            b["detail"],
            "personal API keys can only be managed from an interactive session"
        );
    }
    // Nobody deletes another user's key; a viewer manages its own.
    let bob = login("bob", "bob-pass").await.expect(200)["data"]["token"]
        .as_str()
        .unwrap()
        .to_string();
    let b = s
        .delete(&format!("/auth/me/api-keys/{id}"))
        .bearer(&bob)
        .await
        .expect(404);
    assert_eq!(b["detail"], "API key not found");
    s.post("/auth/me/api-keys")
        .bearer(&bob)
        .json(json!({"name": "bob's"}))
        .await
        .expect(200);

    // Deleted: refused at once.
    s.delete(&format!("/auth/me/api-keys/{id}"))
        .bearer(&token)
        .await
        .expect(200);
    let b = s
        .get("/environments/0/containers")
        .key(&key)
        .await
        .expect(401);
    assert_eq!(b["detail"], "Unauthorized: invalid API key");

    // Nothing secret in the request log.
    let text = serde_json::to_string(&s.hooks.requests().await.unwrap()).unwrap();
    for secret in [key.as_str(), token.as_str(), "pa:ss w0rd"] {
        assert!(!text.contains(secret), "the log holds a secret: {text}");
    }
}

#[test]
fn a_user_may_carry_a_password() {
    let u: arcane_sim::SimUser = "alice=k1:viewer:p:w".parse().unwrap();
    assert_eq!(
        (u.key.as_str(), u.role, u.password.as_deref()),
        ("k1", arcane_sim::SimRole::Viewer, Some("p:w"))
    );
    let u: arcane_sim::SimUser = "alice=k1:admin".parse().unwrap();
    assert_eq!(u.password, None);
    let u: arcane_sim::SimUser = "alice=a:b".parse().unwrap();
    assert_eq!((u.key.as_str(), u.password), ("a:b", None));
    let e = "alice=k1:admin:"
        .parse::<arcane_sim::SimUser>()
        .unwrap_err();
    assert!(e.contains("password is empty"), "{e}");
}
