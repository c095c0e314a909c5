//! The curated English word lists of query analysis, kept as data files beside this module
//! (`lexicon/*.txt`, one lowercase word per line, `#` comments) and parsed once.
//!
//! - `stopwords.txt`: function words; never a content unit on their own.
//! - `question_words.txt`: question words and two-word frames (`how long`); never a content
//!   unit, and their presence makes the query a question.
//! - `generic_words.txt`: common words that name no topic; a content unit, at half weight,
//!   that never qualifies a hit alone.
//! - `comparatives.txt`: adjectives whose `-er`/`-est` forms are inflections.

use std::collections::HashSet;
use std::sync::OnceLock;

const STOPWORDS: &str = include_str!("lexicon/stopwords.txt");
const QUESTION_WORDS: &str = include_str!("lexicon/question_words.txt");
const GENERIC_WORDS: &str = include_str!("lexicon/generic_words.txt");
const COMPARATIVES: &str = include_str!("lexicon/comparatives.txt");

/// The parsed lists.
#[derive(Debug, Default)]
pub struct Lexicon {
    stop: HashSet<&'static str>,
    question: HashSet<&'static str>,
    /// `(first, second)` of two-word question frames such as `how long`.
    frames: HashSet<(&'static str, &'static str)>,
    /// Words that make a yes/no question when they start the query (`are`, `does`).
    starters: HashSet<&'static str>,
    generic: HashSet<&'static str>,
    comparatives: HashSet<&'static str>,
}

/// The entries of one list file: trimmed, non-empty, non-comment lines.
pub fn entries(text: &'static str) -> impl Iterator<Item = &'static str> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|line| !line.is_empty())
}

/// The lexicon, parsed on first use.
pub fn lexicon() -> &'static Lexicon {
    static LEXICON: OnceLock<Lexicon> = OnceLock::new();
    LEXICON.get_or_init(|| {
        let mut lexicon = Lexicon {
            stop: entries(STOPWORDS).collect(),
            generic: entries(GENERIC_WORDS).collect(),
            comparatives: entries(COMPARATIVES).collect(),
            ..Lexicon::default()
        };
        for entry in entries(QUESTION_WORDS) {
            if let Some(starter) = entry.strip_prefix('^') {
                lexicon.starters.insert(starter);
                continue;
            }
            match entry.split_once(' ') {
                Some((first, second)) => {
                    lexicon.frames.insert((first, second.trim()));
                }
                None => {
                    lexicon.question.insert(entry);
                }
            }
        }
        lexicon
    })
}

impl Lexicon {
    /// A function word (folded form).
    pub fn is_stop(&self, word: &str) -> bool {
        self.stop.contains(word)
    }

    /// A question word (folded form), outside any frame.
    pub fn is_question(&self, word: &str) -> bool {
        self.question.contains(word)
    }

    /// Whether `second` is a question word right after `first` (`how long`).
    pub fn is_frame(&self, first: &str, second: &str) -> bool {
        self.frames.contains(&(first, second))
    }

    /// Whether `word`, as the query's first word, makes it a yes/no question.
    pub fn is_starter(&self, word: &str) -> bool {
        self.starters.contains(word)
    }

    /// A common word that names no topic.
    pub fn is_generic(&self, word: &str) -> bool {
        self.generic.contains(word)
    }

