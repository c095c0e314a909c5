//! The indexed vocabulary in memory: every term of both FTS tables with its document
//! frequency, and the expansions of a query unit against it (inflections, typo corrections,
//! prefixes and abbreviations), each bounded. Filled from FTS5's `fts5vocab` and kept
//! current by the store (`store::vocab`); nothing here touches SQLite.

use std::collections::BTreeMap;

use super::analyze::{Unit, UnitKind};
use super::lexicon::lexicon;
use super::stem::stem;
use super::text::Words;

/// At most this many inflected variants per unit, most frequent first.
pub const MAX_INFLECTIONS: usize = 12;
/// At most this many corrections (fuzzy, prefix or abbreviation) per unit.
pub const MAX_CORRECTIONS: usize = 6;
/// At most this many vocabulary terms are examined per unit and kind of expansion.
const MAX_SCAN: usize = 20_000;
/// Shortest unit that may be completed as a prefix or read as an abbreviation.
pub const MIN_PREFIX_LEN: usize = 3;

/// How a unit matched a term.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MatchKind {
    Exact,
    Inflection,
    Fuzzy,
    Prefix,
    Abbreviation,
}

impl MatchKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MatchKind::Exact => "exact",
            MatchKind::Inflection => "inflection",
            MatchKind::Fuzzy => "fuzzy",
            MatchKind::Prefix => "prefix",
            MatchKind::Abbreviation => "abbreviation",
        }
    }

    /// Typo and abbreviation corrections, as opposed to the word itself or an inflection.
    pub fn is_correction(self) -> bool {
        matches!(self, MatchKind::Fuzzy | MatchKind::Prefix | MatchKind::Abbreviation)
    }
}

/// The terms a unit may match, each with how it matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expansion {
    /// `(term, kind)`; for exact kinds the unit's own words.
    pub terms: Vec<(String, MatchKind)>,
    /// Document frequency of the most frequent uncorrected term (0 when the unit is absent).
    pub df: u64,
    /// The unit was absent from the vocabulary and corrected.
    pub corrected: bool,
}

/// Every term of the index with its document frequency (rows of either FTS table).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Vocabulary {
    terms: BTreeMap<String, u32>,
    /// Rows indexed (artifact and claim revisions).
    rows: u64,
}

impl Vocabulary {
    pub fn new() -> Vocabulary {
        Vocabulary::default()
    }

    /// Adds `df` documents to `term`.
    pub fn add_term(&mut self, term: &str, df: u32) {
        match self.terms.get_mut(term) {
            Some(count) => *count = count.saturating_add(df),
            None => {
                self.terms.insert(term.to_owned(), df);
            }
        }
    }

    /// Counts `n` more indexed rows.
    pub fn add_rows(&mut self, n: u64) {
        self.rows += n;
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub fn len(&self) -> usize {
        self.terms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Document frequency of a folded term.
    pub fn df(&self, term: &str) -> u64 {
        self.terms.get(term).map_or(0, |c| u64::from(*c))
    }

    /// Terms starting with `prefix`, in order, with their frequencies.
    fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, u32)> + 'a {
        self.terms
            .range::<str, _>((std::ops::Bound::Included(prefix), std::ops::Bound::Unbounded))
            .take_while(move |(term, _)| term.starts_with(prefix))
            .take(MAX_SCAN)
            .map(|(term, df)| (term.as_str(), *df))
    }

    /// The expansion of one unit. Only word units expand: identifiers, numbers, compounds
    /// and quoted phrases match exactly. A word absent from the vocabulary is corrected:
    /// by edit distance always, and as a prefix or abbreviation only in a keyword query (a
    /// question spells its words out: `rest` in "encrypted at rest" is not `restore`).
    pub fn expand(&self, unit: &Unit) -> Expansion {
        self.expand_as(unit, false)
    }

    /// [`Vocabulary::expand`] for a unit of a question (`question`) or a keyword query.
    pub fn expand_as(&self, unit: &Unit, question: bool) -> Expansion {
        if unit.kind != UnitKind::Word {
            return Expansion {
                terms: Vec::new(),
                df: 0,
                corrected: false,
            };
        }
        let word = &unit.words[0];
        let mut terms = vec![(word.clone(), MatchKind::Exact)];
        let mut df = self.df(word);
        let inflections = self.inflections(word);
        for (_, count) in &inflections {
            df = df.max(*count);
        }
        terms.extend(inflections.into_iter().map(|(t, _)| (t, MatchKind::Inflection)));
        let mut corrected = false;
        if df == 0 {
            let corrections = self.corrections(word, !question);
            corrected = !corrections.is_empty();
            // A corrected word matches the corrected term's inflections too, as the same kind.
            let mut inflected = Vec::new();
            for (term, kind) in &corrections {
                for (variant, _) in self.inflections(term).into_iter().take(MAX_CORRECTIONS) {
                    if !corrections.iter().any(|(t, _)| *t == variant) && !inflected.iter().any(|(t, _)| *t == variant)
                    {
                        inflected.push((variant, *kind));
                    }
                }
            }
            terms.extend(corrections);
            terms.extend(inflected);
        }
        Expansion { terms, df, corrected }
    }

