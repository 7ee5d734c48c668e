//! The security headers of every response: nothing is sniffed, and
//! askgate's own page (`/web/…`, with its API) is never framed, cached or
//! given a script, a style or a connection from anywhere but askgate itself.
//!
//! Written as one small middleware rather than with tower-http's header
//! layers: the policy depends on the path, and it is four headers.

use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// The page's Content-Security-Policy: its script, style and API from
/// askgate only, no inline script or style, no framing, no forms, no base.
pub const WEB_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                           img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Adds the headers to `request`'s response.
pub async fn security_headers(request: Request, next: Next) -> Response {
    let web = request.uri().path().starts_with("/web/");
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if web {
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(WEB_CSP));
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    }
    response
}
