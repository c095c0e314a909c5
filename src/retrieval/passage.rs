//! The passage a long artifact is cited by.
//!
//! A search hit, a recall artifact reference and a `context.build` item cite an artifact of
//! at most [`WHOLE_CITATION_MAX_BYTES`] as its whole revision. A longer text is cited by the
//! passage its match window lies in (`memoree://artifact/A@R#START-END`), so an agent that
//! follows the citation reads the region that qualified instead of the whole document; the
//! `excerpt_citation` still names exactly the bytes shown, always inside that passage.
//!
//! The passage is the first of these that fits in [`WHOLE_CITATION_MAX_BYTES`]:
//! 1. the paragraphs (text between blank lines) holding the window's matches, plus whatever
//!    of the window lies outside them;
//! 2. the same with lines;
//! 3. the window widened on both sides to [`PASSAGE_TARGET_BYTES`], on whitespace where one
//!    is near.
//!
//! A window longer than the limit on its own (one enormous word) is its own passage. Every
//! boundary is a character boundary of the text, and the same text and window always give
//! the same passage.

/// Texts up to this size are cited as a whole revision; longer ones by a passage.
pub const WHOLE_CITATION_MAX_BYTES: usize = 4096;
/// The size a window is widened to when neither its paragraphs nor its lines fit.
pub const PASSAGE_TARGET_BYTES: usize = 2048;

/// The passage `[start, end)` of `text` holding the window `[from, to)` whose matches span
/// `matched` (a range inside the window; the window itself when it shows no match), or
/// `None` when `text` is short enough to be cited whole. Both must be character-boundary
/// ranges of `text`.
pub fn passage(text: &str, (from, to): (usize, usize), matched: (usize, usize)) -> Option<(usize, usize)> {
    if text.len() <= WHOLE_CITATION_MAX_BYTES {
        return None;
    }
    let (from, to) = (from.min(text.len()), to.min(text.len()).max(from));
    if to - from >= WHOLE_CITATION_MAX_BYTES {
        return Some((from, to));
    }
    let first = matched.0.clamp(from, to);
    let last = matched.1.clamp(first, to);
    for separator in ["\n\n", "\n"] {
        let start = text[..first]
            .rfind(separator)
            .map_or(0, |at| at + separator.len())
            .min(from);
        let end = text[last..].find(separator).map_or(text.len(), |at| last + at).max(to);
        if end - start <= WHOLE_CITATION_MAX_BYTES {
            return Some((start, end));
        }
    }
    Some(widened(text, from, to))
}

/// `[from, to)` widened to about [`PASSAGE_TARGET_BYTES`], split evenly before and after,
/// each edge moved inward to the nearest whitespace within 64 bytes.
fn widened(text: &str, from: usize, to: usize) -> (usize, usize) {
    const SNAP: usize = 64;
    let extra = PASSAGE_TARGET_BYTES.saturating_sub(to - from) / 2;
    let mut start = text.ceil_char_boundary(from.saturating_sub(extra));
    if start > 0 {
        let head_end = text.floor_char_boundary((start + SNAP).min(from));
        let space = text[start..head_end].char_indices().find(|(_, c)| c.is_whitespace());
        if let Some((at, space)) = space {
            start += at + space.len_utf8();
        }
    }
    let mut end = text.floor_char_boundary((to + extra).min(text.len()));
    if end < text.len() {
        let tail_start = text.ceil_char_boundary(end.saturating_sub(SNAP).max(to));
        if let Some(at) = text[tail_start..end].rfind(char::is_whitespace) {
            end = tail_start + at;
        }
    }
    (start.min(from), end.max(to))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filler(lines: usize) -> String {
        (0..lines)
            .map(|i| format!("line {i} of the runbook says nothing much\n"))
            .collect()
    }

    #[test]
    fn a_short_text_is_cited_whole() {
        let text = "The release keys are signed by the build vendor.";
        assert_eq!(passage(text, (4, 11), (4, 11)), None);
        let exactly = "x".repeat(WHOLE_CITATION_MAX_BYTES);
        assert_eq!(passage(&exactly, (0, 10), (0, 10)), None);
    }

    #[test]
    fn a_long_text_is_cited_by_the_paragraph_the_window_lies_in() {
        let before = filler(80);
        let paragraph = "The billing exporter deploys from the ops runbook.\nIts key rotates monthly.";
        let text = format!("{before}\n{paragraph}\n\n{}", filler(80));
        let from = text.find("billing").unwrap();
        let to = from + "billing exporter".len();
        let (start, end) = passage(&text, (from, to), (from, to)).unwrap();
        assert_eq!(&text[start..end], paragraph);
        // A window reaching into the next paragraph takes only what it shows of it.
        let shown_end = to + text[to..].find("line 3 of").unwrap();
        let (start, end) = passage(&text, (from, shown_end), (from, to)).unwrap();
        assert_eq!(&text[start..end], &text[start..shown_end]);
        assert!(text[start..end].starts_with(paragraph));
    }

    #[test]
    fn a_window_across_paragraphs_gets_every_paragraph_it_touches() {
        let text = format!("{}\n\nfirst part\n\nsecond part\n\n{}", filler(60), filler(60));
        let from = text.find("part").unwrap();
        let to = text.find("second").unwrap() + 6;
        let (start, end) = passage(&text, (from, to), (from, to)).unwrap();
        assert_eq!(&text[start..end], "first part\n\nsecond part");
    }

    #[test]
    fn without_paragraphs_the_lines_the_window_touches_are_the_passage() {
        let text = filler(200);
        let from = text.find("line 100 ").unwrap() + 5;
        let to = from + 3;
        let (start, end) = passage(&text, (from, to), (from, to)).unwrap();
        assert_eq!(&text[start..end], "line 100 of the runbook says nothing much");
    }

    #[test]
    fn one_long_line_is_widened_around_the_window_on_whitespace() {
        let text = "word ".repeat(3000) + "needle " + &"wörd ".repeat(3000);
        let from = text.find("needle").unwrap();
        let to = from + "needle".len();
        let (start, end) = passage(&text, (from, to), (from, to)).unwrap();
        assert!(start <= from && end >= to);
        assert!(end - start <= PASSAGE_TARGET_BYTES + 1, "{}", end - start);
        assert!(end - start >= PASSAGE_TARGET_BYTES - 130, "{}", end - start);
        assert!(text.is_char_boundary(start) && text.is_char_boundary(end));
        assert!(text[start..].starts_with("word"), "{:?}", &text[start..start + 10]);
        assert!(text[..end].ends_with("wörd"), "{:?}", &text[end - 10..end]);
    }

    #[test]
    fn a_window_longer_than_the_limit_is_its_own_passage() {
        let text = "x".repeat(3 * WHOLE_CITATION_MAX_BYTES);
        assert_eq!(passage(&text, (10, 5000), (20, 30)), Some((10, 5000)));
    }

    #[test]
    fn every_passage_holds_its_window_on_character_boundaries() {
        let text = "ä b\n".repeat(1500) + &"ü ".repeat(2000);
        let mut from = 0;
        while from < text.len() {
            let to = text.ceil_char_boundary(from + 7).min(text.len());
            let (start, end) = passage(&text, (from, to), (from, to)).unwrap();
            assert!(start <= from && to <= end && end <= text.len());
            assert!(text.is_char_boundary(start) && text.is_char_boundary(end));
            from = text.ceil_char_boundary(from + 997);
        }
    }
}
