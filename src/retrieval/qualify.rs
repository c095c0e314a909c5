//! Qualification: whether a candidate matched enough of the query to count as an answer.
//! Every hit discloses the outcome and the policy (`ranking.qualification`). The service
//! answers with `qualified_units_v2`; `qualified_units_v1` (a unit weighs 2 when distinctive,
//! 0.5 when generic, 1 otherwise; `⌊n/2⌋ + 1` is required), kept for comparison with
//! `memoree eval --qualification v1`, differs in the first two rules below:
//!
//! - A unit weighs what it tells apart in this store: its inverse document frequency
//!   ([`information`], BM25's `ln(1 + (N - df + 0.5) / (df + 0.5))` over the `N` indexed
//!   rows), so `go` or a name on every other row weighs little and `museum`, `pottery` or an
//!   identifier weighs much. A unit absent from the store weighs the most: a question about
//!   someone memory never heard of is not answered by its commonest words. A word on the
//!   generic list weighs half its information; a distinctive unit found in the store (an
//!   identifier, a quoted phrase, a number with a unit) twice it. A unit matched by inflection (an irregular
//!   form included: `went` for `go`) or correction weighs the same.
//! - The requirement is a share of the query's total information, [`REQUIRED_SHARE`], and
//!   a majority of the units (`⌊n/2⌋ + 1`, a distinctive unit counting as two and a word of
//!   the generic list as a half, capped like v1's requirement at what all units count);
//!   a query of stop words only needs all of them.
//! - A question (a question word or a trailing `?`) qualifies a hit only through at least
//!   two matched units or one distinctive unit (an identifier, a quoted phrase, a number
//!   with a unit, a fraction or at least three digits), so a question with a single plain
//!   content word qualifies nothing.
//! - In a query of several units, a single generic unit (on the generic-word list, or found
//!   in at least a fifth of the indexed rows, capped at 2,000 rows and at least 25) never
//!   qualifies a hit on its own (a bare one-word keyword query is what it asks for).
//! - A hit whose matched units were all corrected (fuzzy, prefix or abbreviation) qualifies
//!   only when no qualified hit matched a unit as written or inflected (applied by the
//!   pipeline across hits: [`Qualification::corrected_only`]).
//!
//! The statistics are the [`Vocabulary`](super::Vocabulary) the plan is built against: the
//! caller decides which rows it counts (see `SearchRequest::plan`).

use super::analyze::{Analysis, Unit};
use super::plan::{PlannedUnit, TextMatch};
use super::vocabulary::{Expansion, MatchKind};

/// The qualification policy a store answers with; disclosed with every hit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PolicyVersion {
    /// Every non-generic word weighs 1, identifiers 2, generic words 0.5; a majority of
    /// units is required. Kept for comparison (`memoree eval --qualification v1`).
    V1,
    /// Weights from the store's own statistics; a share of the query's information is
    /// required. What the service answers with.
    #[default]
    V2,
}

impl PolicyVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyVersion::V1 => "qualified_units_v1",
            PolicyVersion::V2 => "qualified_units_v2",
        }
    }
}

/// The default qualification policy's version.
pub const POLICY_VERSION: &str = "qualified_units_v2";

/// The share of the query's total information a hit must match.
pub const REQUIRED_SHARE: f64 = 0.45;

/// How much a unit found in `df` of `rows` indexed rows tells apart (never below a small
/// floor, so a unit on every row still counts for something).
pub fn information(df: u64, rows: u64) -> f64 {
    let n = rows.max(df) as f64;
    let df = df as f64;
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln().max(0.05)
}

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
    /// The weight of `unit`, found in `df` rows (its commonest uncorrected term, or its
    /// best correction's) of `rows`.
    pub fn of(
        version: PolicyVersion,
        unit: &Unit,
        expansion: &Expansion,
        df: u64,
        rows: u64,
        stop_words_only: bool,
    ) -> UnitWeight {
        if stop_words_only {
            return UnitWeight {
                value: 1.0,
                generic: false,
                distinctive: false,
            };
        }
        if version == PolicyVersion::V1 {
            return UnitWeight::v1(unit, expansion, rows);
        }
        let threshold = (rows / GENERIC_FRACTION).clamp(GENERIC_MIN_ROWS, GENERIC_MAX_ROWS);
        let generic = !unit.distinctive && (unit.generic || expansion.df >= threshold);
        // An identifier, quoted phrase or number with a unit names exactly one thing: it
        // counts double, as in v1.
        let information = information(df, rows) * if unit.distinctive && df > 0 { 2.0 } else { 1.0 };
        UnitWeight {
            value: round(if unit.generic { information / 2.0 } else { information }),
            generic,
            distinctive: unit.distinctive,
        }
    }
}

