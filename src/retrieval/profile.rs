//! The reference's query description for the v0.7 agent path (`memory.retrieve`): the
//! normalized query, its content units and phrase groups, the fewest matched units that can
//! qualify a hit, and `conservative_query_profile_v1`, a routing profile that never changes
//! scope, qualification or presence. It decides one thing: recovery does not run for a
//! question about the current source (`current_source`), which memory cannot answer
//! authoritatively.

use super::analyze::{Analysis, UnitKind};
use super::plan::{Plan, TextMatch, UnitMatch};
use super::qualify::qualify;
use super::vocabulary::MatchKind;

/// `retrieval_profile.policy_version`.
pub const PROFILE_POLICY: &str = "conservative_query_profile_v1";
/// `retrieval_profile.semantic_role`: a model may add candidates and order them, never qualify.
pub const SEMANTIC_ROLE: &str = "candidate_and_ordering_only";

/// What the question seems to ask about; the first rule that matches wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    HistoricalMemory,
    CurrentSource,
    IdentifierLookup,
    Ambiguous,
}

impl Intent {
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::HistoricalMemory => "historical_memory",
            Intent::CurrentSource => "current_source",
            Intent::IdentifierLookup => "identifier_lookup",
            Intent::Ambiguous => "ambiguous",
        }
    }

    /// Which authority should settle the answer.
    pub fn authority_hint(self) -> &'static str {
        match self {
            Intent::HistoricalMemory => "memory_for_history_repository_for_current_source",
            Intent::CurrentSource => "repository_authoritative",
            Intent::IdentifierLookup => "repository_first_for_live_identifiers",
            Intent::Ambiguous => "compare_memory_with_current_authoritative_source",
        }
    }
}

/// Words of a question about what memory recorded earlier.
const HISTORICAL: &[&str] = &[
    "previous",
    "previously",
    "prior",
    "earlier",
    "history",
    "historical",
    "decided",
    "decision",
    "learned",
    "audit",
    "remember",
];

/// Words and phrases of a question about the live source. Tested against the normalized
/// query, so the ones made of function words ("where is") never match, as in the reference.
const CURRENT: &[&str] = &[
    "current code",
    "current implementation",
    "currently",
    "source code",
    "where is",
    "defined in",
    "this version",
    "after the migration",
    "after migration",
    "right now",
    "latest state",
];

/// The routing profile of one query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryProfile {
    pub normalized_query: String,
    pub content_units: Vec<String>,
    pub phrase_groups: Vec<String>,
    pub dropped_stopwords: Vec<String>,
    pub intent: Intent,
    pub script: &'static str,
    pub identifier_like_units: u64,
}

/// Describes `analysis` the way the reference's schema does (the script is read from the
/// query's words: its units and the function words left out).
pub fn profile(analysis: &Analysis) -> QueryProfile {
    let mut content_units = Vec::new();
    let mut phrase_groups = Vec::new();
    let mut normalized = Vec::new();
    for unit in &analysis.units {
        let folded = unit.words.join(" ");
        if matches!(unit.kind, UnitKind::Phrase | UnitKind::Compound) {
            normalized.push(format!("\"{folded}\""));
            phrase_groups.push(folded);
        } else {
            normalized.push(unit.text.to_lowercase());
            content_units.push(unit.text.to_lowercase());
        }
    }
    let normalized_query = normalized.join(" ");
    let mut dropped_stopwords = analysis.ignored.clone();
    dropped_stopwords.sort();
    dropped_stopwords.dedup();
    let identifier_like_units = normalized_query
        .split_whitespace()
        .filter(|piece| identifier_like(piece))
        .count() as u64;
    QueryProfile {
        intent: intent(&normalized_query, identifier_like_units),
        script: script(&script_text(analysis)),
        normalized_query,
        content_units,
        phrase_groups,
        dropped_stopwords,
        identifier_like_units,
    }
}

fn script_text(analysis: &Analysis) -> String {
    let units = analysis.units.iter().map(|u| u.text.as_str());
    let ignored = analysis.ignored.iter().map(String::as_str);
    units.chain(ignored).collect::<Vec<_>>().join(" ")
}

