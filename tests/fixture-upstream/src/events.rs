//! The fixture's event types (the Events extension, SEP-3415), with `--events`, written from
//! the extension's specification since no released server delivers by poll or push: `ticks`
//! (poll), `alerts` (push), `hooks` (webhook only, which mcpx does not carry), and with
//! `--events-named NAME` a poll type of that name (`ticket.created`: events are named so).
//! Occurrences are what the tool `emit_event` raises, kept in one log; a cursor is the count of occurrences
//! before it (`c7`), so a poll or a stream from it resumes exactly there. A stream (an
//! `events/stream` request, never answered while it is open) is confirmed by `active`, hears
//! each occurrence as `event` and a `heartbeat` every second, every frame naming its request
//! in `_meta`; its cancellation ends it.

use serde_json::{json, Value};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// The event types, as `events/list` shows them, with a poll type `named` too.
fn types(named: Option<&str>) -> Vec<Value> {
    let object = json!({"type": "object", "properties": {}});
    let payload = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let named = named.map(|name| format!("{name}:poll"));
    ["ticks:poll", "alerts:push", "hooks:webhook"]
        .iter()
        .map(|spec| spec.to_string())
        .chain(named)
        .map(|spec| {
            let (name, mode) = spec.split_once(':').unwrap_or_default();
            json!({"name": name, "description": format!("{name}, raised by emit_event"),
                "delivery": [mode], "inputSchema": object, "payloadSchema": payload})
        })
        .collect()
}

/// The tool that raises an occurrence.
pub fn emit_tool() -> Value {
    json!({"name": "emit_event", "description": "Raises an occurrence of the event type `name` with `text`.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}, "text": {"type": "string"}},
            "required": ["name"]}})
}

/// Every occurrence raised, in order, and the streams open.
#[derive(Default)]
pub struct Log {
    occurrences: Mutex<Vec<Value>>,
    /// With `--events-log FILE`: where occurrences are kept (a line each), so that they outlive
    /// the process, as a real server's history does.
    kept: Option<std::path::PathBuf>,
    /// With `--events-retain N`: only the last N occurrences can be replayed; a poll from
    /// before them skips to the oldest kept, saying `truncated`.
    retain: Option<usize>,
    /// Each open stream's request id and event type.
    streams: Mutex<Vec<(Value, String)>>,
    /// With `--events-named NAME`: one more poll type, of that name.
    named: Option<String>,
}

/// The `_meta` that names the stream a frame is of.
fn of_stream(id: &Value) -> Value {
    json!({"io.modelcontextprotocol/subscriptionId": id})
}

/// A stream's frame `kind` (`active`, `event`, `heartbeat`) with `params`.
fn frame(kind: &str, mut params: Value, id: &Value) -> Value {
    params["_meta"] = of_stream(id);
    json!({"jsonrpc": "2.0", "method": format!("notifications/events/{kind}"), "params": params})
}

impl Log {
    /// A log kept in `file` when given (what it held read back), else in memory, replaying
    /// only the last `retain` occurrences when given.
    pub fn at(
        file: Option<std::path::PathBuf>,
        retain: Option<usize>,
        named: Option<String>,
    ) -> Log {
        let held = file.as_ref().and_then(|f| std::fs::read_to_string(f).ok());
        let occurrences = held
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect();
        Log {
            occurrences: Mutex::new(occurrences),
            kept: file,
            retain,
            named,
            ..Log::default()
        }
    }

    /// Its event types, as `events/list` shows them.
    pub fn types(&self) -> Vec<Value> {
        types(self.named.as_deref())
    }

    /// Raises an occurrence of `name` with `text`: it, and the frames that carry it to the
    /// streams open on `name`.
    pub fn emit(&self, name: &str, text: &str) -> (Value, Vec<Value>) {
        let mut occurrences = self.occurrences.lock().unwrap();
        let n = occurrences.len();
        let occurrence = json!({"eventId": format!("e{n}"), "name": name, "timestamp": now(),
            "data": {"text": text}, "cursor": format!("c{}", n + 1)});
        occurrences.push(occurrence.clone());
        if let Some(file) = &self.kept {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
                .unwrap();
            let _ = writeln!(file, "{occurrence}");
        }
        let streams = self.streams.lock().unwrap();
        let frames = streams
            .iter()
            .filter(|(_, streamed)| streamed == name)
            .map(|(id, _)| frame("event", occurrence.clone(), id))
            .collect();
        (occurrence, frames)
    }

    /// Raises what is no occurrence at all (a hostile server's): a string in place of one, in
    /// `name`'s polls, and as the params of a frame to its streams.
    pub fn emit_malformed(&self, name: &str) -> Vec<Value> {
        let garbage = json!("not an occurrence");
        self.occurrences
            .lock()
            .unwrap()
            .push(json!({"malformed": name}));
        let streams = self.streams.lock().unwrap();
        streams
            .iter()
            .filter(|(_, streamed)| streamed == name)
            .map(|_| json!({"jsonrpc": "2.0", "method": "notifications/events/event", "params": garbage}))
            .collect()
    }

