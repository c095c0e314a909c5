use proptest::prelude::*;

use super::*;

fn claim(claim_type: ClaimType, statement: &str, quotes: &[&str]) -> ProposedClaim {
    ProposedClaim {
        claim_type,
        statement: statement.to_owned(),
        evidence_quotes: quotes.iter().map(|q| (*q).to_owned()).collect(),
    }
}

fn proposal(claims: Vec<ProposedClaim>) -> Proposal {
    Proposal { claims }
}

#[test]
fn a_unique_quote_becomes_an_exact_byte_span() {
    let source = "We chose SQLite. Café hours: 9–5.";
    let plan = compile_plan(
        source,
        &proposal(vec![claim(
            ClaimType::Fact,
            "  Café  hours are\n9–5 ",
            &["9–5", "Café hours"],
        )]),
    )
    .unwrap();
    assert!(plan.rejected.is_empty());
    let accepted = &plan.accepted[0];
    assert_eq!(accepted.statement, "Café hours are 9–5");
    let spans: Vec<_> = accepted.evidence.iter().map(|s| (s.start, s.end)).collect();
    assert_eq!(spans, vec![(17, 28), (30, 35)]);
    for span in &accepted.evidence {
        assert_eq!(&source[span.start..span.end], span.quote);
    }
}

#[test]
fn overlapping_repeats_make_a_quote_ambiguous() {
    assert_eq!(locate_unique("aaa", "aa"), Err(QuoteRejection::Ambiguous));
    assert_eq!(locate_unique("éé", "é"), Err(QuoteRejection::Ambiguous));
    assert_eq!(locate_unique("aba", "ab"), Ok(0));
    assert_eq!(locate_unique("abc", "x"), Err(QuoteRejection::Missing));
    assert_eq!(locate_unique("ab", "abc"), Err(QuoteRejection::OutOfBounds));
}

#[test]
fn a_bad_quote_rejects_only_its_own_claim() {
    let source = "use tabs. use tabs. ship on friday.";
    let plan = compile_plan(
        source,
        &proposal(vec![
            claim(ClaimType::Preference, "Use tabs", &["use tabs"]),
            claim(ClaimType::Decision, "Ship on Friday", &["ship on friday", "monday"]),
            claim(ClaimType::Fact, "Friday shipping", &["ship on friday"]),
        ]),
    )
    .unwrap();
    let rejected: Vec<_> = plan
        .rejected
        .iter()
        .map(|r| (r.proposal_index, r.failures.clone()))
        .collect();
    assert_eq!(
        rejected,
        vec![
            (1, vec![(1, QuoteRejection::Ambiguous)]),
            (2, vec![(2, QuoteRejection::Missing)])
        ]
    );
    assert_eq!(plan.accepted.len(), 1);
    assert_eq!(plan.accepted[0].proposal_index, 3);
}

#[test]
fn structural_violations_fail_the_whole_proposal() {
    let source = "alpha beta gamma";
    let ok = || claim(ClaimType::Fact, "Alpha", &["alpha"]);
    let cases: Vec<(Vec<ProposedClaim>, &str)> = vec![
        (vec![ok(); 13], "13 claims"),
        (vec![claim(ClaimType::Fact, " \n\t", &["alpha"])], "empty statement"),
        (vec![claim(ClaimType::Fact, "A", &[])], "0 evidence quotes"),
        (
            vec![claim(ClaimType::Fact, "A", &["a", "b", "c", "d", "e"])],
            "5 evidence quotes",
        ),
        (vec![claim(ClaimType::Fact, "A", &[""])], "quote 1 is empty"),
        (
            vec![ok(), claim(ClaimType::Decision, "  ALPHA ", &["beta"])],
            "claim 2 repeats the statement of claim 1",
        ),
        (
            vec![claim(ClaimType::Fact, "A", &["beta", "beta"])],
            "repeats evidence span 6-10",
        ),
    ];
    for (claims, expected) in cases {
        let error = compile_plan(source, &proposal(claims)).unwrap_err();
        assert!(error.0.contains(expected), "{error} does not mention {expected}");
    }
    let long_quote = "x".repeat(MAX_QUOTE_BYTES + 1);
    let error = compile_plan(source, &proposal(vec![claim(ClaimType::Fact, "A", &[&long_quote])])).unwrap_err();
    assert!(error.0.contains("exceeds"));
}

#[test]
fn the_same_span_may_support_different_claims() {
    let plan = compile_plan(
        "deploys need two approvals",
        &proposal(vec![
            claim(ClaimType::Constraint, "Deploys need approvals", &["two approvals"]),
            claim(
                ClaimType::Procedure,
                "Get two approvals before deploying",
                &["two approvals"],
            ),
        ]),
    )
    .unwrap();
    assert_eq!(plan.accepted.len(), 2);
}

