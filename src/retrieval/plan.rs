//! A query plan: the analysed units with their weights and expansions, the qualification
//! requirement, the FTS5 expressions that fetch candidates, and the term index that checks
//! a candidate's text. Built once per request and shared by every entity type it searches.
//!
//! **Invariant:** FTS5 expressions hold only double-quoted folded words (a quote inside a
//! word is doubled), joined by `AND`/`OR` and parentheses; no user text becomes syntax.

use std::sync::Mutex;

use rustc_hash::FxHashMap as HashMap;

use super::analyze::{Analysis, Unit, UnitKind};
use super::qualify::{Policy, PolicyVersion, UnitWeight};
use super::stem::stem;
use super::text::Words;
use super::vocabulary::{Expansion, MatchKind, Vocabulary};

/// Above this many minimal qualifying combinations the candidate expression falls back to
/// a plain `OR` of the units (and the text check alone decides).
const MAX_CLAUSES: usize = 16;
/// Subsets are enumerated only up to this many driving units.
const MAX_SUBSET_UNITS: usize = 8;
/// Words whose stem a plan remembers (see [`StemMemo`]).
const MAX_MEMO_WORDS: usize = 8192;

/// One unit with everything the pipeline needs to match it.
#[derive(Clone, Debug)]
pub struct PlannedUnit {
    pub unit: Unit,
    pub weight: UnitWeight,
    pub expansion: Expansion,
    /// Porter2 stem and its first three characters (word units), for the inflection check
    /// of words the vocabulary missed.
    stem: Option<(String, String)>,
    /// The FTS5 expression of this unit alone.
    pub expr: String,
}

/// Where a unit matched in one text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitMatch {
    pub kind: MatchKind,
    /// The text's folded term (the first word of a phrase) that gave the best kind.
    pub term: String,
}

/// The result of checking one text against the plan.
#[derive(Clone, Debug, Default)]
pub struct TextMatch {
    /// Best match per unit.
    pub units: Vec<Option<UnitMatch>>,
    /// Every occurrence, for excerpt windows: `(unit, first word, word count)`.
    pub instances: Vec<(usize, usize, usize)>,
}

impl TextMatch {
    /// Folds another text's matches into this one (an artifact's title into its body).
    pub fn merge_units(&mut self, other: &TextMatch) {
        for (mine, theirs) in self.units.iter_mut().zip(&other.units) {
            if let Some(theirs) = theirs
                && mine.as_ref().is_none_or(|m| theirs.kind < m.kind)
            {
                *mine = Some(theirs.clone());
            }
        }
    }
}

/// A prepared query.
#[derive(Clone, Debug)]
pub struct Plan {
    pub analysis: Analysis,
    pub units: Vec<PlannedUnit>,
    pub policy: Policy,
    /// Candidates that may qualify; `None` when nothing can.
    pub qualifying_expr: Option<String>,
    /// Candidates that share at least one driving unit (near misses).
    pub any_expr: Option<String>,
    /// The corpus of a restricted grant when the plan was made against its vocabulary
    /// (`retrieval::corpus`): candidates are then scored over it, not FTS5's `bm25()`.
    pub corpus: Option<super::corpus::CorpusStats>,
    /// Folded term → what it is to the query, so that one lookup per text word serves
    /// both [`Plan::match_words`] and the highlights.
    terms: HashMap<String, Term>,
    /// How many of the query's ignored function words are highlighted (see [`Term`]).
    highlights: usize,
    /// Stems of the words the inflection fallback of [`Plan::match_words`] has checked.
    stems: StemMemo,
}

/// What one folded term is to a plan.
#[derive(Clone, Debug, Default)]
struct Term {
    /// `(unit, kind)` for a word unit's expansion term, and `(unit, Exact)` for the first
    /// word of a multi-word unit.
    units: Vec<(usize, MatchKind)>,
    /// For one of the query's ignored function words (never a unit's term): its highlight
    /// index (after the units), highlighted in excerpts as FTS5 would but never scored.
    highlight: Option<usize>,
}

/// The Porter2 stem of each text word the inflection fallback checked, by word. A request's
/// candidates share most of their words, and stemming them is most of the fallback's cost;
/// a stem is a function of the word alone, so remembering it changes no match. Bounded by
/// [`MAX_MEMO_WORDS`] (past it, words are stemmed without being remembered); a clone starts
/// empty.
#[derive(Default)]
struct StemMemo(Mutex<HashMap<Box<str>, Box<str>>>);

