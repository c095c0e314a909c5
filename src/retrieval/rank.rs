//! The `bounded_recency_v1` policy as pure functions: decay classes, the freshness
//! bonus and the bounded rerank of a lexical top-K list. Nothing here reads a clock;
//! the caller passes ages measured from one evaluation instant.

/// The `ranking.policy_version` value.
pub const POLICY_VERSION: &str = "bounded_recency_v1";
/// How many positions an item may rise above its lexical position.
pub const MAX_PROMOTION: usize = 2;
/// The `matched_by` tag of the lexical matcher.
pub const LEXICAL_MATCHER: &str = "fts5_bm25";
/// `retrieval_mode` when recency is enabled.
pub const RETRIEVAL_MODE_WITH_RECENCY: &str = "sqlite_fts5_bm25+bounded_recency_v1";
/// `retrieval_mode` when recency is disabled.
pub const RETRIEVAL_MODE_LEXICAL: &str = "sqlite_fts5_bm25";

const SECONDS_PER_DAY: f64 = 86_400.0;

/// The `retrieval_mode` string for a search.
pub fn retrieval_mode(recency_enabled: bool) -> &'static str {
    if recency_enabled {
        RETRIEVAL_MODE_WITH_RECENCY
    } else {
        RETRIEVAL_MODE_LEXICAL
    }
}

/// The `matched_by` list of every hit of a search, eligible for a bonus or not.
pub fn matched_by(recency_enabled: bool) -> Vec<&'static str> {
    if recency_enabled {
        vec![LEXICAL_MATCHER, POLICY_VERSION]
    } else {
        vec![LEXICAL_MATCHER]
    }
}

/// How fast an item's freshness bonus decays, chosen by claim type or artifact kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DecayClass {
    Ephemeral,
    Decision,
    Constraint,
    Procedure,
    Observation,
    Preference,
    General,
}

impl DecayClass {
    /// The `ranking.decay_class` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DecayClass::Ephemeral => "ephemeral",
            DecayClass::Decision => "decision",
            DecayClass::Constraint => "constraint",
            DecayClass::Procedure => "procedure",
            DecayClass::Observation => "observation",
            DecayClass::Preference => "preference",
            DecayClass::General => "general",
        }
    }

    /// The age at which the bonus has halved.
    pub fn half_life_days(self) -> f64 {
        match self {
            DecayClass::Ephemeral | DecayClass::Observation => 30.0,
            DecayClass::Decision => 730.0,
            DecayClass::Constraint => 3650.0,
            DecayClass::Procedure => 365.0,
            DecayClass::Preference | DecayClass::General => 180.0,
        }
    }

    /// The bonus of a brand-new item, as a fraction of its lexical score.
    pub fn max_bonus_ratio(self) -> f64 {
        match self {
            DecayClass::Ephemeral | DecayClass::Observation => 0.10,
            DecayClass::Decision => 0.025,
            DecayClass::Constraint => 0.01,
            DecayClass::Procedure => 0.04,
            DecayClass::Preference => 0.06,
            DecayClass::General => 0.05,
        }
    }
}

/// The decay class of a claim type; `fact` and anything unknown are `general`.
pub fn decay_class_for_claim(claim_type: &str) -> DecayClass {
    match claim_type {
        "decision" => DecayClass::Decision,
        "constraint" => DecayClass::Constraint,
        "procedure" => DecayClass::Procedure,
        "observation" => DecayClass::Observation,
        "preference" => DecayClass::Preference,
        _ => DecayClass::General,
    }
}

/// Substrings of a lowercased artifact kind, checked in this order; the first hit wins.
const ARTIFACT_KIND_CLASSES: [(&str, DecayClass); 11] = [
    ("log", DecayClass::Ephemeral),
    ("session", DecayClass::Ephemeral),
    ("trace", DecayClass::Ephemeral),
    ("observation", DecayClass::Ephemeral),
    ("decision", DecayClass::Decision),
    ("adr", DecayClass::Decision),
    ("constraint", DecayClass::Constraint),
    ("policy", DecayClass::Constraint),
    ("spec", DecayClass::Constraint),
    ("procedure", DecayClass::Procedure),
    ("runbook", DecayClass::Procedure),
];

