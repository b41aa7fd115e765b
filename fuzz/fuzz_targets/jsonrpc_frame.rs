//! Any bytes as a stdio line or an HTTP body: parsed into a frame, each request's envelope
//! checked and its era classified, every answer serialisable. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx::jsonrpc::{parse_frame, Frame, Message};
use mcpx::protocol::envelope;

fn exercise(message: &Message) {
    match message {
        Message::Request(request) => {
            let params = request.params.as_ref();
            let _ = envelope::era_of(params);
            let _ = envelope::declared_version(params);
            if let Err(error) = envelope::check(params) {
                let _ = error.to_value();
            }
        }
        Message::Notification(notification) => {
            let _ = envelope::era_of(notification.params.as_ref());
            let _ = notification.to_value();
        }
        Message::Response(response) => {
            let _ = response.error_code();
            let _ = response.to_value();
        }
    }
}

fuzz_target!(|data: &[u8]| {
    match parse_frame(data) {
        Ok(Frame::Single(message)) => exercise(&message),
        Ok(Frame::Batch(elements)) => {
            for element in &elements {
                match element {
                    Ok(message) => exercise(message),
                    Err(refusal) => drop(refusal.to_value()),
                }
            }
        }
        Err(refusal) => drop(refusal.to_value()),
    }
});
