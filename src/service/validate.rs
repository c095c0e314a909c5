//! Field-level validation shared by every operation: bounded non-blank strings, byte
//! limits, content decoding and paging bounds. Messages always name the field.

use base64::Engine as _;

use super::error::ServiceError;
use crate::protocol::artifact::ArtifactContent;
use crate::protocol::limits;

/// A required string that must be non-blank and at most `max` bytes.
pub fn bounded<'a>(field: &str, value: &'a str, max: usize) -> Result<&'a str, ServiceError> {
    if value.trim().is_empty() {
        return Err(ServiceError::invalid(format!("{field} must not be empty")));
    }
    if value.len() > max {
        return Err(ServiceError::invalid(format!("{field} must not exceed {max} bytes")));
    }
    Ok(value)
}

/// An optional string that, when present, must be non-blank and at most `max` bytes.
pub fn optional_bounded(field: &str, value: Option<&str>, max: usize) -> Result<(), ServiceError> {
    value.map(|v| bounded(field, v, max)).transpose().map(|_| ())
}

/// An entity identifier.
pub fn id<'a>(field: &str, value: &'a str) -> Result<&'a str, ServiceError> {
    bounded(field, value, limits::MAX_ID_BYTES)
}

/// A page size in `1..=max`.
pub fn limit(field: &str, value: i64, max: usize) -> Result<usize, ServiceError> {
    if value < 1 || value > max as i64 {
        return Err(ServiceError::invalid(format!(
            "{field} must be between 1 and {max}, got {value}"
        )));
    }
    Ok(value as usize)
}

/// A count in `0..=max`, where 0 turns the feature off.
pub fn count(field: &str, value: i64, max: usize) -> Result<usize, ServiceError> {
    usize::try_from(value)
        .ok()
        .filter(|v| *v <= max)
        .ok_or_else(|| ServiceError::invalid(format!("{field} must be between 0 and {max}, got {value}")))
}

/// An exclusive cursor that must be positive.
pub fn cursor(field: &str, value: Option<i64>) -> Result<Option<i64>, ServiceError> {
    match value {
        Some(v) if v < 1 => Err(ServiceError::invalid(format!("{field} must be at least 1, got {v}"))),
        other => Ok(other),
    }
}

/// A history cursor: an exclusive revision number. At or below 1 (0 included) it validly
/// selects an empty final page; only a negative number is refused.
pub fn history_cursor(field: &str, value: Option<i64>) -> Result<Option<i64>, ServiceError> {
    match value {
        Some(v) if v < 0 => Err(ServiceError::invalid(format!("{field} must be at least 0, got {v}"))),
        other => Ok(other),
    }
}

/// A JSON object stored as untrusted reference data, bounded by its encoded size.
pub fn metadata(field: &str, value: &serde_json::Map<String, serde_json::Value>) -> Result<String, ServiceError> {
    let encoded = serde_json::Value::Object(value.clone()).to_string();
    if encoded.len() > limits::MAX_METADATA_BYTES {
        return Err(ServiceError::invalid(format!(
            "{field} must not exceed {} bytes as encoded JSON",
            limits::MAX_METADATA_BYTES
        )));
    }
    Ok(encoded)
}

/// A media type: non-blank, bounded, and shaped like `type/subtype`.
pub fn media_type(value: &str) -> Result<&str, ServiceError> {
    bounded("media_type", value, limits::MAX_MEDIA_TYPE_BYTES)?;
    if !value.contains('/') {
        return Err(ServiceError::invalid(format!(
            "media_type \"{value}\" is not a MIME type"
        )));
    }
    Ok(value)
}

/// Decodes tagged content to raw bytes, enforcing the encoded and raw size limits. Text is
/// moved into the bytes, not copied.
pub fn content(content: ArtifactContent) -> Result<Vec<u8>, ServiceError> {
    let too_large = || {
        ServiceError::ContentTooLarge(format!(
            "content must not exceed {} raw bytes ({} encoded bytes)",
            limits::MAX_ARTIFACT_BYTES,
            limits::MAX_ENCODED_CONTENT_BYTES
        ))
    };
    let bytes = match content {
        ArtifactContent::Text(text) => {
            if text.len() > limits::MAX_ARTIFACT_BYTES {
                return Err(too_large());
            }
            text.into_bytes()
        }
        ArtifactContent::Base64(data) => {
            if data.len() > limits::MAX_ENCODED_CONTENT_BYTES {
                return Err(too_large());
            }
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|e| ServiceError::invalid(format!("content.data is not valid base64: {e}")))?
        }
    };
    if bytes.len() > limits::MAX_ARTIFACT_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Encodes stored bytes for output: text only for `text/*` media types whose bytes are
/// UTF-8 and fit the encoded limit once JSON-escaped; base64 otherwise.
pub fn encode_content(media_type: &str, bytes: Vec<u8>) -> ArtifactContent {
    let textual = media_type.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("text/"));
    if textual {
        match String::from_utf8(bytes) {
            Ok(text) => {
                let escaped = serde_json::to_string(&text).map(|s| s.len()).unwrap_or(usize::MAX);
                if escaped <= limits::MAX_ENCODED_CONTENT_BYTES {
                    return ArtifactContent::Text(text);
                }
                return ArtifactContent::Base64(base64::engine::general_purpose::STANDARD.encode(text.as_bytes()));
            }
            Err(e) => return ArtifactContent::Base64(base64::engine::general_purpose::STANDARD.encode(e.into_bytes())),
        }
    }
    ArtifactContent::Base64(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// A caller-supplied RFC 3339 instant, normalized to UTC.
pub fn timestamp(field: &str, value: &str) -> Result<crate::timefmt::Timestamp, ServiceError> {
    crate::timefmt::parse_rfc3339(value)
        .ok_or_else(|| ServiceError::invalid(format!("{field} must be an RFC 3339 timestamp, got \"{value}\"")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_and_oversized_fields_are_refused_by_name() {
        assert_eq!(
            bounded("title", "  ", 10).unwrap_err().to_string(),
            "invalid request: title must not be empty"
        );
        assert_eq!(
            bounded("kind", "abcdef", 3).unwrap_err().to_string(),
            "invalid request: kind must not exceed 3 bytes"
        );
    }

    #[test]
    fn base64_with_nul_and_invalid_utf8_round_trips_as_base64() {
        let bytes = vec![0u8, 0xff, 0xfe, b'a', 0];
        let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let decoded = content(ArtifactContent::Base64(encoded.clone())).unwrap();
        assert_eq!(decoded, bytes);
        assert_eq!(encode_content("text/plain", decoded), ArtifactContent::Base64(encoded));
    }

    #[test]
    fn exactly_the_raw_limit_is_accepted_and_one_byte_more_is_too_large() {
        let at_limit = "a".repeat(limits::MAX_ARTIFACT_BYTES);
        assert_eq!(
            content(ArtifactContent::Text(at_limit)).unwrap().len(),
            limits::MAX_ARTIFACT_BYTES
        );
        let over = "a".repeat(limits::MAX_ARTIFACT_BYTES + 1);
        assert!(matches!(
            content(ArtifactContent::Text(over)),
            Err(ServiceError::ContentTooLarge(_))
        ));
    }
}
