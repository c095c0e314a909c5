//! Words as the full-text index sees them: maximal runs of alphanumeric characters, folded
//! the way FTS5's `unicode61 remove_diacritics 2` tokenizer folds them (lowercase, Latin
//! diacritics removed). Query units, the in-memory vocabulary and the match check all use
//! this one definition, so a unit matches in the text exactly when the index matched it.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// One word of a text: its byte range and folded form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub start: usize,
    pub end: usize,
    pub folded: String,
}

/// Whether `c` belongs to a word.
pub fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
}

/// Lowercases `word` and removes combining marks after canonical decomposition
/// (`Résumé` → `resume`). ASCII is the fast path.
pub fn fold(word: &str) -> String {
    if word.is_ascii() {
        return word.to_ascii_lowercase();
    }
    word.nfd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The byte ranges of the words of `text`.
pub fn word_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (offset, c) in text.char_indices() {
        match (is_word_char(c), start) {
            (true, None) => start = Some(offset),
            (false, Some(begin)) => {
                spans.push((begin, offset));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(begin) = start {
        spans.push((begin, text.len()));
    }
    spans
}

/// The words of `text` with their folded forms.
pub fn words(text: &str) -> Vec<Word> {
    word_spans(text)
        .into_iter()
        .map(|(start, end)| Word {
            start,
            end,
            folded: fold(&text[start..end]),
        })
        .collect()
}

/// The folded words of `text`, without positions.
pub fn folded_words(text: &str) -> Vec<String> {
    word_spans(text)
        .into_iter()
        .map(|(start, end)| fold(&text[start..end]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_alphanumeric_runs_folded_like_the_index() {
        let found = folded_words("Résumé of the CAFÉ: max_bytes v0.2.0, 東京");
        assert_eq!(
            found,
            ["resume", "of", "the", "cafe", "max", "bytes", "v0", "2", "0", "東京"]
        );
    }

    #[test]
    fn spans_point_at_the_original_bytes() {
        let text = "é-x";
        let found = words(text);
        assert_eq!(found.len(), 2);
        assert_eq!(&text[found[0].start..found[0].end], "é");
        assert_eq!(found[0].folded, "e");
    }
}
