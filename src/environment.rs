//! `${VAR}` in configured values: mcpx's environment may hold secrets meant for one server,
//! written into its `env` or `headers` by name rather than into the configuration file.

/// Expands `${VAR}` from mcpx's environment in a configured value.
pub fn expand(value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').ok_or("an unclosed ${")?;
        let name = &rest[start + 2..start + end];
        out.push_str(
            &std::env::var(name)
                .map_err(|_| format!("${{{name}}} is not set in mcpx's environment"))?,
        );
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod every_revision {
    mod environment {
        use crate::environment::expand;

        #[test]
        fn values_expand_the_environment() {
            std::env::set_var("MCPX_TEST_TOKEN", "s3cret");
            assert_eq!(
                expand("Bearer ${MCPX_TEST_TOKEN}").unwrap(),
                "Bearer s3cret"
            );
            assert!(expand("${MCPX_TEST_UNSET_VARIABLE}")
                .unwrap_err()
                .contains("MCPX_TEST_UNSET_VARIABLE"));
            assert!(expand("${UNCLOSED").is_err());
            assert_eq!(expand("plain").unwrap(), "plain");
        }
    }
}