impl StemMemo {
    /// Calls `f` with the stem of `word`.
    fn with_stem<R>(&self, word: &str, f: impl FnOnce(&str) -> R) -> R {
        let mut memo = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(stem) = memo.get(word) {
            return f(stem);
        }
        let stemmed = stem(word);
        let result = f(&stemmed);
        if memo.len() < MAX_MEMO_WORDS {
            memo.insert(word.into(), stemmed.into());
        }
        result
    }
}

impl Clone for StemMemo {
    fn clone(&self) -> StemMemo {
        StemMemo::default()
    }
}

impl std::fmt::Debug for StemMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StemMemo")
    }
}

impl Plan {
    /// Plans `analysis` against the vocabulary.
    pub fn new(analysis: Analysis, vocabulary: &Vocabulary) -> Plan {
        Plan::with_policy(PolicyVersion::default(), analysis, vocabulary)
    }

    /// Plans `analysis` against the vocabulary under the qualification policy `version`.
    /// The vocabulary is the one source of the statistics the weights come from.
    pub fn with_policy(version: PolicyVersion, analysis: Analysis, vocabulary: &Vocabulary) -> Plan {
        let rows = vocabulary.rows();
        let mut units = Vec::with_capacity(analysis.units.len());
        for unit in &analysis.units {
            // Function words searched as a last resort match only as written.
            let expansion = if analysis.stop_words_only {
                Expansion {
                    terms: vec![(unit.words[0].clone(), MatchKind::Exact)],
                    df: vocabulary.df(&unit.words[0]),
                    corrected: false,
                }
            } else {
                vocabulary.expand_as(unit, analysis.question)
            };
            let weight = UnitWeight::of(
                version,
                unit,
                &expansion,
                unit_df(unit, &expansion, vocabulary),
                rows,
                analysis.stop_words_only,
            );
            let expr = unit_expr(unit, &expansion);
            let stem = (unit.kind == UnitKind::Word && !analysis.stop_words_only).then(|| {
                let stem = stem(&unit.words[0]);
                let prefix: String = stem.chars().take(3).collect();
                (stem, prefix)
            });
            units.push(PlannedUnit {
                unit: unit.clone(),
                weight,
                expansion,
                stem,
                expr,
            });
        }
        let policy = Policy::new(version, &analysis, &units.iter().map(|u| u.weight).collect::<Vec<_>>());
        let mut terms: HashMap<String, Term> = HashMap::default();
        for (index, planned) in units.iter().enumerate() {
            if planned.unit.words.len() == 1 && planned.unit.kind == UnitKind::Word {
                for (term, kind) in &planned.expansion.terms {
                    terms.entry(term.clone()).or_default().units.push((index, *kind));
                }
            } else if let Some(first) = planned.unit.words.first() {
                terms
                    .entry(first.clone())
                    .or_default()
                    .units
                    .push((index, MatchKind::Exact));
            }
        }
        let mut highlights = 0;
        for word in &analysis.ignored {
            if !terms.contains_key(word) {
                terms.insert(
                    word.clone(),
                    Term {
                        units: Vec::new(),
                        highlight: Some(units.len() + highlights),
                    },
                );
                highlights += 1;
            }
        }
        let qualifying_expr = qualifying_expr(&units, &policy);
        let driving: Vec<&PlannedUnit> = driving_units(&units);
        let any_expr = (!driving.is_empty()).then(|| or_of(driving.iter().map(|u| u.expr.as_str())));
        Plan {
            analysis,
            units,
            policy,
            qualifying_expr,
            any_expr,
            corpus: None,
            terms,
            highlights,
            stems: StemMemo::default(),
        }
    }

    /// [`Plan::match_words`] of one text, and in the same pass the highlight-only
    /// occurrences of the query's function words, as `(index, position, 1)` with indexes
    /// after the units (see [`Plan::unit_scores`]).
    pub fn match_and_highlight(&self, words: &Words) -> (TextMatch, Vec<(usize, usize, usize)>) {
        let mut highlights = Vec::new();
        let matched = self.scan(words, Some(&mut highlights));
        (matched, highlights)
    }

    /// Checks one text (its folded words) against every unit.
    pub fn match_words(&self, words: &Words) -> TextMatch {
        self.scan(words, None)
    }

