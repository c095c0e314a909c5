//! JSON host configs (`.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json`,
//! `claude_desktop_config.json`, `~/.claude.json`) edited without reordering them: the file is
//! read into [`Json`], whose objects keep their keys in file order, one server entry is set,
//! and the file is written back with two-space indentation.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// A JSON value whose objects keep their key order.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The object's value at `key`, created as `{}` when absent. `None` when `self` is not
    /// an object.
    pub fn object_entry(&mut self, key: &str) -> Option<&mut Json> {
        let Json::Object(entries) = self else {
            return None;
        };
        let index = match entries.iter().position(|(k, _)| k == key) {
            Some(index) => index,
            None => {
                entries.push((key.to_owned(), Json::Object(Vec::new())));
                entries.len() - 1
            }
        };
        Some(&mut entries[index].1)
    }

    /// Sets `key` of an object, keeping its position when it exists.
    pub fn set(&mut self, key: &str, value: Json) {
        if let Some(slot) = self.object_entry(key) {
            *slot = value;
        }
    }

    pub fn from_value(value: serde_json::Value) -> Json {
        match value {
            serde_json::Value::Null => Json::Null,
            serde_json::Value::Bool(b) => Json::Bool(b),
            serde_json::Value::Number(n) => Json::Number(n),
            serde_json::Value::String(s) => Json::String(s),
            serde_json::Value::Array(items) => Json::Array(items.into_iter().map(Json::from_value).collect()),
            serde_json::Value::Object(map) => {
                Json::Object(map.into_iter().map(|(k, v)| (k, Json::from_value(v))).collect())
            }
        }
    }

    /// Two-space indented text with a final newline.
    pub fn to_pretty(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Number(n) => n.serialize(serializer),
            Json::String(s) => serializer.serialize_str(s),
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Json, E> {
        Ok(serde_json::Number::from_f64(n).map_or(Json::Null, Json::Number))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries: Vec<(String, Json)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            // A repeated key keeps its first position and its last value, as JSON parsers do.
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some(entry) => entry.1 = value,
                None => entries.push((key, value)),
            }
        }
        Ok(Json::Object(entries))
    }
}

/// Sets `root[section].memoree` to `entry`, keeping any other key the existing `memoree`
/// entry has (`env`, `cwd`…) and every other server. `Err` names what is in the way.
pub fn merge_server(root: &mut Json, section: &str, entry: Vec<(String, Json)>) -> Result<(), String> {
    let Some(servers) = root.object_entry(section) else {
        return Err("the file's top level is not a JSON object".to_owned());
    };
    let Some(server) = servers.object_entry("memoree") else {
        return Err(format!("`{section}` is not a JSON object"));
    };
    if !matches!(server, Json::Object(_)) {
        *server = Json::Object(Vec::new());
    }
    for (key, value) in entry {
        server.set(&key, value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_other_servers_and_the_key_order() {
        let text = r#"{"zeta": 1, "mcpServers": {"other": {"command": "x"}, "memoree": {"env": {"A": "1"}, "command": "old"}}, "alpha": [1.5, null]}"#;
        let mut root: Json = serde_json::from_str(text).unwrap();
        let entry = vec![
            ("command".to_owned(), Json::String("/bin/memoree".to_owned())),
            ("args".to_owned(), Json::Array(vec![Json::String("mcp".to_owned())])),
        ];
        merge_server(&mut root, "mcpServers", entry).unwrap();
        let out = root.to_pretty();
        // Each key appears after the one before it: file order, the new keys last.
        let mut at = 0;
        for key in [
            "\"zeta\"",
            "\"mcpServers\"",
            "\"other\"",
            "\"memoree\"",
            "\"env\"",
            "\"command\"",
            "\"args\"",
            "\"alpha\"",
        ] {
            at += out[at..]
                .find(key)
                .unwrap_or_else(|| panic!("{key} out of order in {out}"));
        }
        let value: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["mcpServers"]["memoree"]["command"], "/bin/memoree");
        assert_eq!(value["mcpServers"]["memoree"]["env"]["A"], "1");
        assert_eq!(value["alpha"][0], 1.5);
    }
}
