//! Excerpt helpers: an emulation of FTS5 `snippet()` for text that did not come out of
//! an FTS query, cutting text on character boundaries, and lossy byte spans.
//!
//! [`snippet`] reproduces the window choice and highlighting of SQLite's FTS5 snippet
//! over the `unicode61` word split: a word is a maximal run of alphanumeric characters
//! (so `_` separates words), compared after Unicode lowercasing. Diacritic folding is
//! not emulated: `café` does not match `cafe` here, although it does in FTS5.

/// Opens a highlighted match (U+2039).
pub const HIGHLIGHT_OPEN: &str = "\u{2039}";
/// Closes a highlighted match (U+203A).
pub const HIGHLIGHT_CLOSE: &str = "\u{203a}";
/// Marks text left out before or after the window: an ellipsis with a space each side.
pub const ELLIPSIS: &str = " \u{2026} ";
/// The window size the search uses for artifact excerpts.
pub const SNIPPET_TOKENS: usize = 36;
/// FTS5 caps the window at this many words.
const MAX_SNIPPET_TOKENS: usize = 64;

/// Score of each phrase's first hit in a window; every further hit adds 1.
const DISTINCT_HIT_SCORE: usize = 1000;
/// Bonus of a window that starts a sentence, and of one that starts the body.
const SENTENCE_START_BONUS: usize = 100;
const BODY_START_BONUS: usize = 120;

/// One occurrence of a query phrase (or content unit) in the body, in word positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instance {
    /// Index of the first word.
    pub position: usize,
    /// Which phrase or unit matched.
    pub phrase: usize,
    /// Words covered.
    pub len: usize,
}

/// An excerpt and the source bytes `[start, end)` it shows: the excerpt is exactly
/// `body[start..end]` with `‹…›` around matches and [`ELLIPSIS`] before (when `start > 0`)
/// and after (when `end < body.len()`). A window whose source holds `‹` or `›` itself is
/// shown without highlights, so the round trip stays exact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Excerpt {
    pub text: String,
    pub start: usize,
    pub end: usize,
}

/// The weight of one unit in window scoring: a distinct unit of weight 1 scores
/// `DISTINCT_HIT_SCORE` (1000); weights are in those units.
pub fn unit_score(weight: f64) -> usize {
    (weight * DISTINCT_HIT_SCORE as f64).round() as usize
}

/// The best excerpt of at most `max_tokens` words (capped at 64) of `body` for the query
/// words `tokens`, with matches wrapped in `‹…›` and [`ELLIPSIS`] where text is left out.
///
/// Each query word is a phrase: `max_bytes` matches the words `max bytes` in a row. The
/// window with
/// the most distinct phrases wins (more hits break ties, then the earliest); it is
/// centred on its hits, or moved back to the start of the sentence when that keeps the
/// same hits. Without any match the result is the start of the body. An empty body, or
/// `max_tokens == 0`, gives `""`.
pub fn snippet(body: &str, tokens: &[String], max_tokens: usize) -> String {
    let words = word_spans(body);
    let instances = find_instances(body, &words, tokens);
    let scores = vec![DISTINCT_HIT_SCORE; tokens.len()];
    window_excerpt(body, &words, &instances, &scores, max_tokens).text
}

/// The best window of at most `max_tokens` words (capped at 64) of `body` whose words are
/// `words` (from [`word_spans`]), for match `instances` (sorted by position, then phrase)
/// whose phrases score `scores` (see [`unit_score`]): the window with the highest score of
/// distinct phrases wins, as in FTS5's `snippet()`.
pub fn window_excerpt(
    body: &str,
    words: &[(usize, usize)],
    instances: &[Instance],
    scores: &[usize],
    max_tokens: usize,
) -> Excerpt {
    let window = max_tokens.min(MAX_SNIPPET_TOKENS);
    if body.is_empty() || window == 0 {
        return Excerpt {
            text: String::new(),
            start: 0,
            end: 0,
        };
    }
    let start = best_window_start(body, words, instances, scores, window);
    render(body, words, instances, start, window)
}

/// Like [`window_excerpt`], but the excerpt also fits in `max_bytes`: the window shrinks
/// around its matches until it fits. When not even one word around the best match fits,
/// the excerpt is the plain source from the window's start cut on a character boundary
/// (no highlights, no ellipsis). The flag says whether the excerpt is shorter than the
/// full-size window.
pub fn fitted_excerpt(
    body: &str,
    words: &[(usize, usize)],
    instances: &[Instance],
    scores: &[usize],
    max_tokens: usize,
    max_bytes: usize,
) -> (Excerpt, bool) {
    let full = window_excerpt(body, words, instances, scores, max_tokens);
    if full.text.len() <= max_bytes {
        return (full, false);
    }
    let mut window = max_tokens.min(MAX_SNIPPET_TOKENS).min(words.len());
    while window > 1 {
        window -= 1;
        let start = best_window_start(body, words, instances, scores, window);
        let excerpt = render(body, words, instances, start, window);
        if excerpt.text.len() <= max_bytes {
            return (excerpt, true);
        }
    }
    let from = if full.start == 0 { 0 } else { full.start };
    let cut = truncate_to_char_boundary(&body[from..], max_bytes);
    (
        Excerpt {
            text: cut.to_owned(),
            start: from,
            end: from + cut.len(),
        },
        true,
    )
}

