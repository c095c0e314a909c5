//! Idempotency keys for mutation tool calls whose arguments carry none.
//!
//! MCP hosts retry tool calls on their own (a timeout, a dropped response), and models
//! rarely pass keys. The rule: a key-less mutation gets the key `mcp_<session>_<ULID>`,
//! remembered under the fingerprint of the call (tool, canonical arguments, resolved
//! context) for a bounded window counted from its first use. An identical call inside the
//! window reuses that key, so the daemon replays the first acknowledgement instead of
//! writing twice; after the window, or with any other argument, a call gets a new key and
//! is a new write. `<session>` is this server process (one per MCP session over stdio), so
//! two sessions never share a key.
//!
//! **Invariant:** a key is never reused outside its window or for different arguments or
//! context; a caller's own key is always used as given.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::protocol::AmbientContext;

/// The default window: long enough for any host retry, short enough that a deliberate
/// identical write later in a session is a new write.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(600);

/// The automatic keys of one MCP session.
#[derive(Debug)]
pub struct AutoKeys {
    session: String,
    window: Duration,
    issued: Mutex<HashMap<blake3::Hash, (String, Instant)>>,
}

impl AutoKeys {
    pub fn new(window: Duration) -> AutoKeys {
        AutoKeys {
            session: ulid::Ulid::new().to_string(),
            window,
            issued: Mutex::new(HashMap::new()),
        }
    }

    pub fn window(&self) -> Duration {
        self.window
    }

    /// The key for a key-less call of `tool` with `arguments` in `context`, issued at `now`.
    pub fn key_for(&self, tool: &str, arguments: &Value, context: Option<&AmbientContext>, now: Instant) -> String {
        let fingerprint = fingerprint(tool, arguments, context);
        let mut issued = self.issued.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        issued.retain(|_, (_, first)| now.saturating_duration_since(*first) < self.window);
        issued
            .entry(fingerprint)
            .or_insert_with(|| (format!("mcp_{}_{}", self.session, ulid::Ulid::new()), now))
            .0
            .clone()
    }
}

/// BLAKE3 of the tool name, the canonical JSON of the arguments and of the context.
fn fingerprint(tool: &str, arguments: &Value, context: Option<&AmbientContext>) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(tool.as_bytes());
    hasher.update(&[0]);
    hasher.update(canonical(arguments).as_bytes());
    hasher.update(&[0]);
    let context = context.map(|c| serde_json::to_value(c).unwrap_or(Value::Null));
    hasher.update(canonical(&context.unwrap_or(Value::Null)).as_bytes());
    hasher.finalize()
}

/// JSON with object keys sorted at every level, whatever order the map keeps.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(object) => {
            let mut entries: Vec<(&String, &Value)> = object.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (key, child)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                write_canonical(child, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context(project: &str) -> AmbientContext {
        AmbientContext {
            workspace_id: "w".to_owned(),
            project_id: project.to_owned(),
            task_id: None,
            component: None,
            pins: Vec::new(),
        }
    }

    #[test]
    fn an_identical_call_inside_the_window_gets_the_same_key_whatever_the_key_order() {
        let keys = AutoKeys::new(Duration::from_secs(60));
        let start = Instant::now();
        let first = keys.key_for(
            "artifact_put",
            &json!({"a": 1, "b": [1, {"x": 2, "y": 3}]}),
            Some(&context("p")),
            start,
        );
        let retry = keys.key_for(
            "artifact_put",
            &json!({"b": [1, {"y": 3, "x": 2}], "a": 1}),
            Some(&context("p")),
            start + Duration::from_secs(59),
        );
        assert_eq!(first, retry);
        assert!(first.starts_with("mcp_") && first.len() <= 64, "{first}");
    }

    #[test]
    fn other_arguments_another_tool_another_context_or_an_expired_window_get_a_new_key() {
        let keys = AutoKeys::new(Duration::from_secs(60));
        let start = Instant::now();
        let args = json!({"a": 1});
        let first = keys.key_for("artifact_put", &args, Some(&context("p")), start);
        let others = [
            keys.key_for("artifact_put", &json!({"a": 2}), Some(&context("p")), start),
            keys.key_for("claim_assert", &args, Some(&context("p")), start),
            keys.key_for("artifact_put", &args, Some(&context("q")), start),
            keys.key_for(
                "artifact_put",
                &args,
                Some(&context("p")),
                start + Duration::from_secs(60),
            ),
        ];
        for other in &others {
            assert_ne!(&first, other);
        }
    }

    #[test]
    fn two_sessions_never_share_a_key() {
        let now = Instant::now();
        let a = AutoKeys::new(DEFAULT_WINDOW).key_for("t", &json!({}), None, now);
        let b = AutoKeys::new(DEFAULT_WINDOW).key_for("t", &json!({}), None, now);
        assert_ne!(a, b);
    }

    #[test]
    fn canonical_json_sorts_keys_and_keeps_scalars_exact() {
        assert_eq!(
            canonical(&json!({"b": "\"x\"", "a": [true, null, 1.5]})),
            r#"{"a":[true,null,1.5],"b":"\"x\""}"#
        );
    }
}
