//! Structural matching of a response envelope against a case's `expect` (the rules are in
//! `spec/README.md`), with one readable line per mismatch naming its JSON path.

use serde_json::Value;

use super::case::{Vars, interpolate, whole_variable};

/// Every way `actual` fails `expected`, as `at <path>: <problem>` lines.
pub fn check(expected: &Value, actual: &Value, vars: &Vars) -> Vec<String> {
    let mut out = Vec::new();
    walk(expected, Some(actual), "$", vars, &mut out);
    out
}

fn walk(expected: &Value, actual: Option<&Value>, path: &str, vars: &Vars, out: &mut Vec<String>) {
    let mut fail = |problem: String| out.push(format!("at {path}: {problem}"));
    let Some(actual) = actual else {
        if expected != "$absent" {
            fail(format!("expected {}, but the key is missing", preview(expected)));
        }
        return;
    };
    match expected {
        Value::Object(map) if map.len() == 1 && map.contains_key("$one_of") => {
            let Some(Value::Array(choices)) = map.get("$one_of") else {
                return fail("$one_of takes an array of expectations".to_owned());
            };
            if !choices.iter().any(|choice| check(choice, actual, vars).is_empty()) {
                fail(format!(
                    "matches none of $one_of {}; got {}",
                    preview(expected),
                    preview(actual)
                ));
            }
        }
        Value::Object(map) if map.len() == 1 && (map.contains_key("$len") || map.contains_key("$contains")) => {
            let Some(items) = actual.as_array() else {
                return fail(format!("expected an array, got {}", preview(actual)));
            };
            if let Some(len) = map.get("$len") {
                if len.as_u64() != Some(items.len() as u64) {
                    fail(format!("expected {len} elements, got {}", items.len()));
                }
            } else if let Some(Value::Array(wanted)) = map.get("$contains") {
                for (index, want) in wanted.iter().enumerate() {
                    if !items.iter().any(|item| check(want, item, vars).is_empty()) {
                        fail(format!("no element matches $contains[{index}] = {}", preview(want)));
                    }
                }
            } else {
                fail("$contains takes an array".to_owned());
            }
        }
        Value::Object(map) => {
            let Some(object) = actual.as_object() else {
                return fail(format!("expected an object, got {}", preview(actual)));
            };
            for (key, want) in map {
                walk(want, object.get(key), &format!("{path}.{key}"), vars, out);
            }
        }
        Value::Array(wanted) => {
            let Some(items) = actual.as_array() else {
                return fail(format!("expected an array, got {}", preview(actual)));
            };
            if items.len() != wanted.len() {
                return fail(format!(
                    "expected {} elements, got {}: {}",
                    wanted.len(),
                    items.len(),
                    preview(actual)
                ));
            }
            for (index, (want, item)) in wanted.iter().zip(items).enumerate() {
                walk(want, Some(item), &format!("{path}[{index}]"), vars, out);
            }
        }
        Value::String(token) => {
            if let Err(problem) = string(token, actual, vars) {
                fail(problem);
            }
        }
        Value::Number(want) => {
            let equal = actual
                .as_number()
                .is_some_and(|n| n == want || n.as_f64() == want.as_f64());
            if !equal {
                fail(format!("expected {want}, got {}", preview(actual)));
            }
        }
        other => {
            if other != actual {
                fail(format!("expected {other}, got {}", preview(actual)));
            }
        }
    }
}

/// Matches one expected string: a `$` token, a whole `{{name}}`, or a literal (after
/// `{{name}}` interpolation).
fn string(token: &str, actual: &Value, vars: &Vars) -> Result<(), String> {
    let got = || preview(actual);
    let text = || {
        actual
            .as_str()
            .ok_or_else(|| format!("expected a string, got {}", got()))
    };
    let holds = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(format!("expected {what}, got {}", got()))
        }
    };
    if let Some(name) = whole_variable(token) {
        let want = vars
            .get(name)
            .ok_or_else(|| format!("{{{{{name}}}}} is not a captured variable"))?;
        return holds(want == actual, &preview(want));
    }
    match token {
        "$absent" => return Err(format!("expected the key to be absent, got {}", got())),
        "$any" => return Ok(()),
        "$string" => return holds(actual.is_string(), "a string"),
        "$int" => return holds(actual.is_i64() || actual.is_u64(), "an integer"),
        "$number" => return holds(actual.is_number(), "a number"),
        "$bool" => return holds(actual.is_boolean(), "a boolean"),
        "$timestamp" => return holds(is_utc_timestamp(text()?), "an RFC 3339 UTC timestamp"),
        "$hex64" => {
            let hex = text()?;
            let lower_hex = hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            return holds(lower_hex, "64 lowercase hex digits");
        }
        _ => {}
    }
    if let Some(prefix) = token.strip_prefix("$id:") {
        let ok = text()?
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(is_ulid);
        return holds(ok, &format!("an id `{prefix}_<ULID>`"));
    }
    if let Some(want) = token.strip_prefix("$prefix:") {
        let want = interpolate(want, vars)?;
        return holds(text()?.starts_with(&want), &format!("a string starting with {want:?}"));
    }
    if let Some(want) = token.strip_prefix("$contains:") {
        let want = interpolate(want, vars)?;
        return holds(text()?.contains(&want), &format!("a string containing {want:?}"));
    }
    if token.starts_with('$') && token[1..].starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Err(format!("unknown matcher token {token:?} in the case file"));
    }
    let want = interpolate(token, vars)?;
    holds(actual.as_str() == Some(want.as_str()), &format!("{want:?}"))
}

/// A 26-character Crockford base32 ULID (uppercase, no I, L, O or U).
pub fn is_ulid(text: &str) -> bool {
    text.len() == 26
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b.is_ascii_uppercase() && !b"ILOU".contains(&b)))
}

/// An RFC 3339 timestamp in UTC with a `Z` suffix.
pub fn is_utc_timestamp(text: &str) -> bool {
    text.ends_with('Z') && chrono::DateTime::parse_from_rfc3339(text).is_ok()
}

/// Compact JSON for reports, with long strings shortened so an 8 MiB body stays readable.
pub fn preview(value: &Value) -> String {
    fn shorten(value: &Value) -> Value {
        match value {
            Value::String(s) if s.len() > 160 => {
                let cut = (0..=120).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
                Value::String(format!("{}…({} bytes)", &s[..cut], s.len()))
            }
            Value::Array(items) => Value::Array(items.iter().map(shorten).collect()),
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), shorten(v))).collect()),
            other => other.clone(),
        }
    }
    let text = shorten(value).to_string();
    match text.char_indices().nth(3000) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn one_of_matches_when_any_choice_matches() {
        let expected = json!({"$one_of": [null, {"ok": false, "error": {"code": "CONTENT_TOO_LARGE"}}]});
        let vars = Vars::new();
        assert!(check(&expected, &Value::Null, &vars).is_empty());
        assert!(
            check(
                &expected,
                &json!({"ok": false, "error": {"code": "CONTENT_TOO_LARGE"}}),
                &vars
            )
            .is_empty()
        );
        assert_eq!(check(&expected, &json!({"ok": true}), &vars).len(), 1);
    }
}
