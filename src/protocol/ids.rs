//! Identifier newtypes: `art_…`, `arev_…`/`crev_…`, `clm_…`, `rel_…`, `ccase_…`, `evt_…`
//! and `req_…`, each a prefix and a ULID.
//!
//! On the wire an identifier is a plain string, and an input identifier is whatever the
//! caller sent: a malformed id is an unknown one (`NOT_FOUND`), never a decoding error, so
//! these types check nothing when they are deserialized. They keep the kinds apart in code
//! (an artifact id cannot be passed where a claim id is expected) and `generate` is the one
//! place fresh identifiers come from.
//!
//! **Invariant:** the ULIDs one process generates are strictly increasing, within a
//! millisecond too (a monotonic generator), so an id order is the creation order. Ranking
//! breaks score ties by entity id: two entities written in the same millisecond must not
//! trade places from one run to the next.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// The process's ULID source: each ULID is greater than the previous one.
static GENERATOR: Mutex<ulid::Generator> = Mutex::new(ulid::Generator::new());

/// A fresh ULID, greater than every ULID this process generated before. Should the random
/// part ever overflow within one millisecond (after 2^80 ids), a plain random ULID is used.
fn fresh_ulid() -> ulid::Ulid {
    let mut generator = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    generator.generate().unwrap_or_else(|_| ulid::Ulid::new())
}

macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident, $prefix:literal) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The prefix of a generated identifier, without the `_`.
            pub const PREFIX: &'static str = $prefix;

            /// A fresh identifier: the prefix, `_` and a new ULID, greater than every one
            /// generated before in this process.
            pub fn generate() -> $name {
                $name(format!("{}_{}", $prefix, fresh_ulid()))
            }

            /// Wraps an identifier as received or stored; nothing is checked.
            pub fn new(id: impl Into<String>) -> $name {
                $name(id.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> $name {
                $name(id)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> $name {
                $name(id.to_owned())
            }
        }

        impl From<&$name> for $name {
            fn from(id: &$name) -> $name {
                id.clone()
            }
        }

        impl From<&String> for $name {
            fn from(id: &String) -> $name {
                $name(id.clone())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

id_type!(
    /// An artifact: `art_…`.
    ArtifactId,
    "art"
);
id_type!(
    /// An artifact revision: `arev_…`.
    ArtifactRevisionId,
    "arev"
);
id_type!(
    /// A claim: `clm_…`.
    ClaimId,
    "clm"
);
id_type!(
    /// A claim revision: `crev_…`.
    ClaimRevisionId,
    "crev"
);
id_type!(
    /// A relation (an immutable typed edge): `rel_…`.
    RelationId,
    "rel"
);
id_type!(
    /// A conflict case: `ccase_…`.
    CaseId,
    "ccase"
);
id_type!(
    /// An event of the audit log: `evt_…`.
    EventId,
    "evt"
);
id_type!(
    /// A conflict-case event: `cevt_…`.
    CaseEventId,
    "cevt"
);
id_type!(
    /// A revision of either kind, where the wire does not say which (`revision_id` of a
    /// search hit, a manifest item, or an `*.get` input before it is resolved).
    RevisionId,
    "rev"
);
id_type!(
    /// A request: `req_…` when generated. Callers may send any 1..=256-byte string.
    RequestId,
    "req"
);

impl From<ArtifactRevisionId> for RevisionId {
    fn from(id: ArtifactRevisionId) -> RevisionId {
        RevisionId(id.0)
    }
}

impl From<ClaimRevisionId> for RevisionId {
    fn from(id: ClaimRevisionId) -> RevisionId {
        RevisionId(id.0)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn generated_ids_carry_their_prefix_and_a_ulid() {
        let id = ArtifactId::generate();
        assert!(id.starts_with("art_") && id.len() == 30, "{id}");
        assert_ne!(ArtifactId::generate(), id);
        assert!(RequestId::generate().starts_with("req_"));
        assert!(ClaimRevisionId::generate().starts_with("crev_"));
    }

    #[test]
    fn ids_generated_in_one_millisecond_still_sort_in_creation_order() {
        let ids: Vec<ClaimId> = (0..2000).map(|_| ClaimId::generate()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids out of creation order");
        let millis: std::collections::BTreeSet<&str> = ids.iter().map(|id| &id[4..14]).collect();
        assert!(millis.len() < ids.len(), "no two ids shared a millisecond");
    }

    #[test]
    fn ids_are_plain_strings_on_the_wire_and_accept_anything() {
        let id: ClaimId = serde_json::from_value(json!("not even an id")).unwrap();
        assert_eq!(id, "not even an id");
        assert_eq!(serde_json::to_value(&id).unwrap(), json!("not even an id"));
        assert!(serde_json::from_value::<ClaimId>(json!(7)).is_err());
    }
}