/// The decay class of an artifact kind, by lowercased substring match. Substrings are
/// matched anywhere, so `catalog` is `ephemeral` (it contains `log`).
pub fn decay_class_for_artifact(kind: &str) -> DecayClass {
    let kind = kind.to_lowercase();
    ARTIFACT_KIND_CLASSES
        .iter()
        .find(|(needle, _)| kind.contains(needle))
        .map_or(DecayClass::General, |&(_, class)| class)
}

/// Which timestamp an item's age is measured from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EffectiveBasis {
    /// The revision's creation time: artifacts, and claims without `valid_from`.
    RevisionCreatedAt,
    /// A claim's `valid_from`.
    ValidFrom,
}

impl EffectiveBasis {
    /// The `ranking.effective_at_basis` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EffectiveBasis::RevisionCreatedAt => "revision_created_at",
            EffectiveBasis::ValidFrom => "valid_from",
        }
    }
}

/// The lexical score of an FTS5 `bm25()` value: its negation, floored at 0. A
/// non-finite value scores 0.
pub fn lexical_score_from_bm25(bm25: f64) -> f64 {
    if bm25.is_finite() { (-bm25).max(0.0) } else { 0.0 }
}

/// The freshness bonus of an eligible item: `score × ratio × 2^(−age_days / half_life)`.
/// A negative age (an item from the future) counts as age 0; callers must not mark such
/// items eligible in the first place.
pub fn recency_bonus(lexical_score: f64, class: DecayClass, age_seconds: i64) -> f64 {
    let age_days = age_seconds.max(0) as f64 / SECONDS_PER_DAY;
    lexical_score * class.max_bonus_ratio() * (-age_days / class.half_life_days()).exp2()
}

/// One candidate of the lexical top-K, as the reranker sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankInput {
    pub lexical_score: f64,
    /// Current, non-terminal, and not effective in the future.
    pub eligible: bool,
    /// Whole seconds from the effective timestamp to the evaluation instant.
    pub effective_age_seconds: i64,
    pub class: DecayClass,
}

/// Where one candidate ends up. `final_position` is 0-based; the wire is 1-based.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankedPosition {
    pub bonus: f64,
    pub score: f64,
    pub final_position: usize,
}