    /// Other terms of the vocabulary with the word's stem, or one of its degree forms.
    fn inflections(&self, word: &str) -> Vec<(String, u64)> {
        let target = stem(word);
        // A word starts with its Porter2 stem, except that a final `y` may become `i`
        // (`happy` → `happi`); and the stem is never shorter than the shortest inflection.
        let prefix: String = match target.strip_suffix('i') {
            Some(without) if without.chars().count() >= 3 => without.to_owned(),
            _ => target.clone(),
        };
        let mut found: Vec<(String, u64)> = self
            .with_prefix(&prefix)
            .filter(|(term, _)| *term != word && stem(term) == target)
            .map(|(term, df)| (term.to_owned(), u64::from(df)))
            .collect();
        let lexicon = lexicon();
        // Irregular verbs: every form of the word's lemma, and the lemma's own inflections
        // (`went` → `go`, `goes`, `going`, `gone`).
        if let Some(lemma) = lexicon.lemma(word) {
            let mut related: Vec<String> = std::iter::once(lemma)
                .chain(lexicon.irregular_forms(lemma).iter().copied())
                .map(str::to_owned)
                .collect();
            if lemma != word {
                let lemma_stem = stem(lemma);
                related.extend(
                    self.with_prefix(&lemma_stem)
                        .filter(|(term, _)| stem(term) == lemma_stem)
                        .map(|(term, _)| term.to_owned()),
                );
            }
            for form in related {
                let count = self.df(&form);
                if form != word && count > 0 && !found.iter().any(|(t, _)| *t == form) {
                    found.push((form, count));
                }
            }
        }
        if let Some(base) = lexicon.comparative_base(word) {
            for form in lexicon.comparative_forms(base) {
                let count = self.df(&form);
                if form != word && count > 0 && !found.iter().any(|(t, _)| *t == form) {
                    found.push((form, count));
                }
            }
        }
        found.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        found.truncate(MAX_INFLECTIONS);
        found
    }

    /// Corrections of a word absent from the vocabulary: terms within the edit distance its
    /// length allows (same first letter), then completions of it as a prefix, then terms it
    /// abbreviates; most frequent first, at most [`MAX_CORRECTIONS`] in all.
    fn corrections(&self, word: &str, completions: bool) -> Vec<(String, MatchKind)> {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() < MIN_PREFIX_LEN || chars.iter().any(|c| !c.is_alphabetic()) {
            return Vec::new();
        }
        let budget = max_edits(chars.len());
        let mut found: Vec<(String, MatchKind, usize, u32)> = Vec::new();
        if budget > 0 {
            let first: String = chars[..1].iter().collect();
            for (term, df) in self.with_prefix(&first) {
                let length = term.chars().count();
                if length.abs_diff(chars.len()) > budget || length < MIN_PREFIX_LEN {
                    continue;
                }
                if let Some(distance) = bounded_distance(&chars, term, budget) {
                    found.push((term.to_owned(), MatchKind::Fuzzy, distance, df));
                }
            }
            // A typo of an inflected form the store lacks (`snapshto` for `snapshotted`):
            // compare with the stems of terms sharing the first three letters.
            // An ending typo after a known stem (`rotaton` for `rotated`, stem `rotat`): the
            // word is a stem of at least five letters plus at most three more.
            let head: String = chars[..3].iter().collect();
            let word_text: String = chars.iter().collect();
            for (term, df) in self.with_prefix(&head) {
                let length = term.chars().count();
                if length > chars.len() + 6 {
                    continue;
                }
                let root = stem(term);
                let root_len = root.chars().count();
                if root_len >= 5 && word_text.starts_with(root.as_str()) && chars.len() - root_len <= 3 {
                    found.push((term.to_owned(), MatchKind::Fuzzy, 1, df));
                    continue;
                }
                if length.abs_diff(chars.len()) <= budget || root_len + 1 < chars.len().saturating_sub(budget) {
                    continue;
                }
                if let Some(distance) = bounded_distance(&chars, &root, budget) {
                    found.push((term.to_owned(), MatchKind::Fuzzy, distance, df));
                }
            }
        }
        if !completions {
            return best(found);
        }
        for (term, df) in self.with_prefix(word) {
            if term != word {
                found.push((term.to_owned(), MatchKind::Prefix, 3, df));
            }
        }
        if found.is_empty() && chars.len() <= 6 {
            let first: String = chars[..1].iter().collect();
            for (term, df) in self.with_prefix(&first) {
                if term.chars().count() <= 5 * chars.len() && is_abbreviation(&chars, term) {
                    found.push((term.to_owned(), MatchKind::Abbreviation, 4, df));
                }
            }
        }
        best(found)
    }
}

