//! `[[auth.rules]]`: which caller may use which door, and which tools it may not see. The first
//! rule whose conditions all hold decides; with rules present, a caller none matches is refused.
//! A denied tool is cut from the caller's view of the catalog (the gateway's narrowed views), so
//! it is absent from its lists and unknown on call, exactly as a name no server has.

use super::identity::Identity;
use crate::config::Rule;
use globset::{Glob, GlobMatcher};
use serde_json::Value;

/// The rules, compiled.
#[derive(Debug, Default)]
pub struct Policy {
    rules: Vec<Compiled>,
}

#[derive(Debug)]
struct Compiled {
    rule: Rule,
    step_up: Vec<(GlobMatcher, String)>,
}

/// Why a caller may not use a door.
#[derive(Debug, PartialEq)]
pub enum Denial {
    /// No rule is for this caller.
    NoRule,
    /// The caller's rule does not open this door.
    Door,
}

impl Policy {
    /// `rules` compiled (validated by the configuration's loading).
    pub fn new(rules: &[Rule]) -> Policy {
        let rules = rules
            .iter()
            .map(|rule| Compiled {
                rule: rule.clone(),
                step_up: rule
                    .step_up
                    .iter()
                    .filter_map(|(glob, scope)| {
                        Some((Glob::new(glob).ok()?.compile_matcher(), scope.clone()))
                    })
                    .collect(),
            })
            .collect();
        Policy { rules }
    }

    /// The rule that decides for `identity` at the door of `profile` (`None`: `/mcp`): its
    /// index, `None` when there are no rules at all; or why the door stays shut.
    pub fn decide(
        &self,
        identity: &Identity,
        profile: Option<&str>,
    ) -> Result<Option<usize>, Denial> {
        if self.rules.is_empty() {
            return Ok(None);
        }
        let (index, found) = self
            .rules
            .iter()
            .enumerate()
            .find(|(_, compiled)| is_for(&compiled.rule, identity))
            .ok_or(Denial::NoRule)?;
        let doors = &found.rule.profiles;
        let opens = doors.iter().any(|door| door == "*")
            || profile.is_some_and(|profile| doors.iter().any(|door| door == profile));
        match opens {
            true => Ok(Some(index)),
            false => Err(Denial::Door),
        }
    }

    /// Whether any rule asks a scope more of some tools.
    pub fn has_step_up(&self) -> bool {
        self.rules
            .iter()
            .any(|compiled| !compiled.step_up.is_empty())
    }

    /// The scope rule `rule` asks of a call of `tool`, when a step-up names one.
    pub fn step_up(&self, rule: usize, tool: &str) -> Option<&str> {
        let compiled = self.rules.get(rule)?;
        compiled
            .step_up
            .iter()
            .find(|(glob, _)| glob.is_match(tool))
            .map(|(_, scope)| scope.as_str())
    }
}

/// Whether every condition `rule` sets holds for `identity`.
fn is_for(rule: &Rule, identity: &Identity) -> bool {
    let equal = |wanted: &Option<String>, had: &Option<String>| {
        wanted.as_ref().is_none_or(|w| had.as_ref() == Some(w))
    };
    let claims_hold = rule
        .claims
        .iter()
        .all(|(name, wanted)| match identity.claims.get(name) {
            Some(Value::String(had)) => had == wanted,
            Some(Value::Array(had)) => had.iter().any(|v| v.as_str() == Some(wanted)),
            Some(Value::Bool(had)) => had.to_string() == *wanted,
            Some(Value::Number(had)) => had.to_string() == *wanted,
            _ => false,
        });
    equal(&rule.subject, &identity.subject)
        && equal(&rule.client_id, &identity.client_id)
        && equal(&rule.issuer, &identity.issuer)
        && rule.scopes.iter().all(|scope| identity.has_scope(scope))
        && claims_hold
}

#[cfg(test)]
mod every_revision {
    mod policy {
        use super::super::*;
        use serde_json::json;

        fn rules(toml: &str) -> Vec<Rule> {
            #[derive(serde::Deserialize)]
            struct Rules {
                rules: Vec<Rule>,
            }
            toml::from_str::<Rules>(toml).unwrap().rules
        }

        fn caller(claims: Value) -> Identity {
            Identity::from_claims(claims.as_object().cloned().unwrap(), "https://idp").unwrap()
        }

        #[test]
        fn the_first_matching_rule_decides_and_no_match_is_refused() {
            let policy = Policy::new(&rules(
                "[[rules]]\nclaims = { groups = \"admins\" }\n\
                 [[rules]]\nscopes = [\"read\"]\nprofiles = [\"readonly\"]\nstepUp = { \"gh__*\" = \"gh:write\" }\n",
            ));
            let admin = caller(json!({"sub": "a", "groups": ["staff", "admins"]}));
            assert_eq!(policy.decide(&admin, None), Ok(Some(0)));
            let reader = caller(json!({"sub": "r", "scope": "mcp read"}));
            assert_eq!(policy.decide(&reader, Some("readonly")), Ok(Some(1)));
            assert_eq!(policy.decide(&reader, None), Err(Denial::Door));
            assert_eq!(policy.step_up(1, "gh__push"), Some("gh:write"));
            assert_eq!(policy.step_up(1, "fs__read"), None);
            let stranger = caller(json!({"sub": "s", "scope": "mcp"}));
            assert_eq!(policy.decide(&stranger, None), Err(Denial::NoRule));
            assert_eq!(Policy::new(&[]).decide(&stranger, None), Ok(None));
        }
    }
}
