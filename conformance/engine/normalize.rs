//! Golden normalization: [`normalize`] is the one function that redacts volatile values.
//!
//! Generated identifiers (`art_<ULID>`, `arev_…`, `clm_…`, `crev_…`, `rel_…`, `ccase_…`,
//! `cevt_…`, `evt_…`) become `<prefix:N>`, numbered per prefix by first appearance, wherever
//! they occur in a string (messages included). Strings that are whole RFC 3339 timestamps
//! become `<timestamp>`. The [`IdMap`] keeps both directions, so a later request can name an
//! earlier identifier by its token and [`IdMap::resolve`] puts the real value back.

use std::collections::HashMap;

use serde_json::Value;

use super::matcher::{is_ulid, is_utc_timestamp};

/// The identifier prefixes the service generates.
const ID_PREFIXES: [&str; 8] = ["arev", "art", "ccase", "cevt", "clm", "crev", "evt", "rel"];
const TIMESTAMP_TOKEN: &str = "<timestamp>";

/// Identifiers seen so far in one transcript, in both directions.
#[derive(Debug, Default)]
pub struct IdMap {
    tokens: HashMap<String, String>,
    ids: HashMap<String, String>,
    counts: HashMap<&'static str, usize>,
}

impl IdMap {
    fn token_for(&mut self, prefix: &'static str, id: &str) -> String {
        if let Some(token) = self.tokens.get(id) {
            return token.clone();
        }
        let count = self.counts.entry(prefix).or_default();
        *count += 1;
        let token = format!("<{prefix}:{count}>");
        self.tokens.insert(id.to_owned(), token.clone());
        self.ids.insert(token.clone(), id.to_owned());
        token
    }

    /// Replaces every `<prefix:N>` token in a recorded request with the identifier it stands for.
    pub fn resolve(&self, request: &Value) -> Result<Value, String> {
        Ok(match request {
            Value::String(text) => Value::String(self.resolve_text(text)?),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.resolve(v)).collect::<Result<_, _>>()?),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), self.resolve(v)?)))
                    .collect::<Result<_, String>>()?,
            ),
            other => other.clone(),
        })
    }

    fn resolve_text(&self, text: &str) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find('<') {
            let candidate = rest[start..].find('>').map(|end| &rest[start..=start + end]);
            match candidate.filter(|c| is_id_token(c)) {
                Some(token) => {
                    let id = self
                        .ids
                        .get(token)
                        .ok_or_else(|| format!("{token} is used before any response introduced it"))?;
                    out.push_str(&rest[..start]);
                    out.push_str(id);
                    rest = &rest[start + token.len()..];
                }
                None => {
                    out.push_str(&rest[..=start]);
                    rest = &rest[start + 1..];
                }
            }
        }
        out.push_str(rest);
        Ok(out)
    }
}

fn is_id_token(candidate: &str) -> bool {
    let Some(inner) = candidate.strip_prefix('<').and_then(|c| c.strip_suffix('>')) else {
        return false;
    };
    inner.split_once(':').is_some_and(|(prefix, n)| {
        ID_PREFIXES.contains(&prefix) && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Redacts generated identifiers and timestamps in a response (see the module docs).
pub fn normalize(value: &Value, ids: &mut IdMap) -> Value {
    match value {
        Value::String(text) if is_utc_timestamp(text) => Value::String(TIMESTAMP_TOKEN.to_owned()),
        Value::String(text) => Value::String(redact_ids(text, ids)),
        Value::Array(items) => Value::Array(items.iter().map(|v| normalize(v, ids)).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), normalize(v, ids))).collect()),
        other => other.clone(),
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn redact_ids(text: &str, ids: &mut IdMap) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let at_boundary = i == 0 || !is_word_byte(bytes[i - 1]);
        let found = at_boundary
            .then(|| {
                ID_PREFIXES.into_iter().find_map(|prefix| {
                    let end = i + prefix.len() + 1 + 26;
                    let candidate = text.get(i..end)?;
                    let ulid = candidate.strip_prefix(prefix)?.strip_prefix('_')?;
                    let closed = bytes.get(end).is_none_or(|b| !is_word_byte(*b));
                    (is_ulid(ulid) && closed).then_some((prefix, end))
                })
            })
            .flatten();
        match found {
            Some((prefix, end)) => {
                out.push_str(&text[copied..i]);
                out.push_str(&ids.token_for(prefix, &text[i..end]));
                copied = end;
                i = end;
            }
            None => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}