    /// `events/stream` request `id`: the frames that open it (`active`, then what happened since
    /// its cursor), or why it cannot be opened.
    pub fn open_stream(
        &self,
        id: &Value,
        params: &Value,
    ) -> Result<Vec<Value>, (i64, &'static str)> {
        let name = delivered_by(&self.types(), params, "push")?;
        let occurrences = self.occurrences.lock().unwrap();
        let from = position(&params["cursor"], occurrences.len())?;
        let cursor = format!("c{}", occurrences.len());
        let mut frames = vec![frame(
            "active",
            json!({"cursor": cursor, "truncated": false}),
            id,
        )];
        let missed = occurrences.iter().skip(from).filter(|o| o["name"] == name);
        frames.extend(missed.map(|o| frame("event", o.clone(), id)));
        self.streams
            .lock()
            .unwrap()
            .push((id.clone(), name.to_owned()));
        Ok(frames)
    }

    /// The heartbeat of stream `id`, if it is still open.
    pub fn heartbeat(&self, id: &Value) -> Option<Value> {
        let open = self.streams.lock().unwrap().iter().any(|(s, _)| s == id);
        let cursor = format!("c{}", self.occurrences.lock().unwrap().len());
        open.then(|| frame("heartbeat", json!({ "cursor": cursor }), id))
    }

    /// Ends stream `id`, if it is one: whether it was.
    pub fn close_stream(&self, id: &Value) -> bool {
        let mut streams = self.streams.lock().unwrap();
        let before = streams.len();
        streams.retain(|(s, _)| s != id);
        streams.len() < before
    }

    /// `events/poll`: `name`'s occurrences after `cursor` (none for a `null` cursor: it starts
    /// from now), at most `maxEvents`.
    pub fn poll(&self, params: &Value) -> Result<Value, (i64, &'static str)> {
        let name = delivered_by(&self.types(), params, "poll")?;
        let occurrences = self.occurrences.lock().unwrap();
        let asked = position(&params["cursor"], occurrences.len())?;
        let oldest = self
            .retain
            .map_or(0, |n| occurrences.len().saturating_sub(n));
        let (from, truncated) = (asked.max(oldest), asked < oldest);
        let most = params["maxEvents"].as_u64().unwrap_or(100) as usize;
        let matching: Vec<(usize, &Value)> = occurrences
            .iter()
            .enumerate()
            .skip(from)
            .filter(|(_, o)| o["name"] == name || o["malformed"] == name)
            .collect();
        // A malformed one is answered as what it stands for: a string.
        let shown = |o: &Value| match o["malformed"].is_string() {
            true => json!("not an occurrence"),
            false => o.clone(),
        };
        let batch: Vec<Value> = matching.iter().take(most).map(|(_, o)| shown(o)).collect();
        let end = match batch.len() < matching.len() {
            true => matching[batch.len() - 1].0 + 1,
            false => occurrences.len(),
        };
        let mut answer = json!({"events": batch, "cursor": format!("c{end}"), "nextPollMs": 100,
            "hasMore": batch.len() < matching.len(), "truncated": truncated});
        if batch.is_empty() && matching.is_empty() {
            answer["hasMore"] = json!(false);
        }
        Ok(answer)
    }
}

/// The event type `params` name, if it is one of `types` and delivered by `mode`.
fn delivered_by<'p>(
    types: &[Value],
    params: &'p Value,
    mode: &str,
) -> Result<&'p str, (i64, &'static str)> {
    let name = params["name"].as_str().unwrap_or_default();
    let offered = types.iter().find(|t| t["name"] == name);
    let offered = offered.ok_or((-32011, "Event type not found"))?;
    match offered["delivery"]
        .as_array()
        .is_some_and(|d| d.contains(&json!(mode)))
    {
        true => Ok(name),
        false => Err((-32014, "Unsupported: this event type is not delivered so")),
    }
}

/// The count of occurrences a `cursor` stands after (`null`: all `len` of them, now).
fn position(cursor: &Value, len: usize) -> Result<usize, (i64, &'static str)> {
    match cursor {
        Value::Null => Ok(len),
        Value::String(cursor) => cursor
            .strip_prefix('c')
            .and_then(|n| n.parse().ok())
            .filter(|&n| n <= len)
            .ok_or((-32602, "Invalid params: not a cursor of this server's")),
        _ => Err((-32602, "Invalid params: cursor must be a string or null")),
    }
}

/// Now, in RFC 3339 (UTC, whole seconds).
fn now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's days-to-civil.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}
