//! The session context carried in `MEMOREE_CONTEXT`: decoding with validation, encoding
//! for child processes, and the task id that `session exec --task` derives.

use std::ffi::OsString;

use crate::protocol::AmbientContext;
use crate::protocol::limits::{MAX_CONTEXT_ID_BYTES, MAX_PIN_BYTES, MAX_PINS};

use super::AmbientError;

/// The environment variable holding the session context as JSON.
pub const SESSION_ENV: &str = "MEMOREE_CONTEXT";

/// Hex characters of the BLAKE3 digest kept in a derived task id.
const TASK_ID_HEX_CHARS: usize = 20;

/// Reads `MEMOREE_CONTEXT` through `env`. Unset or blank means no session context.
pub fn read_session_context(env: &dyn Fn(&str) -> Option<OsString>) -> Result<Option<AmbientContext>, AmbientError> {
    let Some(raw) = env(SESSION_ENV) else {
        return Ok(None);
    };
    let text = raw
        .into_string()
        .map_err(|_| AmbientError::Config(format!("{SESSION_ENV} is not valid UTF-8")))?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    decode_session_context(&text).map(Some)
}

/// Parses and validates a session context JSON document. Unknown fields are rejected;
/// `null` is accepted for `task_id` and `component`.
pub fn decode_session_context(text: &str) -> Result<AmbientContext, AmbientError> {
    let context: AmbientContext =
        serde_json::from_str(text).map_err(|err| AmbientError::Config(format!("invalid {SESSION_ENV} JSON: {err}")))?;
    check_context(&context).map_err(|problem| AmbientError::Config(format!("invalid {SESSION_ENV}: {problem}")))?;
    Ok(context)
}

/// Compact JSON for `MEMOREE_CONTEXT`. Absent `task_id` and `component` are omitted;
/// `pins` is always written.
pub fn encode_session_context(context: &AmbientContext) -> String {
    serde_json::to_string(context).expect("an ambient context always serializes")
}

/// `tsk_` followed by the first 20 lowercase hex characters of
/// BLAKE3(`<workspace_id>:<project_id>:<task_name>`).
pub fn derive_task_id(workspace_id: &str, project_id: &str, task_name: &str) -> String {
    let digest = blake3::hash(format!("{workspace_id}:{project_id}:{task_name}").as_bytes());
    format!("tsk_{}", &digest.to_hex()[..TASK_ID_HEX_CHARS])
}

/// The context `session exec --task NAME` hands to its child: the resolved workspace,
/// project, component and pins, with the task replaced by the derived task id.
///
/// The task name must be non-blank and at most 256 bytes ([`AmbientError::Invalid`]).
pub fn session_context_for_task(resolved: &AmbientContext, task_name: &str) -> Result<AmbientContext, AmbientError> {
    if task_name.trim().is_empty() {
        return Err(AmbientError::Invalid("task name must not be blank".to_owned()));
    }
    if task_name.len() > MAX_CONTEXT_ID_BYTES {
        return Err(AmbientError::Invalid(format!(
            "task name must be at most {MAX_CONTEXT_ID_BYTES} bytes"
        )));
    }
    Ok(AmbientContext {
        task_id: Some(derive_task_id(&resolved.workspace_id, &resolved.project_id, task_name)),
        ..resolved.clone()
    })
}

/// Checks the bounds a session context must respect, returning what is wrong.
pub(super) fn check_context(context: &AmbientContext) -> Result<(), String> {
    check_id("workspace_id", &context.workspace_id)?;
    check_id("project_id", &context.project_id)?;
    if let Some(task_id) = &context.task_id {
        check_id("task_id", task_id)?;
    }
    if let Some(component) = &context.component {
        check_id("component", component)?;
    }
    if context.pins.len() > MAX_PINS {
        return Err(format!(
            "at most {MAX_PINS} pins are allowed, got {}",
            context.pins.len()
        ));
    }
    for (index, pin) in context.pins.iter().enumerate() {
        if pin.trim().is_empty() {
            return Err(format!("pins[{index}] must not be blank"));
        }
        if pin.len() > MAX_PIN_BYTES {
            return Err(format!("pins[{index}] must be at most {MAX_PIN_BYTES} bytes"));
        }
    }
    Ok(())
}

