//! RFC 6570 URI templates as a resource router reads them: does a URI fit a template.

/// Whether `uri` fits an RFC 6570 template, reading every `{...}` expression as "any text".
pub fn template_matches(template: &str, uri: &str) -> bool {
    let mut literals = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        literals.push(&rest[..open]);
        rest = match rest[open..].find('}') {
            Some(close) => &rest[open + close + 1..],
            None => return false,
        };
    }
    literals.push(rest);
    let (first, last) = (literals[0], literals[literals.len() - 1]);
    if literals.len() == 1 {
        return uri == first;
    }
    if !uri.starts_with(first) || !uri[first.len()..].ends_with(last) {
        return false;
    }
    let mut middle = &uri[first.len()..uri.len() - last.len()];
    for literal in &literals[1..literals.len() - 1] {
        match middle.find(literal) {
            Some(at) => middle = &middle[at + literal.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod every_revision {
    mod catalog {
        use crate::gateway::uri_template::template_matches;

        #[test]
        fn templates_match_uris() {
            assert!(template_matches("file:///{path}", "file:///etc/hosts"));
            assert!(template_matches(
                "db://{table}/rows/{id}",
                "db://users/rows/7"
            ));
            assert!(!template_matches(
                "db://{table}/rows/{id}",
                "db://users/cols/7"
            ));
            assert!(!template_matches("file:///{path}", "http://x"));
        }
    }
}