/// A piece with `_`, `::` or `/`, or mixing digits and letters.
fn identifier_like(piece: &str) -> bool {
    let piece = piece.trim_matches('"');
    piece.contains('_')
        || piece.contains("::")
        || piece.contains('/')
        || (piece.chars().any(|c| c.is_ascii_digit()) && piece.chars().any(char::is_alphabetic))
}

fn intent(normalized: &str, identifiers: u64) -> Intent {
    let words: Vec<&str> = normalized
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .collect();
    let has_phrase = |phrase: &str| {
        let wanted: Vec<&str> = phrase.split(' ').collect();
        words.windows(wanted.len()).any(|window| window == wanted.as_slice())
    };
    if HISTORICAL.iter().any(|w| has_phrase(w)) {
        Intent::HistoricalMemory
    } else if CURRENT.iter().any(|p| has_phrase(p)) {
        Intent::CurrentSource
    } else if identifiers > 0 {
        Intent::IdentifierLookup
    } else {
        Intent::Ambiguous
    }
}

/// The script of the query's letters: one name, `mixed` for several, `unknown` for none.
fn script(query: &str) -> &'static str {
    let mut seen: Option<&'static str> = None;
    for c in query.chars().filter(|c| c.is_alphabetic()) {
        let this = match c as u32 {
            0x0000..=0x024F | 0x1E00..=0x1EFF => "latin",
            0x0400..=0x052F => "cyrillic",
            0x0600..=0x06FF | 0x0750..=0x077F | 0x08A0..=0x08FF => "arabic",
            0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF => "cjk",
            _ => "other",
        };
        match seen {
            None => seen = Some(this),
            Some(previous) if previous != this => return "mixed",
            Some(_) => {}
        }
    }
    seen.unwrap_or("unknown")
}

/// The fewest matched units that qualify a hit under the plan's policy, found by asking
/// [`qualify`] itself about the heaviest units first; the unit count when no subset can.
pub fn required_matches(plan: &Plan) -> u64 {
    let mut order: Vec<usize> = (0..plan.units.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&plan.units[a].weight, &plan.units[b].weight);
        y.distinctive
            .cmp(&x.distinctive)
            .then(y.value.total_cmp(&x.value))
            .then(a.cmp(&b))
    });
    let mut matched = TextMatch {
        units: vec![None; plan.units.len()],
        instances: Vec::new(),
    };
    for (taken, &index) in order.iter().enumerate() {
        matched.units[index] = Some(UnitMatch {
            kind: MatchKind::Exact,
            term: plan.units[index].unit.words.first().cloned().unwrap_or_default(),
        });
        if qualify(&plan.units, &plan.policy, &matched).qualified {
            return taken as u64 + 1;
        }
    }
    plan.units.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieval::analyze;

    fn of(query: &str) -> QueryProfile {
        profile(&analyze(query).unwrap())
    }

    #[test]
    fn the_normalized_query_joins_units_and_quotes_phrases() {
        let p = of("When did Melanie go to the \"pottery class\"?");
        assert_eq!(p.phrase_groups, ["pottery class"]);
        assert!(p.normalized_query.starts_with("\"pottery class\""));
        assert!(p.content_units.contains(&"melanie".to_owned()));
        assert!(p.dropped_stopwords.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(p.script, "latin");
    }

    #[test]
    fn the_first_intent_rule_that_matches_wins() {
        assert_eq!(
            of("what did we decide previously about retention").intent,
            Intent::HistoricalMemory
        );
        assert_eq!(
            of("show the current implementation of the parser").intent,
            Intent::CurrentSource
        );
        assert_eq!(of("where is parse_offset").intent, Intent::IdentifierLookup);
        assert_eq!(of("why is the cache cold").intent, Intent::Ambiguous);
        assert_eq!(of("history of src/lib.rs").intent, Intent::HistoricalMemory);
    }

    #[test]
    fn scripts_are_named_and_mixtures_called_mixed() {
        assert_eq!(script("привет"), "cyrillic");
        assert_eq!(script("hello привет"), "mixed");
        assert_eq!(script("123 ?"), "unknown");
        assert_eq!(script("東京"), "cjk");
    }
}