/// Renders the window of `window` words from word `start`, with its source range.
fn render(body: &str, words: &[(usize, usize)], instances: &[Instance], start: usize, window: usize) -> Excerpt {
    let last_word = start + window - 1;
    let from = if start == 0 {
        0
    } else {
        words.get(start).map_or(0, |w| w.0)
    };
    let to = if last_word + 1 >= words.len() {
        body.len()
    } else {
        words[last_word].1
    };
    let shown = &body[from..to];
    let marked = shown.contains(HIGHLIGHT_OPEN) || shown.contains(HIGHLIGHT_CLOSE);
    let text = highlight(body, words, if marked { &[] } else { instances }, start, window);
    Excerpt {
        text,
        start: from,
        end: to,
    }
}

pub use super::text::word_spans;

/// Every occurrence of every phrase, ordered by position and then phrase index.
fn find_instances(body: &str, words: &[(usize, usize)], tokens: &[String]) -> Vec<Instance> {
    let lowered: Vec<String> = words
        .iter()
        .map(|&(start, end)| body[start..end].to_lowercase())
        .collect();
    let mut instances = Vec::new();
    for (phrase, token) in tokens.iter().enumerate() {
        let parts: Vec<String> = word_spans(token)
            .iter()
            .map(|&(start, end)| token[start..end].to_lowercase())
            .collect();
        if parts.is_empty() || parts.len() > lowered.len() {
            continue;
        }
        for position in 0..=lowered.len() - parts.len() {
            if lowered[position..position + parts.len()] == parts[..] {
                instances.push(Instance {
                    position,
                    phrase,
                    len: parts.len(),
                });
            }
        }
    }
    instances.sort_by_key(|instance| (instance.position, instance.phrase));
    instances
}

/// Word positions that begin a sentence: the first word, and every word preceded by
/// whitespace that follows a `.` or `:`.
fn sentence_starts(body: &str, words: &[(usize, usize)]) -> Vec<usize> {
    let bytes = body.as_bytes();
    let mut starts = Vec::new();
    for (position, &(start, _)) in words.iter().enumerate() {
        if position == 0 {
            starts.push(0);
            continue;
        }
        let last_visible = bytes[..start]
            .iter()
            .rposition(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
        if let Some(i) = last_visible
            && i + 1 < start
            && matches!(bytes[i], b'.' | b':')
        {
            starts.push(position);
        }
    }
    starts
}

/// Scores the window of `window` words starting at `from` and returns the score and the
/// start that centres the window on its hits.
fn score_window(
    instances: &[Instance],
    scores: &[usize],
    from: usize,
    window: usize,
    doc_size: usize,
) -> (usize, usize) {
    let mut seen = vec![false; scores.len()];
    let mut score = 0;
    let mut first = None;
    let mut last = 0;
    let begin = instances.partition_point(|instance| instance.position < from);
    for instance in instances[begin..]
        .iter()
        .take_while(|instance| instance.position < from + window)
    {
        // A phrase of score 0 is only highlighted (a function word of the query).
        score += match (scores[instance.phrase], seen[instance.phrase]) {
            (0, _) => 0,
            (_, true) => 1,
            (distinct, false) => distinct,
        };
        seen[instance.phrase] = true;
        first.get_or_insert(instance.position);
        last = instance.position + instance.len;
    }
    let first = first.unwrap_or(from) as i64;
    let (window_i, doc_i) = (window as i64, doc_size as i64);
    let mut centred = first - (window_i - (last as i64 - first)) / 2;
    if centred + window_i > doc_i {
        centred = doc_i - window_i;
    }
    (score, centred.max(0) as usize)
}

/// The first word of the best window, chosen as FTS5 does.
fn best_window_start(
    body: &str,
    words: &[(usize, usize)],
    instances: &[Instance],
    scores: &[usize],
    window: usize,
) -> usize {
    let starts = sentence_starts(body, words);
    let doc_size = words.len();
    let (mut best_score, mut best_start) = (0, 0);
    let mut previous = None;
    for instance in instances {
        let position = instance.position;
        // Instances at one position score the same window; only the first can win.
        if previous == Some(position) {
            continue;
        }
        previous = Some(position);
        let (score, centred) = score_window(instances, scores, position, window, doc_size);
        if score > best_score {
            (best_score, best_start) = (score, centred);
        }
        if !starts.is_empty() && doc_size > window {
            let index = starts.partition_point(|&s| s <= position).saturating_sub(1);
            let sentence = starts[index];
            if sentence < position {
                let (score, _) = score_window(instances, scores, sentence, window, doc_size);
                let bonus = if sentence == 0 {
                    BODY_START_BONUS
                } else {
                    SENTENCE_START_BONUS
                };
                if score + bonus > best_score {
                    (best_score, best_start) = (score + bonus, sentence);
                }
            }
        }
    }
    best_start
}

/// Merges overlapping instances into highlight runs of word positions `(first, last)`.
fn coalesce(instances: &[Instance]) -> Vec<(usize, usize)> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for instance in instances {
        let end = instance.position + instance.len - 1;
        match runs.last_mut() {
            Some(run) if instance.position <= run.1 => run.1 = run.1.max(end),
            _ => runs.push((instance.position, end)),
        }
    }
    runs
}

