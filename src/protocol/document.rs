//! Parsing a request document: JSON text into a [`Value`], with duplicate object keys
//! detected instead of silently resolved.
//!
//! `serde_json` keeps the last of two equal keys. A proxy or logger that reads the first one
//! would then see a different request than the one executed, so every entry point (`memoree
//! call`, daemon frames, the in-process JSON entry) parses with [`parse`] and refuses a
//! document that repeats a key anywhere ([`DuplicateKey`]).
//!
//! The parse itself completes (keeping the first value of a repeated key), so the caller
//! can still echo the request's own `request_id` in the error, unless that is the key that
//! was repeated.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A parsed request document.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    /// The document, with the first value of every repeated key.
    pub value: Value,
    /// The first repeated key found, in document order.
    pub duplicate: Option<DuplicateKey>,
}

/// An object key that occurs twice in the same object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuplicateKey {
    /// The repeated key.
    pub key: String,
    /// Where the object holding it sits: `""` for the envelope itself, otherwise a dotted
    /// path such as `input`, `input.content` or `input.evidence[0]`.
    pub parent: String,
}

impl DuplicateKey {
    /// Whether the repeated key is the envelope's own `request_id`.
    pub fn is_request_id(&self) -> bool {
        self.parent.is_empty() && self.key == "request_id"
    }
}

impl fmt::Display for DuplicateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.parent.is_empty() {
            write!(f, "duplicate key {:?} in the request envelope", self.key)
        } else {
            write!(f, "duplicate key {:?} in {}", self.key, self.parent)
        }
    }
}

/// Parses one JSON document, recording the first repeated object key.
pub fn parse(bytes: &[u8]) -> Result<Document, serde_json::Error> {
    let duplicate = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = Strict {
        duplicate: &duplicate,
        at: None,
    }
    .deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(Document {
        value,
        duplicate: duplicate.into_inner(),
    })
}

/// One step of the path from the document root to the value being parsed.
struct Step<'a> {
    parent: Option<&'a Step<'a>>,
    segment: Segment<'a>,
}

enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

fn render(at: Option<&Step<'_>>) -> String {
    let mut segments = Vec::new();
    let mut next = at;
    while let Some(step) = next {
        segments.push(&step.segment);
        next = step.parent;
    }
    let mut path = String::new();
    for segment in segments.into_iter().rev() {
        match segment {
            Segment::Key(key) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Segment::Index(index) => path.push_str(&format!("[{index}]")),
        }
    }
    path
}

/// Builds a [`Value`] exactly as `serde_json` does, except that a repeated key is recorded
/// (the first value is kept).
#[derive(Clone, Copy)]
struct Strict<'a> {
    duplicate: &'a RefCell<Option<DuplicateKey>>,
    at: Option<&'a Step<'a>>,
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        loop {
            let step = Step {
                parent: self.at,
                segment: Segment::Index(items.len()),
            };
            let seed = Strict {
                duplicate: self.duplicate,
                at: Some(&step),
            };
            match seq.next_element_seed(seed)? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let step = Step {
                parent: self.at,
                segment: Segment::Key(&key),
            };
            let value = map.next_value_seed(Strict {
                duplicate: self.duplicate,
                at: Some(&step),
            })?;
            if object.contains_key(&key) {
                let mut duplicate = self.duplicate.borrow_mut();
                if duplicate.is_none() {
                    *duplicate = Some(DuplicateKey {
                        parent: render(self.at),
                        key,
                    });
                }
            } else {
                object.insert(key, value);
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn duplicate(text: &str) -> Option<String> {
        parse(text.as_bytes()).unwrap().duplicate.map(|d| d.to_string())
    }

    #[test]
    fn a_document_without_repeated_keys_parses_exactly_like_serde_json() {
        let text = r#"{"a": [1, -2, 3.5, 1e3, 18446744073709551615, "x\u00e9", null, true, {}],
                       "b": {"c": {"d": []}}, "e": 1.0}"#;
        let document = parse(text.as_bytes()).unwrap();
        assert_eq!(document.duplicate, None);
        assert_eq!(document.value, serde_json::from_str::<Value>(text).unwrap());
        // The same key in different objects is not a repetition.
        assert_eq!(
            duplicate(r#"{"a": {"k": 1}, "b": {"k": 2}, "k": [{"k": 1}, {"k": 2}]}"#),
            None
        );
    }

    #[test]
    fn a_repeated_key_is_reported_with_the_object_that_holds_it_and_the_first_value_wins() {
        let document = parse(br#"{"op": "capabilities", "op": "verify", "request_id": "r"}"#).unwrap();
        assert_eq!(document.value, json!({"op": "capabilities", "request_id": "r"}));
        let found = document.duplicate.unwrap();
        assert_eq!(found.to_string(), r#"duplicate key "op" in the request envelope"#);
        assert!(!found.is_request_id());
        assert_eq!(
            duplicate(r#"{"input": {"kind": "a", "title": "t", "kind": "b"}}"#).unwrap(),
            r#"duplicate key "kind" in input"#
        );
        assert_eq!(
            duplicate(r#"{"input": {"evidence": [{}, {"end_byte": 1, "end_byte": 2}]}}"#).unwrap(),
            r#"duplicate key "end_byte" in input.evidence[1]"#
        );
        assert_eq!(
            duplicate(r#"{"a": {"x": 1, "x": 1}, "b": 1, "b": 2}"#).unwrap(),
            r#"duplicate key "x" in a"#
        );
        assert!(
            parse(br#"{"request_id": "a", "request_id": "b"}"#)
                .unwrap()
                .duplicate
                .unwrap()
                .is_request_id()
        );
    }

    #[test]
    fn malformed_json_and_trailing_data_are_errors() {
        assert!(parse(b"{").is_err());
        assert!(parse(b"{} {}").is_err());
        assert!(parse(b"").is_err());
        assert!(parse(&[b'"', 0xff, b'"']).is_err());
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(parse(deep.as_bytes()).is_err(), "the recursion limit still applies");
    }
}