    /// The base adjective of a comparative or superlative (`larger` → `large`,
    /// `biggest` → `big`, `easier` → `easy`), or the word itself when it is a listed base.
    pub fn comparative_base(&self, word: &str) -> Option<&'static str> {
        if let Some(base) = self.comparatives.get(word) {
            return Some(base);
        }
        for suffix in ["er", "est"] {
            let Some(stem) = word.strip_suffix(suffix) else {
                continue;
            };
            let mut candidates = vec![stem.to_owned(), format!("{stem}e")];
            if let Some(without_i) = stem.strip_suffix('i') {
                candidates.push(format!("{without_i}y"));
            }
            let bytes = stem.as_bytes();
            if bytes.len() >= 2 && bytes[bytes.len() - 1] == bytes[bytes.len() - 2] {
                candidates.push(stem[..stem.len() - 1].to_owned());
            }
            if let Some(base) = candidates.iter().find_map(|c| self.comparatives.get(c.as_str())) {
                return Some(base);
            }
        }
        None
    }

    /// Every inflected degree form of a listed base adjective.
    pub fn comparative_forms(&self, base: &str) -> Vec<String> {
        let mut stem = base.to_owned();
        if let Some(without_y) = base.strip_suffix('y') {
            stem = format!("{without_y}i");
        } else if let Some(without_e) = base.strip_suffix('e') {
            stem = without_e.to_owned();
        } else {
            let chars: Vec<char> = base.chars().collect();
            let n = chars.len();
            // big → bigger, hot → hotter: one vowel before a final consonant.
            if n >= 3
                && is_vowel(chars[n - 2])
                && !is_vowel(chars[n - 3])
                && !is_vowel(chars[n - 1])
                && !matches!(chars[n - 1], 'w' | 'x' | 'y')
            {
                stem.push(chars[n - 1]);
            }
        }
        vec![base.to_owned(), format!("{stem}er"), format!("{stem}est")]
    }
}

fn is_vowel(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_lists() -> [(&'static str, &'static str); 4] {
        [
            ("stopwords", STOPWORDS),
            ("question_words", QUESTION_WORDS),
            ("generic_words", GENERIC_WORDS),
            ("comparatives", COMPARATIVES),
        ]
    }

    #[test]
    fn every_list_entry_is_lowercase_letters_and_unique() {
        for (name, text) in all_lists() {
            let mut seen = HashSet::new();
            for entry in entries(text) {
                for word in entry.trim_start_matches('^').split(' ') {
                    assert!(
                        !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase()),
                        "{name}: {entry:?}"
                    );
                }
                assert!(seen.insert(entry), "{name}: duplicate {entry:?}");
            }
        }
    }

    #[test]
    fn the_lists_do_not_overlap() {
        let lexicon = lexicon();
        for word in entries(STOPWORDS) {
            assert!(
                !lexicon.is_question(word),
                "{word} is both a stop word and a question word"
            );
            assert!(!lexicon.is_generic(word), "{word} is both a stop word and generic");
        }
        for word in entries(GENERIC_WORDS) {
            assert!(!lexicon.is_question(word), "{word} is both generic and a question word");
        }
    }

    #[test]
    fn function_and_question_words_are_listed_and_topic_words_are_not() {
        let lexicon = lexicon();
        for word in ["the", "what", "a", "which", "are", "in", "no", "is", "of", "does", "we"] {
            assert!(lexicon.is_stop(word) || lexicon.is_question(word), "{word}");
        }
        for word in [
            "cache",
            "retention",
            "policy",
            "release",
            "keys",
            "vendor",
            "deploy",
            "logs",
            "sqlite",
        ] {
            assert!(!lexicon.is_stop(word) && !lexicon.is_question(word), "{word}");
        }
        assert!(lexicon.is_frame("how", "long"));
        assert!(lexicon.is_starter("are") && lexicon.is_stop("are"));
        assert!(!lexicon.is_question("long"));
        assert!(lexicon.is_generic("status") && !lexicon.is_generic("retention"));
    }

    #[test]
    fn comparatives_fold_onto_listed_adjectives_only() {
        let lexicon = lexicon();
        assert_eq!(lexicon.comparative_base("larger"), Some("large"));
        assert_eq!(lexicon.comparative_base("largest"), Some("large"));
        assert_eq!(lexicon.comparative_base("bigger"), Some("big"));
        assert_eq!(lexicon.comparative_base("easier"), Some("easy"));
        assert_eq!(lexicon.comparative_base("large"), Some("large"));
        assert_eq!(lexicon.comparative_base("router"), None);
        assert_eq!(lexicon.comparative_base("user"), None);
        assert_eq!(lexicon.comparative_forms("big"), ["big", "bigger", "biggest"]);
        assert_eq!(lexicon.comparative_forms("large"), ["large", "larger", "largest"]);
        assert_eq!(lexicon.comparative_forms("early"), ["early", "earlier", "earliest"]);
        assert_eq!(lexicon.comparative_forms("fast"), ["fast", "faster", "fastest"]);
    }
}
