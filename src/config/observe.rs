//! `[telemetry]` and `[audit]`: what mcpx tells about its work, as traces and as a log of calls.

use super::auth::state_dir;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `[telemetry]`: mcpx's own spans, exported over OTLP/HTTP (off unless `otlpEndpoint` is set).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Telemetry {
    /// The collector's OTLP/HTTP base URL (`http://127.0.0.1:4318`); spans go to `/v1/traces`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otlp_endpoint: Option<String>,
    /// The `service.name` the spans carry.
    pub service_name: String,
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry {
            otlp_endpoint: None,
            service_name: "mcpx".into(),
        }
    }
}

/// `[audit]`: a JSON line per call, read and question (off unless `path` is set).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Audit {
    /// Where the lines go; no audit log when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Whether lines carry the arguments' values, not only their hash.
    pub arguments: bool,
    /// The file is rotated when it reaches this size.
    pub max_bytes: u64,
    /// How many rotated files are kept (`FILE.1` … `FILE.keep`).
    pub keep: usize,
    /// The installation's secret key that the arguments' digest is an HMAC under (created,
    /// 0600, when missing): a plain hash of small arguments is a dictionary lookup away.
    pub key_file: PathBuf,
}

impl Default for Audit {
    fn default() -> Self {
        Audit {
            path: None,
            arguments: false,
            max_bytes: 100 * 1024 * 1024,
            keep: 5,
            key_file: state_dir().join("audit.key"),
        }
    }
}