#[test]
fn parsing_rejects_unknown_fields_and_missing_fields() {
    let unknown = br#"{"claims":[{"claim_type":"fact","statement":"s","evidence_quotes":["s"],"confidence":1}]}"#;
    assert!(Proposal::parse(unknown).unwrap_err().0.contains("unknown field"));
    assert!(Proposal::parse(br#"{"claims":[],"scope":"x"}"#).is_err());
    assert!(Proposal::parse(br#"{}"#).is_err());
    assert!(
        Proposal::parse(br#"{"claims":[{"claim_type":"rumor","statement":"s","evidence_quotes":["s"]}]}"#).is_err()
    );
    assert!(Proposal::parse(b"not json").is_err());
    assert_eq!(Proposal::parse(b" {\"claims\":[]}\n").unwrap(), proposal(vec![]));
}

#[test]
fn the_schema_is_strict_at_every_object() {
    let schema = proposal_schema();
    assert_eq!(schema["additionalProperties"], false);
    let item = &schema["properties"]["claims"]["items"];
    assert_eq!(item["additionalProperties"], false);
    assert_eq!(
        item["required"].as_array().unwrap().len(),
        item["properties"].as_object().unwrap().len()
    );
    assert_eq!(item["properties"]["claim_type"]["enum"].as_array().unwrap().len(), 6);
    assert!(proposal_schema_text().contains("\n  \"additionalProperties\": false"));
}

/// Sources mix ASCII with multi-byte characters so char boundaries matter.
fn source_strategy() -> impl Strategy<Value = String> {
    proptest::collection::vec(prop_oneof!["[ab ]", "[é–😀]"], 0..40).prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn accepted_spans_round_trip_on_char_boundaries(
        source in source_strategy(),
        a in 0usize..40,
        b in 0usize..40,
    ) {
        let chars: Vec<(usize, char)> = source.char_indices().collect();
        prop_assume!(!chars.is_empty());
        let (a, b) = (a % chars.len(), b % chars.len());
        let (lo, hi) = (a.min(b), a.max(b));
        let start = chars[lo].0;
        let end = chars[hi].0 + chars[hi].1.len_utf8();
        let quote = &source[start..end];
        let plan = compile_plan(&source, &proposal(vec![claim(ClaimType::Fact, "s", &[quote])])).unwrap();
        for claim in &plan.accepted {
            for span in &claim.evidence {
                prop_assert!(source.is_char_boundary(span.start) && source.is_char_boundary(span.end));
                prop_assert_eq!(&source[span.start..span.end], span.quote.as_str());
            }
        }
        let occurrences = (0..source.len())
            .filter(|&i| source.is_char_boundary(i) && source[i..].starts_with(quote))
            .count();
        prop_assert_eq!(plan.accepted.len() == 1, occurrences == 1);
    }

    #[test]
    fn a_quote_that_occurs_twice_is_never_accepted(
        prefix in source_strategy(),
        middle in source_strategy(),
        suffix in source_strategy(),
        quote in "[ab😀]{1,6}",
    ) {
        let source = format!("{prefix}{quote}{middle}{quote}{suffix}");
        let plan = compile_plan(&source, &proposal(vec![claim(ClaimType::Fact, "s", &[&quote])])).unwrap();
        prop_assert!(plan.accepted.is_empty());
        prop_assert_eq!(&plan.rejected[0].failures, &vec![(1, QuoteRejection::Ambiguous)]);
    }
}

proptest! {
    #[test]
    fn a_quote_with_overlapping_occurrences_is_never_accepted(
        prefix in source_strategy(),
        suffix in source_strategy(),
        unit in "[ab😀é]{1,3}",
        repeats in 1usize..4,
    ) {
        // `unit × (repeats + 1)` occurs at offset 0 and again one unit later inside
        // `unit × (repeats + 2)`: the two occurrences overlap.
        let quote = unit.repeat(repeats + 1);
        let source = format!("{prefix}{}{suffix}", unit.repeat(repeats + 2));
        let plan = compile_plan(&source, &proposal(vec![claim(ClaimType::Fact, "s", &[&quote])])).unwrap();
        prop_assert!(plan.accepted.is_empty());
        prop_assert_eq!(&plan.rejected[0].failures, &vec![(1, QuoteRejection::Ambiguous)]);
    }

    #[test]
    fn every_accepted_quote_occurs_exactly_once_at_its_span(
        source in source_strategy(),
        quotes in prop::collection::vec("[ab😀é]{1,4}", 1..=4),
    ) {
        let Ok(plan) = compile_plan(&source, &proposal(vec![claim(ClaimType::Fact, "s", &quotes.iter().map(String::as_str).collect::<Vec<_>>())])) else {
            return Ok(()); // the same span twice in one claim is a structural error
        };
        for planned in &plan.accepted {
            prop_assert!(planned.evidence.windows(2).all(|w| (w[0].start, w[0].end) < (w[1].start, w[1].end)));
            for span in &planned.evidence {
                prop_assert_eq!(&source.as_bytes()[span.start..span.end], span.quote.as_bytes());
                prop_assert_eq!(source.match_indices(span.quote.as_str()).count(), 1);
                let overlapping = (0..source.len())
                    .filter(|&i| source.is_char_boundary(i) && source[i..].starts_with(span.quote.as_str()))
                    .count();
                prop_assert_eq!(overlapping, 1);
            }
        }
    }
}