    /// Matches `words`, collecting the highlights too when asked.
    fn scan(&self, words: &Words, mut highlights: Option<&mut Vec<(usize, usize, usize)>>) -> TextMatch {
        let mut result = TextMatch {
            units: vec![None; self.units.len()],
            instances: Vec::new(),
        };
        for position in 0..words.len() {
            let word = words.folded(position);
            let term = self.terms.get(word);
            if let (Some(highlights), Some(index)) = (highlights.as_deref_mut(), term.and_then(|t| t.highlight)) {
                highlights.push((index, position, 1));
            }
            if let Some(candidates) = term.map(|t| &t.units).filter(|units| !units.is_empty()) {
                for &(index, kind) in candidates {
                    let unit = &self.units[index].unit;
                    let len = unit.words.len();
                    if len > 1 || unit.kind != UnitKind::Word {
                        let matches = words.len() >= position + len
                            && (0..len).all(|offset| words.folded(position + offset) == unit.words[offset]);
                        if !matches {
                            continue;
                        }
                    }
                    record(&mut result, index, kind, word, position, len);
                }
                continue;
            }
            // Inflections the vocabulary's expansion did not list: its scan by stem prefix
            // misses forms that do not start with their stem (`hoping` for `hope`).
            let shares_prefix = |planned: &PlannedUnit| {
                planned
                    .stem
                    .as_ref()
                    .is_some_and(|(_, prefix)| word.starts_with(prefix.as_str()))
            };
            if !self.units.iter().any(shares_prefix) {
                continue;
            }
            self.stems.with_stem(word, |word_stem| {
                for (index, planned) in self.units.iter().enumerate() {
                    if shares_prefix(planned) && planned.stem.as_ref().is_some_and(|(stem, _)| stem == word_stem) {
                        record(&mut result, index, MatchKind::Inflection, word, position, 1);
                    }
                }
            });
        }
        result
    }

    /// Excerpt scores per unit (see `snippet::unit_score`), then 0 for each highlight-only
    /// function word.
    pub fn unit_scores(&self) -> Vec<usize> {
        self.units
            .iter()
            .map(|u| super::snippet::unit_score(u.weight.value))
            .chain(std::iter::repeat_n(0, self.highlights))
            .collect()
    }
}

/// The rows a unit is found in, for its weight: a word's commonest uncorrected term (or,
/// when it was corrected, its best correction's); a phrase, identifier or number at most
/// as many as its rarest word.
fn unit_df(unit: &Unit, expansion: &Expansion, vocabulary: &Vocabulary) -> u64 {
    if unit.kind != UnitKind::Word {
        return unit.words.iter().map(|w| vocabulary.df(w)).min().unwrap_or(0);
    }
    if expansion.df > 0 || !expansion.corrected {
        return expansion.df;
    }
    expansion
        .terms
        .iter()
        .find(|(_, kind)| kind.is_correction())
        .map_or(0, |(term, _)| vocabulary.df(term))
}

fn record(result: &mut TextMatch, index: usize, kind: MatchKind, term: &str, position: usize, len: usize) {
    let best = &mut result.units[index];
    if best.as_ref().is_none_or(|b| kind < b.kind) {
        *best = Some(UnitMatch {
            kind,
            term: term.to_owned(),
        });
    }
    result.instances.push((index, position, len));
}

/// Units that drive candidate retrieval: the non-generic ones, or all when every unit is
/// generic.
fn driving_units(units: &[PlannedUnit]) -> Vec<&PlannedUnit> {
    let driving: Vec<&PlannedUnit> = units.iter().filter(|u| !u.weight.generic).collect();
    if driving.is_empty() {
        units.iter().collect()
    } else {
        driving
    }
}

/// `"a" OR "b"` as one parenthesized group.
fn or_of<'a>(exprs: impl Iterator<Item = &'a str>) -> String {
    let parts: Vec<&str> = exprs.collect();
    if parts.len() == 1 {
        parts[0].to_owned()
    } else {
        format!("({})", parts.join(" OR "))
    }
}

/// Quotes one folded word or phrase for FTS5.
fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// The expression of one unit: its terms OR-ed, or its exact phrase.
fn unit_expr(unit: &Unit, expansion: &Expansion) -> String {
    if unit.kind == UnitKind::Word {
        let mut terms: Vec<&str> = expansion.terms.iter().map(|(t, _)| t.as_str()).collect();
        if terms.is_empty() {
            terms.push(&unit.words[0]);
        }
        terms.dedup();
        or_of(
            terms
                .iter()
                .map(|t| quote(t))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        )
    } else {
        quote(&unit.words.join(" "))
    }
}

