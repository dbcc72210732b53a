//! The accounts side of signing in (`src/auth.rs` answers the routes): live sign-ins, refresh
//! tokens and personal API keys, with the secrets they are reached by.

use std::collections::HashMap;

/// How long an access token of a sign-in lasts (Arcane's default session is longer; short here
/// so that a test can see a refresh).
const ACCESS_TTL: i64 = 900;

/// A personal API key made through `POST /auth/me/api-keys`.
#[derive(Debug, Clone)]
pub struct PersonalKey {
    pub id: String,
    pub user: String,
    pub key: String,
    pub name: String,
    pub created: i64,
    pub expires_at: Option<String>,
}

/// Sign-ins and personal keys. They survive `/__sim/reset`, which returns Docker's state.
#[derive(Debug, Default)]
pub struct Accounts {
    /// Access token → (user name, expiry).
    sessions: HashMap<String, (String, i64)>,
    /// Refresh token → user name.
    refresh: HashMap<String, String>,
    keys: Vec<PersonalKey>,
    next_id: u64,
}

pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A random secret: `prefix` and 32 bytes in hex (Arcane's keys are `arc_` and 64 hex digits).
fn secret(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the system's random source");
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}{hex}")
}

impl Accounts {
    /// The user name of a live access token.
    pub fn session_user(&self, token: &str) -> Option<&str> {
        self.sessions
            .get(token)
            .filter(|(_, exp)| *exp > now())
            .map(|(u, _)| u.as_str())
    }

    /// The user name of a personal key that exists.
    pub fn key_user(&self, key: &str) -> Option<&str> {
        self.keys
            .iter()
            .find(|k| k.key == key)
            .map(|k| k.user.as_str())
    }

    pub fn sign_in(&mut self, user: &str) -> (String, String, i64) {
        let token = secret("sim-session-");
        let refresh = secret("sim-refresh-");
        let exp = now() + ACCESS_TTL;
        self.sessions.insert(token.clone(), (user.to_string(), exp));
        self.refresh.insert(refresh.clone(), user.to_string());
        (token, refresh, exp)
    }

    /// Spends a refresh token: the user it was given to.
    pub fn spend_refresh(&mut self, token: &str) -> Option<String> {
        self.refresh.remove(token)
    }

    /// The personal keys of `user`.
    pub fn keys_of(&self, user: &str) -> Vec<PersonalKey> {
        self.keys
            .iter()
            .filter(|k| k.user == user)
            .cloned()
            .collect()
    }

    /// A new personal key of `user`.
    pub fn create_key(
        &mut self,
        user: &str,
        name: &str,
        expires_at: Option<String>,
    ) -> PersonalKey {
        self.next_id += 1;
        let k = PersonalKey {
            id: format!("apikey-{}", self.next_id),
            user: user.to_string(),
            key: secret("arc_"),
            name: name.to_string(),
            created: now(),
            expires_at,
        };
        self.keys.push(k.clone());
        k
    }

    /// Deletes `user`'s key `id`; whether there was one.
    pub fn delete_key(&mut self, user: &str, id: &str) -> bool {
        let before = self.keys.len();
        self.keys.retain(|k| !(k.id == id && k.user == user));
        self.keys.len() != before
    }
}
