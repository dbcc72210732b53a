//! The routes of the built-in authorization server (`--oauth-issuer self`): each reads at
//! most a small body, within a deadline, and hands it to [`Issuer`].

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::clients::MAX_REGISTRATION_BYTES;
use super::issuer::{Issuer, METADATA_PATH};

/// Largest form body read (a sealed sign-in form, a code or a token and their companions).
const MAX_FORM_BYTES: usize = 16 * 1024;
/// How long a body may take to arrive.
const BODY_WITHIN: Duration = Duration::from_secs(10);

async fn body_of(body: Body, max: usize) -> Result<Vec<u8>, Response> {
    match tokio::time::timeout(BODY_WITHIN, axum::body::to_bytes(body, max)).await {
        Ok(Ok(b)) => Ok(b.to_vec()),
        Ok(Err(_)) => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            axum::Json(serde_json::json!({
                "error": "invalid_request",
                "error_description": format!("the body is larger than {max} bytes"),
            })),
        )
            .into_response()),
        Err(_) => Err((
            StatusCode::REQUEST_TIMEOUT,
            "the body did not arrive in time",
        )
            .into_response()),
    }
}

/// The authorization server's routes.
pub fn routes<S: Clone + Send + Sync + 'static>(own: Arc<Issuer>) -> Router<S> {
    let (o1, o2, o3, o4, o5, o6) = (
        own.clone(),
        own.clone(),
        own.clone(),
        own.clone(),
        own.clone(),
        own,
    );
    Router::new()
        .route(
            METADATA_PATH,
            get(move || async move { axum::Json(o1.metadata()) }),
        )
        .route(
            "/register",
            post(move |body: Body| async move {
                match body_of(body, MAX_REGISTRATION_BYTES).await {
                    Ok(b) => o2.register(&b),
                    Err(r) => r,
                }
            }),
        )
        .route(
            "/authorize",
            get(move |uri: Uri, headers: HeaderMap| async move {
                o3.authorize(uri.query(), &headers).await
            })
            .post(move |headers: HeaderMap, body: Body| async move {
                match body_of(body, MAX_FORM_BYTES).await {
                    Ok(b) => o4.authorize_answer(&b, &headers).await,
                    Err(r) => r,
                }
            }),
        )
        .route(
            "/token",
            post(move |headers: HeaderMap, body: Body| async move {
                match body_of(body, MAX_FORM_BYTES).await {
                    Ok(b) => o5.token(&b, &headers).await,
                    Err(r) => r,
                }
            }),
        )
        .route(
            "/revoke",
            post(move |headers: HeaderMap, body: Body| async move {
                match body_of(body, MAX_FORM_BYTES).await {
                    Ok(b) => o6.revoke(&b, &headers),
                    Err(r) => r,
                }
            }),
        )
}
