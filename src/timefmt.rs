//! Timestamps: one fixed-width UTC text form in SQLite, RFC 3339 with `Z` on the wire.
//!
//! **Invariant:** every timestamp stored in the database uses [`to_db`], a fixed-width form
//! (`YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`), so temporal filters may compare the TEXT values
//! directly.

use chrono::{DateTime, SecondsFormat, Utc};

/// A UTC instant.
pub type Timestamp = DateTime<Utc>;

/// The current instant.
pub fn now() -> Timestamp {
    Utc::now()
}

/// The fixed-width database form.
pub fn to_db(ts: &Timestamp) -> String {
    ts.format("%Y-%m-%dT%H:%M:%S%.9fZ").to_string()
}

/// The wire form: RFC 3339, UTC, `Z`, with the shortest exact fraction (0, 3, 6 or 9 digits).
pub fn to_wire(ts: &Timestamp) -> String {
    ts.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Parses a database timestamp.
pub fn parse_db(text: &str) -> Option<Timestamp> {
    DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&Utc))
}

/// Converts a database timestamp to the wire form (unparseable text passes through).
pub fn db_to_wire(text: &str) -> String {
    parse_db(text).map(|t| to_wire(&t)).unwrap_or_else(|| text.to_owned())
}

/// Parses caller-supplied RFC 3339 and normalizes it to UTC.
pub fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_form_is_fixed_width_and_sorts_chronologically() {
        let a = parse_rfc3339("2030-01-01T00:00:00Z").unwrap();
        let b = parse_rfc3339("2030-01-01T00:00:00.5Z").unwrap();
        assert_eq!(to_db(&a).len(), to_db(&b).len());
        assert!(to_db(&a) < to_db(&b));
    }

    #[test]
    fn wire_form_uses_the_shortest_exact_fraction() {
        let t = parse_rfc3339("2026-12-02T10:32:59.4775874+01:00").unwrap();
        assert_eq!(to_wire(&t), "2026-12-02T09:32:59.477587400Z");
        let whole = parse_rfc3339("2030-01-01T00:00:00+00:00").unwrap();
        assert_eq!(to_wire(&whole), "2030-01-01T00:00:00Z");
        assert_eq!(db_to_wire(&to_db(&t)), to_wire(&t));
    }
}
