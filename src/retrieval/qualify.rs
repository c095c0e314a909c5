//! Qualification (`qualified_units_v1`): whether a candidate matched enough of the query to
//! count as an answer. Every hit discloses the outcome (`ranking.qualification`).
//!
//! - A unit weighs 2 when it is distinctive (an identifier, a quoted phrase, a number with a
//!   unit, a fraction or at least three digits), 0.5 when it is generic (on the generic-word
//!   list, or found in at least an eighth of the indexed rows, capped at 2,000 rows and at
//!   least 25), and 1 otherwise. A unit matched by inflection or correction weighs the same.
//! - The requirement grows with the number of units `n`: `⌊n/2⌋ + 1` (1, 2, 2, 3, 3, 4, …),
//!   capped at the total weight of all units; a query of stop words only needs all of them.
//! - A question (a question word or a trailing `?`) qualifies a hit only through at least
//!   two matched units or one distinctive unit, so a question with a single plain content
//!   word qualifies nothing.
//! - In a query of several units, a single generic unit never qualifies a hit on its own
//!   (a bare one-word keyword query is what it asks for).
//! - A hit whose matched units were all corrected (fuzzy, prefix or abbreviation) qualifies
//!   only when no qualified hit matched a unit as written or inflected (applied by the
//!   pipeline across hits: [`Qualification::corrected_only`]).

use super::analyze::{Analysis, Unit};
use super::plan::{PlannedUnit, TextMatch};
use super::vocabulary::{Expansion, MatchKind};

/// The qualification policy's version, disclosed with every hit.
pub const POLICY_VERSION: &str = "qualified_units_v1";

/// Generic from frequency: found in at least `rows / GENERIC_FRACTION` rows ...
const GENERIC_FRACTION: u64 = 5;
/// ... and never fewer than this many rows (in a small store frequency says little) ...
const GENERIC_MIN_ROWS: u64 = 25;
/// ... nor more than this many.
const GENERIC_MAX_ROWS: u64 = 2000;

/// How much one unit counts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnitWeight {
    pub value: f64,
    pub generic: bool,
    pub distinctive: bool,
}

impl UnitWeight {
    pub fn of(unit: &Unit, expansion: &Expansion, rows: u64, stop_words_only: bool) -> UnitWeight {
        if stop_words_only {
            return UnitWeight {
                value: 1.0,
                generic: false,
                distinctive: false,
            };
        }
        if unit.distinctive {
            return UnitWeight {
                value: 2.0,
                generic: false,
                distinctive: true,
            };
        }
        let threshold = (rows / GENERIC_FRACTION).clamp(GENERIC_MIN_ROWS, GENERIC_MAX_ROWS);
        let generic = unit.generic || expansion.df >= threshold;
        UnitWeight {
            value: if generic { 0.5 } else { 1.0 },
            generic,
            distinctive: false,
        }
    }
}

/// The requirement of one query.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub required: f64,
    pub total: f64,
    pub question: bool,
    pub stop_words_only: bool,
    /// A question: two matched units, or one distinctive unit, are needed.
    pub two_units_needed: bool,
    /// A question with one plain content unit: nothing can qualify.
    pub single_unit_question: bool,
}

impl Policy {
    pub fn new(analysis: &Analysis, weights: &[UnitWeight]) -> Policy {
        let total: f64 = weights.iter().map(|w| w.value).sum();
        let by_count = (weights.len() / 2 + 1) as f64;
        let required = if analysis.stop_words_only {
            total
        } else {
            by_count.min(total)
        };
        let has_distinctive = weights.iter().any(|w| w.distinctive);
        Policy {
            required,
            total,
            question: analysis.question,
            stop_words_only: analysis.stop_words_only,
            two_units_needed: analysis.question && !analysis.stop_words_only,
            single_unit_question: analysis.question && weights.len() < 2 && !has_distinctive,
        }
    }

    /// Whether any text could qualify at all.
    pub fn can_qualify(&self) -> bool {
        self.total > 0.0 && self.total + 1e-9 >= self.required && !self.single_unit_question
    }
}

/// The outcome for one candidate.
#[derive(Clone, Debug, PartialEq)]
pub struct Qualification {
    pub qualified: bool,
    pub matched_weight: f64,
    /// Weight matched as written or inflected.
    pub uncorrected_weight: f64,
    /// Every matched unit was corrected.
    pub corrected_only: bool,
    /// Why an unqualified candidate fell short.
    pub shortfall: Option<&'static str>,
}

/// Judges one candidate's matches under `policy`.
pub fn qualify(units: &[PlannedUnit], policy: &Policy, matched: &TextMatch) -> Qualification {
    let mut matched_weight = 0.0;
    let mut uncorrected_weight = 0.0;
    let mut count = 0;
    let mut generic_count = 0;
    let mut corrected_count = 0;
    let mut distinctive = false;
    for (unit, found) in units.iter().zip(&matched.units) {
        let Some(found) = found else { continue };
        count += 1;
        distinctive |= unit.weight.distinctive;
        matched_weight += unit.weight.value;
        if found.kind.is_correction() {
            corrected_count += 1;
        } else {
            uncorrected_weight += unit.weight.value;
        }
        if unit.weight.generic {
            generic_count += 1;
        }
    }
    let enough = count > 0 && matched_weight + 1e-9 >= policy.required;
    let lone_generic = count == 1 && generic_count == 1 && units.len() > 1 && !policy.stop_words_only;
    let thin_question = policy.two_units_needed && count < 2 && !distinctive;
    let shortfall = if count == 0 {
        Some("no_unit_matched")
    } else if lone_generic {
        Some("generic_unit_alone")
    } else if thin_question || policy.single_unit_question || !enough {
        Some("too_few_units")
    } else {
        None
    };
    Qualification {
        qualified: shortfall.is_none(),
        matched_weight,
        uncorrected_weight,
        corrected_only: count > 0 && corrected_count == count,
        shortfall,
    }
}

/// The disclosed form of one matched unit.
pub fn describe_match(kind: MatchKind) -> &'static str {
    kind.as_str()
}
