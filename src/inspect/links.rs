//! URLs of inspector pages. Every link carries the page's horizon and reason, so a broad
//! view stays broad (and stays justified) while the reader navigates; ids are
//! percent-encoded path segments and query values are form-encoded.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::memory::Scope;

/// Everything but the unreserved characters of RFC 3986 is encoded in a path segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// `id` as one path segment.
pub fn segment(id: &str) -> String {
    utf8_percent_encode(id, SEGMENT).to_string()
}

/// `path` with the non-empty `pairs` and the scope's horizon (and reason, when broad) as
/// its query.
pub fn href(path: &str, scope: &Scope, pairs: &[(&str, &str)]) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (key, value) in pairs.iter().filter(|(_, value)| !value.is_empty()) {
        query.append_pair(key, value);
    }
    if scope.horizon.is_broad() {
        query.append_pair("horizon", scope.horizon.as_str());
        if let Some(reason) = &scope.reason {
            query.append_pair("reason", reason);
        }
    }
    let query = query.finish();
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{query}")
    }
}

pub fn claim(scope: &Scope, claim_id: &str, revision_id: Option<&str>) -> String {
    href(
        &format!("/claims/{}", segment(claim_id)),
        scope,
        &[("revision", revision_id.unwrap_or(""))],
    )
}

pub fn artifact(scope: &Scope, artifact_id: &str, revision_id: Option<&str>) -> String {
    href(
        &format!("/artifacts/{}", segment(artifact_id)),
        scope,
        &[("revision", revision_id.unwrap_or(""))],
    )
}

/// The relations page centred on `entity_type:entity_id`.
pub fn relations(scope: &Scope, entity_type: &str, entity_id: &str) -> String {
    href(
        "/relations",
        scope,
        &[("entity", &format!("{entity_type}:{entity_id}"))],
    )
}

/// The detail page of an entity by type (`artifact`, `claim`); relations go to the
/// relations page of their source.
pub fn entity(scope: &Scope, entity_type: &str, entity_id: &str) -> String {
    match entity_type {
        "artifact" => artifact(scope, entity_id, None),
        "claim" => claim(scope, entity_id, None),
        _ => href("/relations", scope, &[]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Horizon;

    #[test]
    fn ids_and_values_are_encoded_and_broad_horizons_carry_their_reason() {
        let scope = Scope {
            horizon: Horizon::Workspace,
            reason: Some("audit & review".to_owned()),
        };
        assert_eq!(
            claim(&scope, "clm_1/../x?y", Some("crev 2")),
            "/claims/clm_1%2F..%2Fx%3Fy?revision=crev+2&horizon=workspace&reason=audit+%26+review"
        );
        assert_eq!(artifact(&Scope::default(), "art_1", None), "/artifacts/art_1");
        assert_eq!(
            relations(&Scope::default(), "claim", "clm_1"),
            "/relations?entity=claim%3Aclm_1"
        );
    }
}
