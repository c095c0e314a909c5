//! Grant-scoped corpus statistics (issue 28, finding 2): the numbers a score may depend on
//! for a request whose grant is limited to some workspaces, and the score computed from them.
//!
//! FTS5's `bm25()` reads its statistics (row count, average length, each phrase's document
//! count) from the whole index, so a restricted credential's scores and order would move
//! when another workspace gains documents. For such a request the service instead plans the
//! query against the vocabulary of the grant's workspaces only
//! (`store::vocab::ScopedVocabularies`: expansions, typo corrections, unit weights and
//! `query_analysis.advice` see only the grant's words) and scores each candidate with
//! [`bm25`] over [`CorpusStats`] of those workspaces. Unrestricted requests are untouched
//! (FTS5's `bm25()` as before).
//!
//! The API other retrieval work meets (issue 27 weighs query words by IDF): [`CorpusStats`]
//! (rows and tokens of the grant's corpus), [`idf`] (FTS5's formula), and `Plan::corpus`
//! (`Some` exactly when the plan was made for a restricted grant, the vocabulary it was
//! planned against then being the grant's: `PlannedUnit::expansion.df` is the grant's
//! document frequency).

/// FTS5's `bm25()` constants.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The size of the corpus a restricted grant may read: its revisions (of both kinds, as the
/// vocabulary counts them) and their indexed words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CorpusStats {
    pub rows: u64,
    pub tokens: u64,
}

impl CorpusStats {
    /// Average indexed words per row (1 for an empty corpus).
    pub fn average_length(&self) -> f64 {
        if self.rows == 0 {
            1.0
        } else {
            (self.tokens as f64 / self.rows as f64).max(1.0)
        }
    }
}

/// FTS5's inverse document frequency: `ln((N − n + 0.5) / (n + 0.5))`, at least 1e-6.
pub fn idf(stats: &CorpusStats, df: u64) -> f64 {
    let n = stats.rows as f64;
    let hits = (df as f64).min(n);
    let value = ((n - hits + 0.5) / (hits + 0.5)).ln();
    if value > 0.0 { value } else { 1e-6 }
}

/// BM25 of one document over `stats`, as FTS5 computes it, higher is better: `terms` holds
/// each query unit's weighted frequency in the document (column weights applied) and its
/// document frequency in the corpus; `length` is the document's indexed word count.
pub fn bm25(stats: &CorpusStats, terms: &[(f64, u64)], length: usize) -> f64 {
    let norm = K1 * (1.0 - B + B * length as f64 / stats.average_length());
    terms
        .iter()
        .filter(|(frequency, _)| *frequency > 0.0)
        .map(|&(frequency, df)| idf(stats, df) * (frequency * (K1 + 1.0)) / (frequency + norm))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rarer_word_and_a_shorter_document_score_higher() {
        let stats = CorpusStats {
            rows: 100,
            tokens: 1000,
        };
        assert!(bm25(&stats, &[(1.0, 2)], 10) > bm25(&stats, &[(1.0, 50)], 10));
        assert!(bm25(&stats, &[(1.0, 2)], 5) > bm25(&stats, &[(1.0, 2)], 50));
        assert_eq!(bm25(&stats, &[(0.0, 2)], 5), 0.0);
        assert!(idf(&CorpusStats { rows: 2, tokens: 4 }, 2) > 0.0);
    }
}
