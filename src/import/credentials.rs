//! Which of an editor's values are credentials, and what stands in their place. A token left in
//! `config.toml` is in every backup, dotfile repository and screen share of it: each is taken
//! out, kept under a name of its own (in the keyring, or a file only its owner reads), and the
//! configuration names it by a placeholder (`${keyring:NAME}`, `${file:PATH}`).

use base64::Engine;

/// A credential taken out of an imported server: kept as `name`, found at `place`.
#[derive(Debug, Clone, PartialEq)]
pub struct Secret {
    /// The name it is kept under (`mcpx secret`'s): the server's name and the key it was under.
    pub name: String,
    /// The credential itself.
    pub value: String,
    /// Where it was, for the report: `env.GITHUB_TOKEN`, `headers.Authorization`, `args[2]`.
    pub place: String,
}

/// What gives a kept secret's placeholder, by its name.
pub type Keep<'a> = &'a dyn Fn(&str) -> String;

/// Takes one server's credentials out, each replaced by the placeholder `keep` gives.
pub(super) struct Taking<'a> {
    server: &'a str,
    keep: Keep<'a>,
    pub taken: Vec<Secret>,
}

impl<'a> Taking<'a> {
    pub(super) fn new(server: &'a str, keep: Keep<'a>) -> Self {
        Taking {
            server,
            keep,
            taken: Vec::new(),
        }
    }

    /// `value` of `env.KEY`, or its placeholder when it is a credential.
    pub(super) fn env(&mut self, key: &str, value: String) -> String {
        match names_credential(key) || looks_like_token(&value) {
            true => self.take(key, value, format!("env.{key}")),
            false => value,
        }
    }

    /// `value` of header `name`, or what stands in its place when it is a credential: the
    /// scheme of `Bearer …`, `Basic …` or `token …` stays in sight.
    pub(super) fn header(&mut self, name: &str, value: String) -> String {
        let credential = ["authorization", "proxy-authorization", "cookie"]
            .contains(&name.to_ascii_lowercase().as_str())
            || names_credential(name)
            || looks_like_token(&value);
        if !credential {
            return value;
        }
        let place = format!("headers.{name}");
        match value.split_once(' ') {
            Some((scheme, rest)) if is_scheme(scheme) && !rest.is_empty() => {
                let kept = self.take(name, rest.to_owned(), place);
                format!("{scheme} {kept}")
            }
            _ => self.take(name, value, place),
        }
    }

    /// `args`, each credential in them replaced: the value of a `--token=…` or of the word
    /// after `--api-key`, and a word that looks like a token wherever it stands.
    pub(super) fn args(&mut self, args: Vec<String>) -> Vec<String> {
        let mut out: Vec<String> = Vec::with_capacity(args.len());
        for (index, arg) in args.into_iter().enumerate() {
            let place = format!("args[{index}]");
            let after_flag = out.last().and_then(|flag| flag_name(flag));
            if let Some((flag, value)) = arg.split_once('=').filter(|(f, _)| f.starts_with('-')) {
                let flag = flag.trim_start_matches('-');
                if names_credential(flag) && !value.is_empty() {
                    let kept = self.take(flag, value.to_owned(), place);
                    out.push(format!("--{flag}={kept}"));
                    continue;
                }
            }
            let taken = match after_flag {
                Some(flag) if names_credential(&flag) => self.take(&flag, arg, place),
                _ if looks_like_token(&arg) => self.take(&format!("arg{index}"), arg, place),
                _ => arg,
            };
            out.push(taken);
        }
        out
    }

    /// `url` without the credential it carries: a password in it becomes an `Authorization:
    /// Basic` header (returned beside it, already a placeholder). A credential in its query
    /// cannot be kept out of `config.toml`, where `url` is not expanded: why not.
    pub(super) fn url(&mut self, url: &str) -> Result<(String, Option<String>), String> {
        let Ok(mut parsed) = url::Url::parse(url) else {
            return Ok((url.to_owned(), None));
        };
        if let Some((key, _)) = parsed.query_pairs().find(|(k, _)| names_credential(k)) {
            return Err(format!(
                "its url carries a credential in its query (`{key}=…`), which mcpx would have to write into config.toml in plain text; add it by hand, with the credential in a header if the server takes one (`headers = {{ Authorization = \"Bearer ${{keyring:NAME}}\" }}`)"
            ));
        }
        let Some(password) = parsed.password().map(str::to_owned) else {
            return Ok((url.to_owned(), None));
        };
        let user = percent(parsed.username());
        let pair = format!("{user}:{}", percent(&password));
        let basic = base64::engine::general_purpose::STANDARD.encode(pair);
        let _ = parsed.set_password(None);
        let _ = parsed.set_username("");
        let kept = self.take("Authorization", basic, "the url's password".into());
        Ok((parsed.to_string(), Some(format!("Basic {kept}"))))
    }

    fn take(&mut self, key: &str, value: String, place: String) -> String {
        // A value that is a placeholder already names where it is kept.
        if value.contains("${") || value.is_empty() {
            return value;
        }
        let name = secret_name(self.server, key);
        let placeholder = (self.keep)(&name);
        self.taken.push(Secret { name, value, place });
        placeholder
    }
}

/// `server-key`, in the letters a secret's name may hold (`mcpx secret`'s).
fn secret_name(server: &str, key: &str) -> String {
    let fits = |c: char| c.is_ascii_alphanumeric() || "-_.@".contains(c);
    format!("{server}-{key}")
        .chars()
        .map(|c| if fits(c) { c } else { '_' })
        .collect()
}