/// The candidates that may qualify: every minimal combination of driving units that meets
/// the requirements of `qualify` (the weight share, the v2 majority, a question's two units)
/// once the generic units are taken as matched, AND-ed within and OR-ed across; past
/// [`MAX_SUBSET_UNITS`] or [`MAX_CLAUSES`], any driving unit. It is a necessary condition:
/// the candidate query finds every candidate that can qualify, and few that cannot.
fn qualifying_expr(units: &[PlannedUnit], policy: &Policy) -> Option<String> {
    if !policy.can_qualify() {
        return None;
    }
    let driving: Vec<usize> = (0..units.len()).filter(|&i| !units[i].weight.generic).collect();
    if driving.is_empty() {
        // Every unit is generic: all of them are needed (see `Policy`).
        return Some(units.iter().map(|u| u.expr.clone()).collect::<Vec<_>>().join(" AND "));
    }
    // Generic units stay out of the expression: FTS5's bm25 reads every phrase's whole
    // doclist once per query, and theirs cover a fifth of the store or more.
    let generic: Vec<usize> = (0..units.len()).filter(|&i| units[i].weight.generic).collect();
    if driving.len() <= MAX_SUBSET_UNITS
        && let Some(minimal) = minimal_subsets(units, policy, &driving, &generic)
    {
        return (!minimal.is_empty()).then(|| clauses(units, &driving, &minimal));
    }
    Some(or_of(driving.iter().map(|&i| units[i].expr.as_str())))
}

/// The minimal subsets of `members` (bit `b` standing for `units[members[b]]`) that meet the
/// requirements with the `assumed` units taken as matched, smallest first; `None` past
/// [`MAX_CLAUSES`].
fn minimal_subsets(units: &[PlannedUnit], policy: &Policy, members: &[usize], assumed: &[usize]) -> Option<Vec<u32>> {
    let majority = match policy.version {
        PolicyVersion::V1 => 0.0,
        PolicyVersion::V2 => ((units.len() / 2 + 1) as f64).min(units.iter().map(unit_count).sum()),
    };
    let meets = |subset: u32| {
        let chosen: Vec<&PlannedUnit> = (0..members.len())
            .filter(|b| subset & (1 << b) != 0)
            .map(|b| &units[members[b]])
            .chain(assumed.iter().map(|&i| &units[i]))
            .collect();
        let weight: f64 = chosen.iter().map(|u| u.weight.value).sum();
        let counted: f64 = chosen.iter().map(|u| unit_count(u)).sum();
        let two_units = !policy.two_units_needed || chosen.len() >= 2 || chosen.iter().any(|u| u.weight.distinctive);
        weight + 1e-9 >= policy.required && counted + 1e-9 >= majority && two_units
    };
    let mut minimal: Vec<u32> = Vec::new();
    let mut subsets: Vec<u32> = (1u32..(1 << members.len())).collect();
    subsets.sort_by_key(|s| s.count_ones());
    for subset in subsets {
        if minimal.iter().any(|m| m & subset == *m) || !meets(subset) {
            continue;
        }
        minimal.push(subset);
        if minimal.len() > MAX_CLAUSES {
            return None;
        }
    }
    Some(minimal)
}

/// The FTS5 expression of `minimal` subsets of `members`.
fn clauses(units: &[PlannedUnit], members: &[usize], minimal: &[u32]) -> String {
    let clauses: Vec<String> = minimal
        .iter()
        .map(|subset| {
            let parts: Vec<&str> = (0..members.len())
                .filter(|b| subset & (1 << b) != 0)
                .map(|b| units[members[b]].expr.as_str())
                .collect();
            if parts.len() == 1 {
                parts[0].to_owned()
            } else {
                format!("({})", parts.join(" AND "))
            }
        })
        .collect();
    if clauses.len() == 1 {
        clauses.into_iter().next().unwrap_or_default()
    } else {
        clauses.join(" OR ")
    }
}

/// What a unit counts toward the v2 majority, as `qualify` counts it: a distinctive unit
/// as two, a word of the generic list as a half.
fn unit_count(unit: &PlannedUnit) -> f64 {
    if unit.weight.distinctive {
        2.0
    } else if unit.unit.generic {
        0.5
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests;