/// Renders the window `[start, start + window)` with highlights and ellipses.
fn highlight(body: &str, words: &[(usize, usize)], instances: &[Instance], start: usize, window: usize) -> String {
    let last_word = start + window - 1;
    let runs = coalesce(instances);
    let mut run = runs.partition_point(|&(first, _)| first < start);
    let mut out = String::new();
    if start > 0 {
        out.push_str(ELLIPSIS);
    }
    let mut copied = 0;
    let mut open = false;
    for (position, &(word_start, word_end)) in words.iter().enumerate().take(last_word + 1) {
        if position < start {
            continue;
        }
        if start > 0 && position == start {
            copied = word_start;
        }
        let current = runs.get(run).copied();
        if open && current.is_none_or(|(first, _)| position <= first) && word_start > copied {
            out.push_str(HIGHLIGHT_CLOSE);
            open = false;
        }
        if current.is_some_and(|(first, _)| first == position) && !open {
            out.push_str(&body[copied..word_start]);
            out.push_str(HIGHLIGHT_OPEN);
            copied = word_start;
            open = true;
        }
        if current.is_some_and(|(_, last)| last == position) {
            if !open {
                out.push_str(HIGHLIGHT_OPEN);
                open = true;
            }
            out.push_str(&body[copied..word_end]);
            copied = word_end;
            run += 1;
        }
        if position == last_word {
            if open {
                if runs.get(run).is_some_and(|(first, _)| position >= *first) {
                    out.push_str(&body[copied..word_end]);
                    copied = word_end;
                }
                out.push_str(HIGHLIGHT_CLOSE);
                open = false;
            }
            out.push_str(&body[copied..word_end]);
            copied = word_end;
        }
    }
    if open {
        out.push_str(HIGHLIGHT_CLOSE);
    }
    if last_word + 1 >= words.len() {
        out.push_str(&body[copied..]);
    } else {
        out.push_str(ELLIPSIS);
    }
    out
}

/// The longest prefix of `s` of at most `max_bytes` bytes that ends on a character
/// boundary.
pub fn truncate_to_char_boundary(s: &str, max_bytes: usize) -> &str {
    &s[..s.floor_char_boundary(max_bytes)]
}

/// The bytes `[start, end)` decoded as lossy UTF-8, or `None` when the span is reversed
/// or reaches past the end.
pub fn lossy_span(bytes: &[u8], start: usize, end: usize) -> Option<String> {
    let span = bytes.get(start..end)?;
    Some(String::from_utf8_lossy(span).into_owned())
}

/// Whether `excerpt` shows exactly `content[start..end]`: equal, or equal once the
/// ellipses marking left-out text at either end and the match highlights are removed
/// (a window whose source holds highlight characters itself is never highlighted).
pub fn excerpt_round_trips(excerpt: &str, content: &[u8], start: usize, end: usize) -> bool {
    if start >= end || end > content.len() {
        return false;
    }
    let Ok(cited) = std::str::from_utf8(&content[start..end]) else {
        return false;
    };
    if excerpt == cited {
        return true;
    }
    let mut body = excerpt;
    if start > 0 {
        let Some(rest) = body.strip_prefix(ELLIPSIS) else {
            return false;
        };
        body = rest;
    }
    if end < content.len() {
        let Some(rest) = body.strip_suffix(ELLIPSIS) else {
            return false;
        };
        body = rest;
    }
    if cited.contains(HIGHLIGHT_OPEN) || cited.contains(HIGHLIGHT_CLOSE) {
        return body == cited;
    }
    body.replace(
        [
            HIGHLIGHT_OPEN.chars().next().unwrap_or_default(),
            HIGHLIGHT_CLOSE.chars().next().unwrap_or_default(),
        ],
        "",
    ) == cited
}

#[cfg(test)]
mod tests;
