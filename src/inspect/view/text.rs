//! Untrusted text as markup: every character is escaped by maud, and characters that could
//! hide or reorder what a reader sees (C0/C1 controls other than tab and newline, bidi
//! overrides and isolates, zero-width characters, the BOM) are shown as visible `⟨U+XXXX⟩`
//! marks instead of being passed through.

use maud::{Markup, html};

/// Whether `c` is shown as a visible code-point mark rather than as itself.
pub fn is_hidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// Whether `text` holds any character [`is_hidden`] would mark.
pub fn has_hidden(text: &str) -> bool {
    text.chars().any(is_hidden)
}

/// `text` as escaped markup with hidden characters made visible.
pub fn untrusted(text: &str) -> Markup {
    if !has_hidden(text) {
        return html! { (text) };
    }
    let mut pieces: Vec<Result<&str, char>> = Vec::new();
    let mut start = 0;
    for (index, c) in text.char_indices() {
        if is_hidden(c) {
            if start < index {
                pieces.push(Ok(&text[start..index]));
            }
            pieces.push(Err(c));
            start = index + c.len_utf8();
        }
    }
    if start < text.len() {
        pieces.push(Ok(&text[start..]));
    }
    html! {
        @for piece in &pieces {
            @match piece {
                Ok(plain) => (plain),
                Err(c) => span.hidden-char title="hidden or control character" {
                    (format!("⟨U+{:04X}⟩", u32::from(*c)))
                },
            }
        }
    }
}

/// At most `max` bytes of `text`, cut at a character boundary, with an ellipsis when cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// A byte count for people: `512 B`, `4.0 KiB`, `1.5 MiB`.
pub fn bytes(n: u64) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if f < KIB {
        format!("{n} B")
    } else if f < KIB * KIB {
        format!("{:.1} KiB", f / KIB)
    } else if f < KIB * KIB * KIB {
        format!("{:.1} MiB", f / (KIB * KIB))
    } else {
        format!("{:.1} GiB", f / (KIB * KIB * KIB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped_and_hidden_characters_become_visible_marks() {
        let html = untrusted("<script>alert(1)</script> a\u{202e}b\tc\n").into_string();
        assert_eq!(
            html,
            "&lt;script&gt;alert(1)&lt;/script&gt; a<span class=\"hidden-char\" \
             title=\"hidden or control character\">⟨U+202E⟩</span>b\tc\n"
        );
    }

    #[test]
    fn clipping_never_splits_a_character() {
        assert_eq!(clip("héllo", 2), "h…");
        assert_eq!(clip("héllo", 3), "hé…");
        assert_eq!(clip("short", 10), "short");
    }

    #[test]
    fn byte_counts_read_naturally() {
        assert_eq!(bytes(12), "12 B");
        assert_eq!(bytes(2048), "2.0 KiB");
        assert_eq!(bytes(3 * 1024 * 1024 / 2), "1.5 MiB");
    }
}