impl UnitWeight {
    fn v1(unit: &Unit, expansion: &Expansion, rows: u64) -> UnitWeight {
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

/// Weights are disclosed with two decimals, and compared as disclosed.
fn round(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

/// The requirement of one query.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub version: PolicyVersion,
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
    pub fn new(version: PolicyVersion, analysis: &Analysis, weights: &[UnitWeight]) -> Policy {
        let total: f64 = weights.iter().map(|w| w.value).sum();
        let required = if analysis.stop_words_only {
            total
        } else {
            match version {
                PolicyVersion::V1 => ((weights.len() / 2 + 1) as f64).min(total),
                PolicyVersion::V2 => round(total * REQUIRED_SHARE),
            }
        };
        let has_distinctive = weights.iter().any(|w| w.distinctive);
        Policy {
            version,
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
    // v2: a majority of the units too, counted as v1 counts them: a distinctive unit as two,
    // a word of the generic list (which names no topic) as a half; like v1's requirement,
    // capped at what all the units count together (a lone generic keyword asks for itself).
    let by_count = policy.version == PolicyVersion::V1 || {
        let count_of = |u: &PlannedUnit| {
            if u.weight.distinctive {
                2.0
            } else if u.unit.generic {
                0.5
            } else {
                1.0
            }
        };
        let counted: f64 = units
            .iter()
            .zip(&matched.units)
            .filter(|(_, found)| found.is_some())
            .map(|(u, _)| count_of(u))
            .sum();
        let countable: f64 = units.iter().map(count_of).sum();
        counted + 1e-9 >= ((units.len() / 2 + 1) as f64).min(countable)
    };
    let enough = count > 0 && matched_weight + 1e-9 >= policy.required && by_count;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieval::text::words;
    use crate::retrieval::{Plan, Vocabulary, analyze};

    /// A store of 400 turns: one speaker's name on half of them, `go` and `went` common,
    /// `museum` and `conference` rare.
    fn store() -> Vocabulary {
        let mut vocabulary = Vocabulary::new();
        for (term, df) in [
            ("melanie", 200),
            ("go", 20),
            ("went", 12),
            ("took", 8),
            ("kids", 30),
            ("museum", 4),
            ("conference", 3),
            ("yesterday", 15),
        ] {
            vocabulary.add_term(term, df);
        }
        vocabulary.add_rows(400);
        vocabulary
    }

    fn judge(version: PolicyVersion, query: &str, text: &str) -> (Plan, Qualification) {
        let plan = Plan::with_policy(version, analyze(query).unwrap(), &store());
        let matched = plan.match_words(&words(text));
        let qualification = qualify(&plan.units, &plan.policy, &matched);
        (plan, qualification)
    }

    fn weights(plan: &Plan) -> Vec<(&str, f64)> {
        plan.units
            .iter()
            .map(|u| (u.unit.text.as_str(), u.weight.value))
            .collect()
    }

    #[test]
    fn information_falls_as_a_unit_is_found_in_more_rows() {
        assert!(information(0, 400) > information(1, 400));
        assert!(information(4, 400) > information(20, 400));
        assert!(information(20, 400) > information(200, 400));
        assert!(information(400, 400) > 0.0, "a unit on every row still counts a little");
    }

    #[test]
    fn v2_weighs_a_name_on_every_other_row_little_and_a_rare_word_much() {
        let (plan, _) = judge(PolicyVersion::V2, "When did Melanie go to the museum?", "");
        let w = weights(&plan);
        assert_eq!(
            w.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
            ["melanie", "go", "museum"]
        );
        assert!(w[0].1 < w[1].1 && w[1].1 < w[2].1, "{w:?}");
        assert_eq!(plan.policy.version, PolicyVersion::V2);
        let total: f64 = w.iter().map(|(_, v)| v).sum();
        assert!((plan.policy.required - round(total * REQUIRED_SHARE)).abs() < 1e-9);
    }

    #[test]
    fn v2_qualifies_the_turn_v1_refused_for_an_unmatched_common_verb() {
        let query = "When did Melanie go to the museum?";
        let turn = "Melanie, session 3: Yesterday I took the kids to the museum";
        let (_, v1) = judge(PolicyVersion::V1, query, turn);
        assert!(!v1.qualified);
        let (_, v2) = judge(PolicyVersion::V2, query, turn);
        assert!(v2.qualified, "{v2:?}");
        // `went` is `go`: the same turn worded with the past tense matches every unit.
        let (plan, went) = judge(PolicyVersion::V2, query, "Melanie: I went to the museum");
        assert!(went.qualified);
        assert!((went.matched_weight - plan.policy.total).abs() < 1e-9);
    }

    #[test]
    fn v2_refuses_a_question_about_people_the_store_never_saw() {
        // `caroline` and `lgbtq` are in no row: they weigh the most, and the store's common
        // `go` and rare `conference` are not enough of the question.
        let (plan, judged) = judge(
            PolicyVersion::V2,
            "When did Caroline go to the LGBTQ conference?",
            "Melanie: we went to a conference",
        );
        let w = weights(&plan);
        assert!(w[0].1 > w[3].1 && w[2].1 > w[3].1, "{w:?}");
        assert!(!judged.qualified);
        assert_eq!(judged.shortfall, Some("too_few_units"));
    }

    #[test]
    fn v1_keeps_its_fixed_weights_and_majority() {
        let (plan, _) = judge(PolicyVersion::V1, "When did Melanie go to the museum?", "");
        assert_eq!(weights(&plan), [("melanie", 0.5), ("go", 1.0), ("museum", 1.0)]);
        assert_eq!(plan.policy.required, 2.0);
        assert_eq!(PolicyVersion::default().as_str(), POLICY_VERSION);
        assert_eq!(PolicyVersion::default(), PolicyVersion::V2);
    }
}
