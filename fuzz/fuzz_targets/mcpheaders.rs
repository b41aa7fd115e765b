//! The mirrored-header codec and `x-mcp-header` handling: decoding arbitrary header bytes is
//! strict and never panics, encoding always yields a header-safe value that decodes back to the
//! text, and schemas and arguments of any shape are handled.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx::mcpheaders;

fuzz_target!(|data: &[u8]| {
    if let Ok(decoded) = mcpheaders::decode(data) {
        // What decodes was header-safe, so encoding it again is too.
        assert!(mcpheaders::is_header_safe(
            mcpheaders::encode(&decoded).as_bytes()
        ));
    }
    let text = String::from_utf8_lossy(data);
    let encoded = mcpheaders::encode(&text);
    assert!(
        mcpheaders::is_header_safe(encoded.as_bytes()),
        "{encoded:?}"
    );
    assert_eq!(
        mcpheaders::decode(encoded.as_bytes()).as_deref(),
        Ok(&*text)
    );
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = mcpheaders::param_text(&value);
        let _ = mcpheaders::param_matches(&text, &value);
        if let Ok(params) = mcpheaders::header_params(&value) {
            for param in &params {
                let _ = param.header_name();
                let _ = param.value_in(&value);
            }
        }
    }
});
