//! Conformance levels. Every case and golden scenario declares one:
//!
//! * `v1` — required by protocol v1. Its `basis` quotes the sentence of
//!   `machine-protocol-v1.txt` (`protocol: …`) or the fact of `reference-facts.md`
//!   (`facts: …`) it rests on. A v1 trial that fails means "this breaks v1".
//! * `v1.7` — what the reference's later, additive growth of the same protocol (v0.7.1)
//!   shows: `memory.retrieve`, `memory.probe`, `citation.get`, recall candidates and the
//!   newly required result fields. Its `basis` quotes `reference-facts-v0.7.md`
//!   (`facts-v0.7: …`) at least once, and may quote the v1 documents too. A v1.7 trial that
//!   fails means "a client written to the v0.7.1 facts breaks here".
//! * `memoree` — Memoree's stricter choice, extension or wording. Its `basis` names the
//!   `spec/v1/DIVERGENCES.md` entry (`divergence: <heading>`) and may quote the documents too.
//!
//! The loader checks the shape; the in-tree lint checks that quotes are real and headings exist.

use serde::Deserialize;

/// What a case or scenario asserts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    V1,
    #[serde(rename = "v1.7")]
    V17,
    Memoree,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::V1 => "v1",
            Level::V17 => "v1.7",
            Level::Memoree => "memoree",
        }
    }
}

/// Which document a basis entry cites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `../shared/spec/machine-protocol-v1.txt`.
    Protocol,
    /// `../shared/spec/reference-facts.md`.
    Facts,
    /// `../shared/spec/reference-facts-v0.7.md`.
    FactsV07,
    /// A `### ` heading of `spec/v1/DIVERGENCES.md`.
    Divergence,
}

/// One parsed basis entry: `protocol: <quote>`, `facts: <quote>` or `divergence: <heading>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Basis {
    pub source: Source,
    pub text: String,
}

impl Basis {
    pub fn parse(entry: &str) -> Result<Basis, String> {
        let (tag, text) = entry.split_once(':').ok_or_else(|| {
            format!("basis {entry:?} must start with `protocol:`, `facts:`, `facts-v0.7:` or `divergence:`")
        })?;
        let source = match tag {
            "protocol" => Source::Protocol,
            "facts" => Source::Facts,
            "facts-v0.7" => Source::FactsV07,
            "divergence" => Source::Divergence,
            other => {
                return Err(format!(
                    "basis source {other:?} is not protocol, facts, facts-v0.7 or divergence"
                ));
            }
        };
        let text = text.trim();
        if text.is_empty() {
            return Err(format!("basis {entry:?} cites nothing"));
        }
        Ok(Basis {
            source,
            text: text.to_owned(),
        })
    }
}

/// Checks a declared level against its basis list and returns the parsed entries.
pub fn check(level: Level, basis: &[String]) -> Result<Vec<Basis>, String> {
    if basis.is_empty() {
        return Err("basis must cite at least one sentence, fact or divergence".to_owned());
    }
    let parsed = basis.iter().map(|b| Basis::parse(b)).collect::<Result<Vec<_>, _>>()?;
    let divergences = parsed.iter().filter(|b| b.source == Source::Divergence).count();
    match level {
        Level::V1 if divergences > 0 => {
            Err("a v1 case rests on the protocol and the facts sheet; it cannot cite a divergence".to_owned())
        }
        Level::V17 if divergences > 0 => {
            Err("a v1.7 case rests on the facts sheets and the protocol; it cannot cite a divergence".to_owned())
        }
        Level::V17 if !parsed.iter().any(|b| b.source == Source::FactsV07) => {
            Err("a v1.7 case must quote reference-facts-v0.7.md (`facts-v0.7: <quote>`)".to_owned())
        }
        Level::Memoree if divergences == 0 => {
            Err("a memoree case must cite the DIVERGENCES.md entry it checks (`divergence: <heading>`)".to_owned())
        }
        _ => Ok(parsed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1_basis_may_not_cite_a_divergence() {
        let basis = vec!["divergence: Validation messages".to_owned()];
        assert!(check(Level::V1, &basis).is_err());
        assert!(check(Level::Memoree, &basis).is_ok());
    }

    #[test]
    fn a_memoree_basis_needs_a_divergence() {
        let basis = vec!["protocol: v is the protocol version".to_owned()];
        assert!(check(Level::Memoree, &basis).is_err());
        assert!(check(Level::V1, &basis).is_ok());
    }

    #[test]
    fn a_v1_7_basis_quotes_the_later_facts_and_no_divergence() {
        let later = "facts-v0.7: `citation.get` needs none and ignores scope".to_owned();
        assert!(check(Level::V17, std::slice::from_ref(&later)).is_ok());
        assert!(check(Level::V17, &["facts: Unix socket".to_owned()]).is_err());
        assert!(check(Level::V17, &[later, "divergence: citation.get".to_owned()]).is_err());
    }

    #[test]
    fn an_untagged_or_empty_basis_is_refused() {
        assert!(check(Level::V1, &[]).is_err());
        assert!(check(Level::V1, &["because".to_owned()]).is_err());
        assert!(check(Level::V1, &["facts:   ".to_owned()]).is_err());
        assert!(check(Level::V1, &["rumour: x".to_owned()]).is_err());
    }
}
