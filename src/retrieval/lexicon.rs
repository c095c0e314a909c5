//! The curated English word lists of query analysis, kept as data files beside this module
//! (`lexicon/*.txt`, one lowercase word per line, `#` comments) and parsed once.
//!
//! - `stopwords.txt`: function words; never a content unit on their own.
//! - `question_words.txt`: question words and two-word frames (`how long`); never a content
//!   unit, and their presence makes the query a question.
//! - `generic_words.txt`: common words that name no topic; a content unit, at half weight,
//!   that never qualifies a hit alone.
//! - `comparatives.txt`: adjectives whose `-er`/`-est` forms are inflections.
//! - `irregular_verbs.txt`: irregular verbs, the lemma then its irregular forms (`go went
//!   gone`); a form is an inflection of its lemma, beside the Porter2 stemming.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

const STOPWORDS: &str = include_str!("lexicon/stopwords.txt");
const QUESTION_WORDS: &str = include_str!("lexicon/question_words.txt");
const GENERIC_WORDS: &str = include_str!("lexicon/generic_words.txt");
const COMPARATIVES: &str = include_str!("lexicon/comparatives.txt");
const IRREGULAR_VERBS: &str = include_str!("lexicon/irregular_verbs.txt");

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
    /// Irregular form → lemma (`went` → `go`).
    lemmas: HashMap<&'static str, &'static str>,
    /// Lemma → its irregular forms.
    irregular: HashMap<&'static str, Vec<&'static str>>,
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
        for entry in entries(IRREGULAR_VERBS) {
            let mut words = entry.split_whitespace();
            let Some(lemma) = words.next() else { continue };
            let forms: Vec<&'static str> = words.collect();
            for form in &forms {
                lexicon.lemmas.entry(form).or_insert(lemma);
            }
            lexicon.irregular.entry(lemma).or_default().extend(forms);
        }
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

    /// The lemma of an irregular verb form (`went` → `go`, `bought` → `buy`); a lemma maps to
    /// itself, any other word to `None`.
    pub fn lemma(&self, word: &str) -> Option<&'static str> {
        self.lemmas
            .get(word)
            .copied()
            .or_else(|| self.irregular.get_key_value(word).map(|(lemma, _)| *lemma))
    }

    /// The irregular forms of a lemma (`go` → `went`, `gone`); empty for other words.
    pub fn irregular_forms(&self, lemma: &str) -> &[&'static str] {
        self.irregular.get(lemma).map_or(&[], Vec::as_slice)
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

    fn all_lists() -> [(&'static str, &'static str); 5] {
        [
            ("irregular_verbs", IRREGULAR_VERBS),
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

    #[test]
    fn irregular_verb_forms_map_to_their_lemma_and_back() {
        let lexicon = lexicon();
        for (form, lemma) in [
            ("went", "go"),
            ("gone", "go"),
            ("go", "go"),
            ("took", "take"),
            ("taken", "take"),
            ("bought", "buy"),
            ("ran", "run"),
            ("met", "meet"),
            ("saw", "see"),
            ("thought", "think"),
            ("brought", "bring"),
            ("wrote", "write"),
        ] {
            assert_eq!(lexicon.lemma(form), Some(lemma), "{form}");
        }
        assert_eq!(lexicon.irregular_forms("go"), ["went", "gone", "goes"]);
        assert_eq!(lexicon.irregular_forms("buy"), ["bought"]);
        // Regular verbs and other words are the stemmer's business.
        for word in ["walked", "museum", "going", "painting"] {
            assert_eq!(lexicon.lemma(word), None, "{word}");
        }
        assert!(lexicon.irregular_forms("walk").is_empty());
    }

    #[test]
    fn the_irregular_verb_list_covers_the_common_verbs_and_each_form_names_one_lemma() {
        let mut lemmas = HashSet::new();
        let mut forms: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
        for entry in entries(IRREGULAR_VERBS) {
            let mut words = entry.split(' ');
            let lemma = words.next().unwrap();
            assert!(lemmas.insert(lemma), "{lemma} listed twice");
            for form in words {
                assert_ne!(form, lemma, "{entry}");
                if let Some(other) = forms.insert(form, lemma) {
                    panic!("{form} is a form of {other} and of {lemma}");
                }
            }
        }
        assert!(lemmas.len() >= 170, "{} verbs", lemmas.len());
        assert!(forms.len() >= 200, "{} forms", forms.len());
    }
}
