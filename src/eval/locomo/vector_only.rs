//! Could a candidate that matches no lexical unit of the question be found by similarity
//! alone, honestly? A measurement on the shared LoCoMo development half with potion-base-8M
//! (issue 27), run by hand:
//!
//! ```text
//! cargo test --release --lib vector_only -- --ignored --nocapture
//! ```
//!
//! For every answerable question it takes the evidence turns that match no unit of the
//! question's plan (made against the conversation's own vocabulary, as a store makes it),
//! and for every question of the next conversation (unanswerable here) every turn that
//! matches no unit. A vector-only candidate path with threshold `t` would answer an
//! unanswerable question when one of its turns reaches `t`, and would add an evidence turn
//! when it reaches `t` among the five most similar such turns. The result is in
//! BENCHMARKS.md (issue 27, "Candidates with no lexical unit").

use super::data::{Conversation, load};
use crate::retrieval::text::words;
use crate::retrieval::vocabulary::DocumentFrequencies;
use crate::retrieval::{Plan, Vocabulary, analyze};
use crate::semantic::Embedder;
use crate::semantic::project::{artifact_windows, similarity};

/// Each turn's window vectors and the conversation's vocabulary.
struct Indexed<'c> {
    conversation: &'c Conversation,
    vectors: Vec<Vec<Vec<i8>>>,
    vocabulary: Vocabulary,
}

fn index<'c>(embedder: &Embedder, conversation: &'c Conversation) -> Indexed<'c> {
    let mut counts = DocumentFrequencies::default();
    for turn in &conversation.turns {
        counts.add_document(&[&words(&turn.title), &words(&turn.text)]);
    }
    let mut vocabulary = Vocabulary::new();
    counts.add_to(&mut vocabulary);
    vocabulary.add_rows(conversation.turns.len() as u64);
    let vectors = conversation
        .turns
        .iter()
        .map(|t| embedder.window_vectors(&artifact_windows(&t.title, Some(&t.text))))
        .collect();
    Indexed {
        conversation,
        vectors,
        vocabulary,
    }
}

/// `(turn index, similarity)` of the turns that match no unit of `question`, most similar
/// first; `None` when the question has no unit at all.
fn unmatched_turns(embedder: &Embedder, indexed: &Indexed<'_>, question: &str) -> Option<Vec<(usize, f64)>> {
    let plan = Plan::new(analyze(question).ok()?, &indexed.vocabulary);
    if plan.units.is_empty() {
        return None;
    }
    let query = embedder.embed(question);
    let mut found: Vec<(usize, f64)> = indexed
        .conversation
        .turns
        .iter()
        .enumerate()
        .filter(|(_, turn)| {
            let title = plan.match_words(&words(&turn.title));
            let body = plan.match_words(&words(&turn.text));
            title.units.iter().chain(&body.units).all(Option::is_none)
        })
        .map(|(index, _)| (index, similarity(&query, &indexed.vectors[index])))
        .collect();
    found.sort_by(|a, b| b.1.total_cmp(&a.1));
    Some(found)
}

#[test]
#[ignore = "a measurement on ../shared (LoCoMo dev, potion-base-8M); run by hand"]
#[allow(clippy::print_stdout)] // the measured table, for BENCHMARKS.md
fn vector_only_candidates_on_locomo_dev() {
    let shared = crate::testkit::parts::shared_dir();
    let (data, model) = (shared.join("data/locomo-dev"), shared.join("models/potion-base-8M"));
    if !data.is_dir() || !model.is_dir() {
        let why = format!("{} or {} is absent", data.display(), model.display());
        crate::testkit::parts::skip(
            crate::testkit::parts::Part::Shared,
            "vector_only_candidates_on_locomo_dev",
            &why,
        );
        return;
    }
    let embedder = Embedder::load(&model, None).unwrap();
    let conversations = load(&data).unwrap();
    let indexed: Vec<Indexed<'_>> = conversations.iter().map(|c| index(&embedder, c)).collect();
    let thresholds = [0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90];
    let (mut answerable, mut only_unmatched_evidence) = (0usize, 0usize);
    let mut gained = vec![0usize; thresholds.len()];
    let mut unanswerable = 0usize;
    let mut answered = vec![0usize; thresholds.len()];
    let mut evidence_best = Vec::new();
    let mut other_best = Vec::new();
    for (index, here) in indexed.iter().enumerate() {
        for question in &here.conversation.questions {
            let Some(turns) = unmatched_turns(&embedder, here, &question.text) else {
                continue;
            };
            answerable += 1;
            let is_evidence = |i: usize| question.evidence.contains(&here.conversation.turns[i].dia_id);
            let unmatched_evidence: Vec<&(usize, f64)> = turns.iter().filter(|(i, _)| is_evidence(*i)).collect();
            if unmatched_evidence.len() == question.evidence.len() {
                only_unmatched_evidence += 1;
            }
            if let Some((_, best)) = unmatched_evidence.first() {
                evidence_best.push(*best);
            }
            for (slot, &t) in thresholds.iter().enumerate() {
                let top = turns.iter().take(5).filter(|(_, s)| *s >= t);
                gained[slot] += usize::from(top.into_iter().any(|(i, _)| is_evidence(*i)));
            }
        }
        let other = &indexed[(index + 1) % indexed.len()].conversation;
        for question in &other.questions {
            let Some(turns) = unmatched_turns(&embedder, here, &question.text) else {
                continue;
            };
            unanswerable += 1;
            let best = turns.first().map_or(0.0, |(_, s)| *s);
            other_best.push(best);
            for (slot, &t) in thresholds.iter().enumerate() {
                answered[slot] += usize::from(best >= t);
            }
        }
    }
    let percentile = |values: &mut Vec<f64>, p: f64| {
        values.sort_by(f64::total_cmp);
        values
            .get(((values.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    println!(
        "answerable questions {answerable}; with an evidence turn that matches no unit: {}; all of whose evidence turns match none: {only_unmatched_evidence}",
        evidence_best.len()
    );
    println!("unanswerable questions (the next conversation's) {unanswerable}");
    for p in [0.5, 0.9, 0.97, 0.99] {
        println!(
            "p{:02}: best unmatched evidence turn {:.3}, best unmatched turn for an unanswerable question {:.3}",
            (p * 100.0) as u32,
            percentile(&mut evidence_best, p),
            percentile(&mut other_best, p)
        );
    }
    println!("threshold | answerable gaining an unmatched evidence turn in the top 5 | unanswerable answered");
    for (slot, t) in thresholds.iter().enumerate() {
        println!(
            "{t:.2} | {:.1}% ({}) | {:.1}% ({})",
            100.0 * gained[slot] as f64 / answerable.max(1) as f64,
            gained[slot],
            100.0 * answered[slot] as f64 / unanswerable.max(1) as f64,
            answered[slot]
        );
    }
    assert!(answerable > 0 && unanswerable > 0);
    // The finding the design rests on (no vector-only candidates with this model): every
    // threshold that keeps the unanswerable share within the 3% gate adds under 1% of the
    // answerable questions. A model or method that breaks this is worth a candidate path.
    for (slot, t) in thresholds.iter().enumerate() {
        if answered[slot] * 100 <= 3 * unanswerable {
            assert!(
                gained[slot] * 100 < answerable,
                "at {t:.2} a vector-only path would add {} of {answerable} answerable questions within the gate",
                gained[slot]
            );
        }
    }
}
