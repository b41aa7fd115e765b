//! What identity providers and token endpoints answer: a token exchange's answer, a token
//! endpoint's answer applied to a stored credential, and a token's claims, each of any status
//! and body, gives a token or an error and never panics (an `expires_in` of 2^64-1 panicked).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx::access::{exchange, Identity};
use mcpx::upstream::auth::{read_token_answer, store::Credential};

fuzz_target!(|data: &[u8]| {
    let Some((&code, body)) = data.split_first() else {
        return;
    };
    // The first byte picks a status among the ones that matter: success, and the others.
    let status = match code % 4 {
        0 => http::StatusCode::OK,
        1 => http::StatusCode::CREATED,
        2 => http::StatusCode::BAD_REQUEST,
        _ => http::StatusCode::UNAUTHORIZED,
    };
    if let Ok(exchanged) = exchange::read_answer(status, body) {
        assert!(!exchanged.token.is_empty());
    }
    if let Ok(answer) = read_token_answer(status, body) {
        let credential = answer.apply(Credential::default());
        assert!(credential.expires_at.is_none() == credential.lifetime.is_none());
    }
    if let Ok(serde_json::Value::Object(claims)) = serde_json::from_slice(body) {
        if let Ok(identity) = Identity::from_claims(claims, "https://idp") {
            assert!(!identity.person().subject().is_empty());
            let _ = identity.person().placeholder();
            assert!(!identity.person().key().contains('/'));
        }
    }
});