/// The best corrections: closest first, then most frequent, then alphabetical; each term
/// once; at most [`MAX_CORRECTIONS`].
fn best(mut found: Vec<(String, MatchKind, usize, u32)>) -> Vec<(String, MatchKind)> {
    found.sort_by(|a, b| a.2.cmp(&b.2).then(b.3.cmp(&a.3)).then_with(|| a.0.cmp(&b.0)));
    let mut seen = std::collections::HashSet::new();
    found.retain(|f| seen.insert(f.0.clone()));
    found.truncate(MAX_CORRECTIONS);
    found.into_iter().map(|(term, kind, _, _)| (term, kind)).collect()
}

/// Edits allowed for a word of `length` characters: none under 5, one up to 8, two above.
pub fn max_edits(length: usize) -> usize {
    match length {
        0..=4 => 0,
        5..=8 => 1,
        _ => 2,
    }
}

/// Optimal-string-alignment distance (a transposition is one edit) when it is at most
/// `budget`, else `None`.
pub fn bounded_distance(a: &[char], b: &str, budget: usize) -> Option<usize> {
    const MAX: usize = 64;
    let mut b_chars = [' '; MAX];
    let mut m = 0;
    for c in b.chars() {
        if m == MAX {
            return None;
        }
        b_chars[m] = c;
        m += 1;
    }
    let n = a.len();
    if n.abs_diff(m) > budget || n >= MAX {
        return None;
    }
    let b = &b_chars[..m];
    let mut previous2 = [0usize; MAX + 1];
    let mut previous = [0usize; MAX + 1];
    let mut current = [0usize; MAX + 1];
    for (j, slot) in previous.iter_mut().enumerate().take(m + 1) {
        *slot = j;
    }
    for i in 1..=n {
        current[0] = i;
        let mut row_min = current[0];
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut value = (previous[j] + 1).min(current[j - 1] + 1).min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                value = value.min(previous2[j - 2] + 1);
            }
            current[j] = value;
            row_min = row_min.min(value);
        }
        if row_min > budget {
            return None;
        }
        previous2 = previous;
        previous = current;
    }
    let distance = previous[m];
    (distance <= budget).then_some(distance)
}

/// `abbreviation` keeps the first letter of `term` and the rest of its letters in order
/// (`cfg` → `config`, `dashbd` → `dashboard`), and ends with a letter of the term's last
/// syllable or its first letters.
fn is_abbreviation(abbreviation: &[char], term: &str) -> bool {
    let mut letters = term.chars();
    if letters.next() != abbreviation.first().copied() {
        return false;
    }
    let mut wanted = abbreviation[1..].iter().peekable();
    for c in letters {
        if wanted.peek() == Some(&&c) {
            wanted.next();
        }
    }
    wanted.peek().is_none() && term.chars().count() > abbreviation.len()
}

/// Document frequencies counted over many documents (a store's revisions, a corpus), added
/// to a [`Vocabulary`] once at the end: a hash lookup per distinct word of a document
/// instead of an ordered-map search.
#[derive(Default)]
pub struct DocumentFrequencies {
    terms: rustc_hash::FxHashMap<String, u32>,
}

impl DocumentFrequencies {
    /// Counts each distinct word of one document's `fields` once; returns its word count.
    pub fn add_document(&mut self, fields: &[&Words]) -> u64 {
        let mut distinct: Vec<&str> = fields.iter().flat_map(|f| (0..f.len()).map(|i| f.folded(i))).collect();
        let count = distinct.len() as u64;
        distinct.sort_unstable();
        distinct.dedup();
        for term in distinct {
            match self.terms.get_mut(term) {
                Some(df) => *df = df.saturating_add(1),
                None => {
                    self.terms.insert(term.to_owned(), 1);
                }
            }
        }
        count
    }

    /// Adds every counted term to `vocabulary` (the documents themselves are counted by
    /// [`Vocabulary::add_rows`]).
    pub fn add_to(self, vocabulary: &mut Vocabulary) {
        for (term, df) in self.terms {
            vocabulary.add_term(&term, df);
        }
    }
}

#[cfg(test)]
mod tests;
