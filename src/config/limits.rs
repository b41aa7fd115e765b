//! `[limits]`: how often one caller may call, so that an agent in a loop cannot spend a budget
//! (an API's quota, a paid model's tokens) before anyone notices. Nothing is limited unless
//! configured.

use super::duration as humantime_serde;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::time::Duration;

/// `[limits]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Limits {
    /// Every caller's calls (`tools/call`, `prompts/get`, `resources/read`), as `"120/min"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<Rate>,
    /// How many of them may come at once before the rate applies (default: the rate's count
    /// per unit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    /// Limits for the tools whose exposed names match a glob, each besides `calls`: every
    /// limit a call matches must admit it.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolLimit>,
    /// Refuses the same call made again and again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loop_guard: Option<LoopGuard>,
}

/// `[limits.tools."GLOB"]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolLimit {
    /// The matching tools' calls, per caller, as `"10/min"`.
    pub calls: Rate,
    /// How many may come at once (default: the rate's count per unit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

/// `[limits.loopGuard]`: one caller calling one tool with identical arguments more than
/// `identical` times within `window` is not sent upstream.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LoopGuard {
    /// How many identical calls pass within the window.
    pub identical: u32,
    /// The window (default 2 minutes).
    #[serde(default = "two_minutes", with = "humantime_serde")]
    pub window: Duration,
}

fn two_minutes() -> Duration {
    Duration::from_secs(120)
}

/// A rate: `count` per `per`, written `"10/min"`, `"5/s"`, `"100/hour"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// How many.
    pub count: u32,
    /// In how long.
    pub per: Duration,
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let unit = match self.per.as_secs() {
            1 => "s",
            60 => "min",
            3600 => "hour",
            _ => "day",
        };
        write!(f, "{}/{unit}", self.count)
    }
}

impl std::str::FromStr for Rate {
    type Err = String;

    fn from_str(text: &str) -> Result<Rate, String> {
        let wrong =
            || format!("{text:?} is not a rate such as \"10/min\", \"5/s\" or \"100/hour\"");
        let (count, unit) = text.split_once('/').ok_or_else(wrong)?;
        let count: u32 = count.trim().parse().map_err(|_| wrong())?;
        let seconds = match unit.trim() {
            "s" | "sec" | "second" => 1,
            "m" | "min" | "minute" => 60,
            "h" | "hour" => 3600,
            "d" | "day" => 86400,
            _ => return Err(wrong()),
        };
        if count == 0 {
            return Err(format!(
                "{text:?}: a rate of zero would refuse every call; disable the tool instead"
            ));
        }
        Ok(Rate {
            count,
            per: Duration::from_secs(seconds),
        })
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Rate, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod limits {
            use crate::config::Rate;
            use std::time::Duration;

            #[test]
            fn rates_read_as_people_write_them() {
                let rate: Rate = "10/min".parse().unwrap();
                assert_eq!((rate.count, rate.per), (10, Duration::from_secs(60)));
                assert_eq!("5/s".parse::<Rate>().unwrap().to_string(), "5/s");
                assert!("10 per minute".parse::<Rate>().is_err());
                assert!("0/min".parse::<Rate>().is_err());
            }
        }
    }
}
