//! The simulator's tests' one HTTP client for `/api` (axum's `TestClient` is the model):
//! `api.get(path).await` sends an authenticated request and reads the whole answer, so a test
//! says only what it checks — `.status()`, `.json()`, `.header(name)`, or `.expect(404)`, which
//! asserts the status (showing the body when it differs) and gives the JSON.
//!
//! ```text
//! let b = s.get("/environments/0/containers?limit=-1").await.expect(200);
//! let r = s.post("/environments/0/containers").json(json!({"name": "x"})).await;
//! assert_eq!(r.status(), 409);
//! let r = s.get("/environments/0/containers").key("wrong").await; // another key
//! let stream = s.post("/environments/0/images/pull").json(body).send().await; // unread
//! ```

use std::future::{Future, IntoFuture};
use std::pin::Pin;

use bytes::Bytes;
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::Value;

/// An HTTP client of one simulator's `/api`, with its API key.
#[derive(Clone)]
pub struct TestClient {
    http: reqwest::Client,
    base: String,
    key: String,
}

impl TestClient {
    /// A client of `base` (`http://host:port`, no `/api`) calling with `key`.
    pub fn new(http: reqwest::Client, base: impl Into<String>, key: impl Into<String>) -> Self {
        TestClient {
            http,
            base: base.into(),
            key: key.into(),
        }
    }

    /// A request to `/api{path}` (`path` may carry a query), sent with `X-API-Key`.
    pub fn request(&self, method: Method, path: &str) -> Call {
        Call {
            req: self
                .http
                .request(method, format!("{}/api{path}", self.base)),
            auth: Auth::Key(self.key.clone()),
        }
    }

    pub fn get(&self, path: &str) -> Call {
        self.request(Method::GET, path)
    }

    pub fn post(&self, path: &str) -> Call {
        self.request(Method::POST, path)
    }

    pub fn put(&self, path: &str) -> Call {
        self.request(Method::PUT, path)
    }

    pub fn delete(&self, path: &str) -> Call {
        self.request(Method::DELETE, path)
    }

    pub fn head(&self, path: &str) -> Call {
        self.request(Method::HEAD, path)
    }
}

/// How a [`Call`] authenticates.
enum Auth {
    Key(String),
    Bearer(String),
    None,
}

/// A request being built; `.await` sends it and reads the whole answer ([`Reply`]), `.send()`
/// sends it and leaves the body unread (streams, truncated answers), `.try_send()` also
/// hands back a failed connection.
#[must_use = "a call does nothing until awaited or sent"]
pub struct Call {
    req: reqwest::RequestBuilder,
    auth: Auth,
}

impl Call {
    /// A JSON body.
    pub fn json(mut self, body: impl serde::Serialize) -> Self {
        self.req = self.req.json(&body);
        self
    }

    /// A raw body (no content type).
    pub fn body(mut self, body: impl Into<reqwest::Body>) -> Self {
        self.req = self.req.body(body);
        self
    }

    /// Query parameters, encoded.
    pub fn query<T: serde::Serialize + ?Sized>(mut self, query: &T) -> Self {
        self.req = self.req.query(query);
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.req = self.req.header(name, value);
        self
    }

    /// `X-API-Key: key` instead of the client's key.
    pub fn key(mut self, key: &str) -> Self {
        self.auth = Auth::Key(key.to_string());
        self
    }

    /// `Authorization: Bearer key` instead of `X-API-Key`.
    pub fn bearer(mut self, key: &str) -> Self {
        self.auth = Auth::Bearer(key.to_string());
        self
    }

    /// No credentials at all.
    pub fn anonymous(mut self) -> Self {
        self.auth = Auth::None;
        self
    }

    /// Sends the request; the body is left to the caller to read.
    pub async fn send(self) -> reqwest::Response {
        self.try_send().await.expect("the simulator answers")
    }

    /// Sends the request, for a test of a connection that fails (the `drop` fault).
    pub async fn try_send(self) -> reqwest::Result<reqwest::Response> {
        let req = match self.auth {
            Auth::Key(k) => self.req.header("X-API-Key", k),
            Auth::Bearer(k) => self.req.bearer_auth(k),
            Auth::None => self.req,
        };
        req.send().await
    }
}

impl IntoFuture for Call {
    type Output = Reply;
    type IntoFuture = Pin<Box<dyn Future<Output = Reply> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let r = self.send().await;
            let status = r.status().as_u16();
            let headers = r.headers().clone();
            let body = r.bytes().await.expect("the whole answer is read");
            Reply {
                status,
                headers,
                body,
            }
        })
    }
}

/// A whole answer.
pub struct Reply {
    status: u16,
    headers: HeaderMap,
    body: Bytes,
}

impl Reply {
    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The header `name` as text (`""` when absent).
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    pub fn bytes(&self) -> &[u8] {
        &self.body
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; `null` when it is empty or not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// Asserts the status is `status` (the message shows the body when it is not) and gives
    /// the body as JSON.
    #[track_caller]
    pub fn expect(&self, status: u16) -> Value {
        assert_eq!(self.status, status, "status; the body: {}", self.text());
        self.json()
    }
}
