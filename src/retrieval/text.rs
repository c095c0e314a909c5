//! Words as the full-text index sees them: maximal runs of alphanumeric characters, folded
//! the way FTS5's `unicode61 remove_diacritics 2` tokenizer folds them (lowercase, Latin
//! diacritics removed). Query units, the in-memory vocabulary and the match check all use
//! this one definition, so a unit matches in the text exactly when the index matched it.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// One word of a text: its byte range and folded form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word<'w> {
    pub start: usize,
    pub end: usize,
    pub folded: &'w str,
}

/// The words of one text: their byte ranges, and their folded forms in one buffer (no
/// allocation per word: the match check reads every candidate's whole body).
#[derive(Clone, Debug, Default)]
pub struct Words {
    /// Byte range of each word in the text.
    pub spans: Vec<(usize, usize)>,
    /// The folded forms, concatenated.
    folded: String,
    /// Each word's range in `folded`; `None` when it is its span (an ASCII text, folded in
    /// place).
    ranges: Option<Vec<(usize, usize)>>,
}

impl Words {
    /// How many words the text has.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether the text has no word.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The folded form of word `index`.
    pub fn folded(&self, index: usize) -> &str {
        let (start, end) = match &self.ranges {
            Some(ranges) => ranges[index],
            None => self.spans[index],
        };
        &self.folded[start..end]
    }

    /// Word `index` with its range and folded form.
    pub fn get(&self, index: usize) -> Option<Word<'_>> {
        let &(start, end) = self.spans.get(index)?;
        Some(Word {
            start,
            end,
            folded: self.folded(index),
        })
    }

    /// The words in text order.
    pub fn iter(&self) -> impl Iterator<Item = Word<'_>> {
        (0..self.len()).filter_map(|index| self.get(index))
    }
}

/// Whether `c` belongs to a word.
pub fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
}

/// Lowercases `word` and removes combining marks after canonical decomposition
/// (`Résumé` → `resume`). ASCII is the fast path.
pub fn fold(word: &str) -> String {
    let mut folded = String::with_capacity(word.len());
    fold_into(word, &mut folded);
    folded
}

/// [`fold`], appended to `out`.
fn fold_into(word: &str, out: &mut String) {
    if word.is_ascii() {
        out.extend(word.chars().map(|c| c.to_ascii_lowercase()));
    } else {
        out.extend(
            word.nfd()
                .filter(|c| !is_combining_mark(*c))
                .flat_map(char::to_lowercase),
        );
    }
}

/// The byte ranges of the words of `text`.
pub fn word_spans(text: &str) -> Vec<(usize, usize)> {
    spans_of(text, text.is_ascii())
}

/// [`word_spans`] of a text known to be ASCII or not.
fn spans_of(text: &str, ascii: bool) -> Vec<(usize, usize)> {
    if ascii {
        // ASCII letters and digits are exactly the alphanumeric ASCII characters.
        let bytes = text.as_bytes().iter().enumerate();
        spans(
            bytes.map(|(offset, byte)| (offset, byte.is_ascii_alphanumeric())),
            text.len(),
        )
    } else {
        spans(
            text.char_indices().map(|(offset, c)| (offset, is_word_char(c))),
            text.len(),
        )
    }
}

/// The maximal runs of word characters among `(offset, is a word character)` of a text of
/// `len` bytes.
fn spans(characters: impl Iterator<Item = (usize, bool)>, len: usize) -> Vec<(usize, usize)> {
    let mut spans = Vec::with_capacity(len / 4);
    let mut start = None;
    for (offset, is_word) in characters {
        match (is_word, start) {
            (true, None) => start = Some(offset),
            (false, Some(begin)) => {
                spans.push((begin, offset));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(begin) = start {
        spans.push((begin, len));
    }
    spans
}

/// The words of `text` with their folded forms.
pub fn words(text: &str) -> Words {
    let ascii = text.is_ascii();
    let spans = spans_of(text, ascii);
    if ascii {
        // ASCII folds byte for byte: the folded words sit at the same offsets.
        return Words {
            spans,
            folded: text.to_ascii_lowercase(),
            ranges: None,
        };
    }
    let mut folded = String::with_capacity(text.len());
    let mut ranges = Vec::with_capacity(spans.len());
    for &(start, end) in &spans {
        let from = folded.len();
        fold_into(&text[start..end], &mut folded);
        ranges.push((from, folded.len()));
    }
    Words {
        spans,
        folded,
        ranges: Some(ranges),
    }
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
        let first = found.get(0).unwrap();
        assert_eq!(&text[first.start..first.end], "é");
        assert_eq!(first.folded, "e");
    }

    /// The words of `text` the slow way: every character checked, every word folded alone.
    fn words_one_by_one(text: &str) -> Vec<(usize, usize, String)> {
        let mut found = Vec::new();
        let mut start = None;
        for (offset, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
            match (is_word_char(c), start) {
                (true, None) => start = Some(offset),
                (false, Some(begin)) => {
                    found.push((begin, offset, fold(&text[begin..offset])));
                    start = None;
                }
                _ => {}
            }
        }
        found
    }

    proptest::proptest! {
        #[test]
        fn words_fold_into_one_buffer_exactly_as_each_word_folds_alone(
            text in "[a-zA-Z0-9 .,_-]{0,80}|\\PC{0,40}|[a-zé É東京ß0-9 -]{0,40}"
        ) {
            let found: Vec<(usize, usize, String)> =
                words(&text).iter().map(|w| (w.start, w.end, w.folded.to_owned())).collect();
            proptest::prop_assert_eq!(found, words_one_by_one(&text));
        }
    }
}
