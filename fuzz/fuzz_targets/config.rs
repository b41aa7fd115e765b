//! Any text as `mcpx.toml`: a configuration or an error naming a line, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err((line, message)) = mcpx::config::Config::parse(text) {
            assert!(!message.is_empty());
            assert!(line <= text.lines().count() + 1, "line {line}: {message}");
        }
    }
});