/// Reranks a lexical top-K list (already cut to `limit`, best first).
///
/// The result is aligned with `candidates`. Eligible items get a bonus when `enabled`;
/// each item is then appended in lexical order and bubbled upward while its score is
/// strictly greater than the one above and it has risen fewer than [`MAX_PROMOTION`]
/// places. Membership never changes; with `enabled == false` the order is lexical.
pub fn rerank(candidates: &[RankInput], enabled: bool) -> Vec<RankedPosition> {
    let scored: Vec<(f64, f64)> = candidates
        .iter()
        .map(|candidate| {
            let bonus = if enabled && candidate.eligible {
                recency_bonus(
                    candidate.lexical_score,
                    candidate.class,
                    candidate.effective_age_seconds,
                )
            } else {
                0.0
            };
            (bonus, candidate.lexical_score + bonus)
        })
        .collect();

    let mut order: Vec<usize> = Vec::with_capacity(candidates.len());
    for lexical_index in 0..candidates.len() {
        order.push(lexical_index);
        if !enabled {
            continue;
        }
        let floor = lexical_index.saturating_sub(MAX_PROMOTION);
        let mut index = lexical_index;
        while index > floor && scored[order[index]].1 > scored[order[index - 1]].1 {
            order.swap(index, index - 1);
            index -= 1;
        }
    }

    let mut ranked: Vec<RankedPosition> = scored
        .iter()
        .map(|&(bonus, score)| RankedPosition {
            bonus,
            score,
            final_position: 0,
        })
        .collect();
    for (final_position, &lexical_index) in order.iter().enumerate() {
        ranked[lexical_index].final_position = final_position;
    }
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const DAY: i64 = 86_400;

    fn candidate(lexical_score: f64, eligible: bool, age_days: i64) -> RankInput {
        RankInput {
            lexical_score,
            eligible,
            effective_age_seconds: age_days * DAY,
            class: DecayClass::Ephemeral,
        }
    }

    fn positions(ranked: &[RankedPosition]) -> Vec<usize> {
        ranked.iter().map(|r| r.final_position).collect()
    }

    #[test]
    fn the_decay_table_matches_the_policy() {
        let table = [
            (DecayClass::Ephemeral, "ephemeral", 30.0, 0.10),
            (DecayClass::Decision, "decision", 730.0, 0.025),
            (DecayClass::Constraint, "constraint", 3650.0, 0.01),
            (DecayClass::Procedure, "procedure", 365.0, 0.04),
            (DecayClass::Observation, "observation", 30.0, 0.10),
            (DecayClass::Preference, "preference", 180.0, 0.06),
            (DecayClass::General, "general", 180.0, 0.05),
        ];
        for (class, name, half_life, ratio) in table {
            assert_eq!(class.as_str(), name);
            assert_eq!(class.half_life_days(), half_life);
            assert_eq!(class.max_bonus_ratio(), ratio);
        }
    }

    #[test]
    fn claim_types_map_to_their_own_class_and_facts_are_general() {
        assert_eq!(decay_class_for_claim("decision"), DecayClass::Decision);
        assert_eq!(decay_class_for_claim("constraint"), DecayClass::Constraint);
        assert_eq!(decay_class_for_claim("procedure"), DecayClass::Procedure);
        assert_eq!(decay_class_for_claim("observation"), DecayClass::Observation);
        assert_eq!(decay_class_for_claim("preference"), DecayClass::Preference);
        assert_eq!(decay_class_for_claim("fact"), DecayClass::General);
        assert_eq!(decay_class_for_claim("anything else"), DecayClass::General);
    }

    #[test]
    fn artifact_kinds_match_by_lowercased_substring_in_table_order() {
        let cases = [
            ("session-log", DecayClass::Ephemeral),
            ("catalog", DecayClass::Ephemeral),
            ("TRACE", DecayClass::Ephemeral),
            ("field observation", DecayClass::Ephemeral),
            ("decision-log", DecayClass::Ephemeral),
            ("Decision", DecayClass::Decision),
            ("ADR", DecayClass::Decision),
            ("roadrunner", DecayClass::Decision),
            ("constraint", DecayClass::Constraint),
            ("security-policy", DecayClass::Constraint),
            ("inspection", DecayClass::Constraint),
            ("procedure", DecayClass::Procedure),
            ("RunBook", DecayClass::Procedure),
            ("note", DecayClass::General),
            ("", DecayClass::General),
        ];
        for (kind, class) in cases {
            assert_eq!(decay_class_for_artifact(kind), class, "{kind}");
        }
    }

    #[test]
    fn effective_basis_spellings_follow_the_wire() {
        assert_eq!(EffectiveBasis::RevisionCreatedAt.as_str(), "revision_created_at");
        assert_eq!(EffectiveBasis::ValidFrom.as_str(), "valid_from");
    }

    #[test]
    fn lexical_score_negates_bm25_and_floors_at_zero() {
        assert_eq!(lexical_score_from_bm25(-2.5), 2.5);
        assert_eq!(lexical_score_from_bm25(0.0), 0.0);
        assert_eq!(lexical_score_from_bm25(1.0), 0.0);
        assert_eq!(lexical_score_from_bm25(f64::NAN), 0.0);
        assert_eq!(lexical_score_from_bm25(f64::NEG_INFINITY), 0.0);
        assert_eq!(lexical_score_from_bm25(f64::INFINITY), 0.0);
    }

    #[test]
    fn the_bonus_halves_every_half_life_and_ignores_future_ages() {
        let fresh = recency_bonus(1.0, DecayClass::General, 0);
        assert_eq!(fresh, 0.05);
        let aged = recency_bonus(1.0, DecayClass::General, 180 * DAY);
        assert!((aged - 0.025).abs() < 1e-12);
        assert_eq!(recency_bonus(1.0, DecayClass::General, -DAY), fresh);
        assert_eq!(recency_bonus(0.0, DecayClass::Ephemeral, 0), 0.0);
    }

    #[test]
    fn search_labels_depend_on_whether_recency_is_enabled() {
        assert_eq!(retrieval_mode(true), "sqlite_fts5_bm25+bounded_recency_v1");
        assert_eq!(retrieval_mode(false), "sqlite_fts5_bm25");
        assert_eq!(matched_by(true), ["fts5_bm25", "bounded_recency_v1"]);
        assert_eq!(matched_by(false), ["fts5_bm25"]);
    }

    #[test]
    fn a_fresh_item_rises_past_a_slightly_better_stale_one() {
        let ranked = rerank(&[candidate(1.0, true, 3650), candidate(0.99, true, 0)], true);
        assert_eq!(positions(&ranked), [1, 0]);
        assert!((ranked[1].score - 0.99 * 1.1).abs() < 1e-12);
    }

    #[test]
    fn an_item_rises_at_most_two_places() {
        let mut list = vec![candidate(1.0, false, 0); 3];
        list.push(candidate(0.99, true, 0));
        let ranked = rerank(&list, true);
        assert_eq!(positions(&ranked), [0, 2, 3, 1]);
    }

    #[test]
    fn equal_scores_never_swap() {
        let ranked = rerank(&[candidate(1.0, false, 0), candidate(1.0, false, 0)], true);
        assert_eq!(positions(&ranked), [0, 1]);
    }

    #[test]
    fn disabled_recency_keeps_lexical_order_and_gives_no_bonus() {
        let ranked = rerank(&[candidate(1.0, true, 3650), candidate(0.99, true, 0)], false);
        assert_eq!(positions(&ranked), [0, 1]);
        assert!(ranked.iter().all(|r| r.bonus == 0.0));
        assert_eq!(ranked[1].score, 0.99);
    }

    #[test]
    fn an_empty_list_reranks_to_an_empty_list() {
        assert!(rerank(&[], true).is_empty());
    }

    fn class_strategy() -> impl Strategy<Value = DecayClass> {
        prop_oneof![
            Just(DecayClass::Ephemeral),
            Just(DecayClass::Decision),
            Just(DecayClass::Constraint),
            Just(DecayClass::Procedure),
            Just(DecayClass::Observation),
            Just(DecayClass::Preference),
            Just(DecayClass::General),
        ]
    }

    /// Lists sorted by descending lexical score, as the search hands them over.
    fn lexical_list() -> impl Strategy<Value = Vec<RankInput>> {
        prop::collection::vec((0.0f64..10.0, any::<bool>(), -DAY..4000 * DAY, class_strategy()), 0..30).prop_map(
            |mut raw| {
                raw.sort_by(|a, b| b.0.total_cmp(&a.0));
                raw.into_iter()
                    .map(|(lexical_score, eligible, effective_age_seconds, class)| RankInput {
                        lexical_score,
                        eligible,
                        effective_age_seconds,
                        class,
                    })
                    .collect()
            },
        )
    }

    proptest! {
        #[test]
        fn final_positions_are_a_permutation(list in lexical_list(), enabled in any::<bool>()) {
            let mut seen = positions(&rerank(&list, enabled));
            seen.sort_unstable();
            prop_assert_eq!(seen, (0..list.len()).collect::<Vec<_>>());
        }

        #[test]
        fn no_item_rises_more_than_two_places(list in lexical_list()) {
            for (lexical, ranked) in rerank(&list, true).iter().enumerate() {
                prop_assert!(ranked.final_position + MAX_PROMOTION >= lexical);
            }
        }

        #[test]
        fn ineligible_items_get_no_bonus(list in lexical_list(), enabled in any::<bool>()) {
            for (input, ranked) in list.iter().zip(rerank(&list, enabled)) {
                if !input.eligible {
                    prop_assert_eq!(ranked.bonus, 0.0);
                    prop_assert_eq!(ranked.score, input.lexical_score);
                }
                prop_assert!(ranked.bonus >= 0.0);
                prop_assert!(ranked.bonus <= input.lexical_score * input.class.max_bonus_ratio());
            }
        }

        #[test]
        fn ineligible_items_never_rise(list in lexical_list()) {
            for (lexical, (input, ranked)) in list.iter().zip(rerank(&list, true)).enumerate() {
                if !input.eligible {
                    prop_assert!(ranked.final_position >= lexical);
                }
            }
        }

        #[test]
        fn an_item_passes_another_only_with_a_strictly_greater_score(list in lexical_list()) {
            let ranked = rerank(&list, true);
            for later in 0..ranked.len() {
                for earlier in 0..later {
                    if ranked[later].final_position < ranked[earlier].final_position {
                        prop_assert!(ranked[later].score > ranked[earlier].score);
                    }
                }
            }
        }

        #[test]
        fn disabled_recency_is_the_identity(list in lexical_list()) {
            let ranked = rerank(&list, false);
            prop_assert_eq!(positions(&ranked), (0..list.len()).collect::<Vec<_>>());
            prop_assert!(ranked.iter().all(|r| r.bonus == 0.0));
        }
    }
}
