//! Any line on the admin socket: a command that round-trips, or a refusal, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx::admin::protocol::Command;

fuzz_target!(|data: &[u8]| {
    if let Ok(command) = serde_json::from_slice::<Command>(data) {
        let line = serde_json::to_string(&command).unwrap();
        assert_eq!(serde_json::from_str::<Command>(&line).unwrap(), command);
    }
});