/// Whether `name` (an environment variable, a header, a flag, a query key) says it holds a
/// credential: a word of it is one of those that do, in any case or joining.
pub(super) fn names_credential(name: &str) -> bool {
    const WORDS: [&str; 9] = [
        "token",
        "key",
        "secret",
        "password",
        "passwd",
        "pwd",
        "pat",
        "auth",
        "credential",
    ];
    const WITHIN: [&str; 6] = [
        "token",
        "secret",
        "password",
        "apikey",
        "credential",
        "passwd",
    ];
    let lower = name.to_ascii_lowercase();
    WITHIN.iter().any(|w| lower.contains(w))
        || words(name).iter().any(|w| WORDS.contains(&w.as_str()))
}

/// The words of `name`: split at every non-alphanumeric and at each lower-to-upper change
/// (`apiKey`, `API_KEY`, `x-api-key`), lowercased.
fn words(name: &str) -> Vec<String> {
    let mut words = vec![String::new()];
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() || (previous_lower && c.is_ascii_uppercase()) {
            words.push(String::new());
        }
        if let Some(word) = words.last_mut().filter(|_| c.is_ascii_alphanumeric()) {
            word.push(c.to_ascii_lowercase());
        }
        previous_lower = c.is_ascii_lowercase();
    }
    words.retain(|w| !w.is_empty());
    words
}

/// Whether `value` has the shape of a well-known service's token, whatever it is called.
fn looks_like_token(value: &str) -> bool {
    const PREFIXES: [&str; 12] = [
        "ghp_",
        "gho_",
        "ghs_",
        "ghu_",
        "github_pat_",
        "glpat-",
        "sk-",
        "sk_live_",
        "xoxb-",
        "xoxp-",
        "xapp-",
        "AKIA",
    ];
    let long_enough = value.len() >= 16 && !value.contains(char::is_whitespace);
    long_enough && PREFIXES.iter().any(|p| value.starts_with(p))
}

/// An HTTP authentication scheme that stays in sight before its credential.
fn is_scheme(word: &str) -> bool {
    ["bearer", "basic", "token", "bot"].contains(&word.to_ascii_lowercase().as_str())
}

/// The flag `arg` is (`--api-key`, `-t`), by its name without dashes, if it is one.
fn flag_name(arg: &str) -> Option<String> {
    let name = arg.strip_prefix('-')?.trim_start_matches('-');
    (!name.is_empty() && !name.contains('=')).then(|| name.to_owned())
}

/// A URL's user or password as it was meant, not as the URL escapes it.
fn percent(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={text}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| text.to_owned())
}

#[cfg(test)]
mod every_revision {
    mod import {
        use super::super::*;

        fn keyring(name: &str) -> String {
            format!("${{keyring:{name}}}")
        }

        #[test]
        fn credential_names_are_found_in_any_case_or_joining() {
            for name in [
                "GITHUB_PERSONAL_ACCESS_TOKEN",
                "OPENAI_API_KEY",
                "apiKey",
                "X-Api-Key",
                "DB_PASSWORD",
                "client_secret",
                "GITLAB_PAT",
                "AUTH_HEADER",
            ] {
                assert!(names_credential(name), "{name}");
            }
            for name in [
                "KEYBOARD",
                "MONKEY_MODE",
                "PATH",
                "HOME",
                "LOG_LEVEL",
                "author",
            ] {
                assert!(!names_credential(name), "{name}");
            }
        }

        #[test]
        fn each_kind_of_credential_is_taken_out_and_named() {
            let mut taking = Taking::new("gh", &keyring);
            assert_eq!(
                taking.env("GITHUB_TOKEN", "ghp_x".into()),
                "${keyring:gh-GITHUB_TOKEN}"
            );
            assert_eq!(taking.env("LOG", "debug".into()), "debug");
            let named_by_shape = taking.env("X", "ghp_0123456789abcdef0123".into());
            assert_eq!(named_by_shape, "${keyring:gh-X}");
            let header = taking.header("Authorization", "Bearer abc".into());
            assert_eq!(header, "Bearer ${keyring:gh-Authorization}");
            assert_eq!(taking.header("Accept", "text/plain".into()), "text/plain");
            let args = taking.args(vec![
                "--api-key=k1".into(),
                "--token".into(),
                "k2".into(),
                "--verbose".into(),
                "plain".into(),
            ]);
            assert_eq!(
                args,
                [
                    "--api-key=${keyring:gh-api-key}",
                    "--token",
                    "${keyring:gh-token}",
                    "--verbose",
                    "plain"
                ]
            );
            // A value that names its store already stays as it is.
            assert_eq!(taking.env("API_KEY", "${env:K}".into()), "${env:K}");
            let values: Vec<_> = taking.taken.iter().map(|s| s.value.as_str()).collect();
            assert_eq!(
                values,
                ["ghp_x", "ghp_0123456789abcdef0123", "abc", "k1", "k2"]
            );
        }

        #[test]
        fn a_password_in_a_url_becomes_a_basic_header_and_a_query_token_is_refused() {
            let mut taking = Taking::new("r", &keyring);
            let (url, header) = taking.url("https://ann:p%40ss@h.test/mcp").unwrap();
            assert_eq!(url, "https://h.test/mcp");
            assert_eq!(header.as_deref(), Some("Basic ${keyring:r-Authorization}"));
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(&taking.taken[0].value)
                .unwrap();
            assert_eq!(decoded, b"ann:p@ss");
            let refused = taking.url("https://h.test/mcp?token=abc").unwrap_err();
            assert!(
                refused.contains("token=") && !refused.contains("abc"),
                "{refused}"
            );
            assert_eq!(taking.url("https://h.test/mcp?page=2").unwrap().1, None);
        }
    }
}
