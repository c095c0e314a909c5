//! Diversity rules: near-duplicate claim statements collapse onto the best-ranked one
//! (never when they differ in a number, an identifier or a negation; contradictions are
//! checked by the caller), and one source artifact fills at most two recall slots while
//! other claims qualify.

use std::collections::BTreeSet;

use super::text::folded_words;

/// Jaccard similarity of word sets at or above which two statements are near-identical.
pub const NEAR_DUPLICATE_SIMILARITY: f64 = 0.85;
/// Recall slots one source artifact may fill while other claims qualify.
pub const MAX_SLOTS_PER_SOURCE: usize = 2;

const NEGATIONS: &[&str] = &[
    "no", "not", "never", "none", "nor", "without", "cannot", "don", "doesn", "didn", "isn", "aren", "wasn", "weren",
    "won", "shouldn", "mustn", "neither", "nothing", "nobody", "disabled", "off",
];

/// The parts of a statement that two duplicates must share exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    words: BTreeSet<String>,
    /// Words containing a digit (numbers, versions, identifiers with digits).
    numbers: BTreeSet<String>,
    negations: BTreeSet<String>,
    /// Tokens joined by `_`, `.`, `-` or `:` inside one whitespace-separated chunk.
    identifiers: BTreeSet<String>,
}

impl Fingerprint {
    pub fn of(statement: &str) -> Fingerprint {
        let words: BTreeSet<String> = folded_words(statement).into_iter().collect();
        let numbers = words
            .iter()
            .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
            .cloned()
            .collect();
        let negations = words
            .iter()
            .filter(|w| NEGATIONS.contains(&w.as_str()))
            .cloned()
            .collect();
        let identifiers = statement
            .split_whitespace()
            .map(|chunk| chunk.trim_matches(|c: char| !c.is_alphanumeric()))
            .filter(|chunk| chunk.contains(['_', '.', '-', ':']) && chunk.chars().any(char::is_alphanumeric))
            .map(str::to_lowercase)
            .collect();
        Fingerprint {
            words,
            numbers,
            negations,
            identifiers,
        }
    }

    /// Identical or near-identical, with equal numbers, identifiers and negations.
    pub fn is_near_duplicate(&self, other: &Fingerprint) -> bool {
        if self.numbers != other.numbers || self.negations != other.negations || self.identifiers != other.identifiers {
            return false;
        }
        let shared = self.words.intersection(&other.words).count();
        let union = self.words.union(&other.words).count();
        union > 0 && shared as f64 / union as f64 >= NEAR_DUPLICATE_SIMILARITY
    }
}

/// Recall slot order: items in rank order, except that an item whose source already has
/// [`MAX_SLOTS_PER_SOURCE`] earlier items waits until every other item is placed. Returns
/// the indexes in slot order.
pub fn slot_order(sources: &[Option<String>]) -> Vec<usize> {
    let mut taken: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut first = Vec::with_capacity(sources.len());
    let mut later = Vec::new();
    for (index, source) in sources.iter().enumerate() {
        match source {
            Some(source) => {
                let count = taken.entry(source.as_str()).or_default();
                if *count < MAX_SLOTS_PER_SOURCE {
                    *count += 1;
                    first.push(index);
                } else {
                    later.push(index);
                }
            }
            None => first.push(index),
        }
    }
    first.extend(later);
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dup(a: &str, b: &str) -> bool {
        Fingerprint::of(a).is_near_duplicate(&Fingerprint::of(b))
    }

    #[test]
    fn identical_and_near_identical_statements_are_duplicates() {
        assert!(dup(
            "The cache is disabled since v0.14.2",
            "The cache is disabled since v0.14.2."
        ));
        assert!(dup(
            "Raw events are retained for thirty days in the primary cluster storage tier",
            "Raw events are retained for thirty days in the primary cluster storage tier today"
        ));
    }

    #[test]
    fn a_different_number_identifier_or_negation_is_never_a_duplicate() {
        assert!(!dup(
            "Raw events are retained for 30 days",
            "Raw events are retained for 90 days"
        ));
        assert!(!dup(
            "Set max_batch to the default value now",
            "Set max_items to the default value now"
        ));
        assert!(!dup(
            "The cache is enabled in production",
            "The cache is not enabled in production"
        ));
        assert!(!dup("Deploys run on Fridays", "Backups run on Sundays"));
    }

    #[test]
    fn one_source_fills_at_most_two_slots_while_others_wait() {
        let s = |x: &str| Some(x.to_owned());
        let order = slot_order(&[s("a"), s("a"), s("a"), s("b"), None, s("a")]);
        assert_eq!(order, [0, 1, 3, 4, 2, 5]);
    }
}