fn check_id(field: &str, value: &str) -> Result<(), String> {
    if value.trim().is_empty() {
        return Err(format!("{field} must not be blank"));
    }
    if value.len() > MAX_CONTEXT_ID_BYTES {
        return Err(format!("{field} must be at most {MAX_CONTEXT_ID_BYTES} bytes"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_message(text: &str) -> String {
        match decode_session_context(text).unwrap_err() {
            AmbientError::Config(message) => message,
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    fn context(task: Option<&str>) -> AmbientContext {
        AmbientContext {
            workspace_id: "wsp_01M8V4VSM2VTSV11KQC852ZW20".to_owned(),
            project_id: "prj_01M8V4VSM2RHZADMJRBV8QTVSJ".to_owned(),
            task_id: task.map(str::to_owned),
            component: None,
            pins: Vec::new(),
        }
    }

    #[test]
    fn the_task_id_matches_the_reference_vector() {
        assert_eq!(
            derive_task_id(
                "wsp_01M8V4VSM2VTSV11KQC852ZW20",
                "prj_01M8V4VSM2RHZADMJRBV8QTVSJ",
                "fix-auth"
            ),
            "tsk_d89d0fa6254a8ec97d46"
        );
    }

    #[test]
    fn a_task_session_replaces_an_inherited_task_and_keeps_the_rest() {
        let mut resolved = context(Some("tsk_inherited"));
        resolved.component = Some("api".to_owned());
        resolved.pins = vec!["art_1".to_owned()];
        let session = session_context_for_task(&resolved, "fix-auth").unwrap();
        assert_eq!(session.task_id.as_deref(), Some("tsk_d89d0fa6254a8ec97d46"));
        assert_eq!(session.component.as_deref(), Some("api"));
        assert_eq!(session.pins, ["art_1"]);
        assert_eq!(session.workspace_id, resolved.workspace_id);
    }

    #[test]
    fn a_blank_or_oversized_task_name_is_invalid() {
        let resolved = context(None);
        assert!(matches!(
            session_context_for_task(&resolved, " "),
            Err(AmbientError::Invalid(_))
        ));
        let long = "t".repeat(257);
        assert!(matches!(
            session_context_for_task(&resolved, &long),
            Err(AmbientError::Invalid(_))
        ));
        assert!(session_context_for_task(&resolved, &"t".repeat(256)).is_ok());
    }

    #[test]
    fn encoding_omits_absent_task_and_component_but_always_writes_pins() {
        assert_eq!(
            encode_session_context(&AmbientContext {
                workspace_id: "w".to_owned(),
                project_id: "p".to_owned(),
                task_id: None,
                component: None,
                pins: Vec::new(),
            }),
            r#"{"workspace_id":"w","project_id":"p","pins":[]}"#
        );
        let full = AmbientContext {
            workspace_id: "w".to_owned(),
            project_id: "p".to_owned(),
            task_id: Some("t".to_owned()),
            component: Some("c".to_owned()),
            pins: vec!["x".to_owned()],
        };
        let text = encode_session_context(&full);
        assert_eq!(
            text,
            r#"{"workspace_id":"w","project_id":"p","task_id":"t","component":"c","pins":["x"]}"#
        );
        assert_eq!(decode_session_context(&text).unwrap(), full);
    }

    #[test]
    fn decoding_accepts_null_optional_fields() {
        let context = decode_session_context(
            r#"{"workspace_id":"w","project_id":"p","task_id":null,"component":null,"pins":[]}"#,
        )
        .unwrap();
        assert_eq!(context.task_id, None);
        assert_eq!(context.component, None);
    }

    #[test]
    fn malformed_json_and_unknown_fields_are_config_errors() {
        assert!(config_message("{").starts_with("invalid MEMOREE_CONTEXT JSON: "));
        let message = config_message(r#"{"workspace_id":"w","project_id":"p","pins":[],"extra":1}"#);
        assert!(message.starts_with("invalid MEMOREE_CONTEXT JSON: "), "{message}");
        assert!(message.contains("extra"), "{message}");
        assert!(config_message(r#"{"project_id":"p","pins":[]}"#).contains("workspace_id"));
    }

    #[test]
    fn blank_and_oversized_fields_are_config_errors() {
        let long = "x".repeat(257);
        let cases = [
            (
                r#"{"workspace_id":" ","project_id":"p","pins":[]}"#.to_owned(),
                "workspace_id must not be blank",
            ),
            (
                r#"{"workspace_id":"w","project_id":"","pins":[]}"#.to_owned(),
                "project_id must not be blank",
            ),
            (
                format!(r#"{{"workspace_id":"{long}","project_id":"p","pins":[]}}"#),
                "workspace_id must be at most 256 bytes",
            ),
            (
                r#"{"workspace_id":"w","project_id":"p","task_id":"","pins":[]}"#.to_owned(),
                "task_id must not be blank",
            ),
            (
                format!(r#"{{"workspace_id":"w","project_id":"p","component":"{long}","pins":[]}}"#),
                "component must be at most 256 bytes",
            ),
            (
                r#"{"workspace_id":"w","project_id":"p","pins":["a"," "]}"#.to_owned(),
                "pins[1] must not be blank",
            ),
            (
                format!(
                    r#"{{"workspace_id":"w","project_id":"p","pins":["{}"]}}"#,
                    "x".repeat(513)
                ),
                "pins[0] must be at most 512 bytes",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(config_message(&text), format!("invalid MEMOREE_CONTEXT: {expected}"));
        }
    }

    #[test]
    fn at_most_128_pins_are_accepted() {
        let pins = |n: usize| vec!["\"p\""; n].join(",");
        let ok = format!(r#"{{"workspace_id":"w","project_id":"p","pins":[{}]}}"#, pins(128));
        assert_eq!(decode_session_context(&ok).unwrap().pins.len(), 128);
        let too_many = format!(r#"{{"workspace_id":"w","project_id":"p","pins":[{}]}}"#, pins(129));
        assert!(config_message(&too_many).contains("at most 128 pins"));
    }

    #[test]
    fn a_blank_variable_counts_as_unset_and_non_utf8_is_a_config_error() {
        let blank = |_: &str| Some(OsString::from("  \n"));
        assert_eq!(read_session_context(&blank).unwrap(), None);
        let unset = |_: &str| None;
        assert_eq!(read_session_context(&unset).unwrap(), None);

        use std::os::unix::ffi::OsStringExt;
        let bad = |_: &str| Some(OsString::from_vec(vec![0xff, b'{']));
        assert!(matches!(read_session_context(&bad), Err(AmbientError::Config(_))));
    }
}
