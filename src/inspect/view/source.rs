//! Revision content as markup: a cited `[start, end)` byte span highlighted in its
//! surroundings, whole-revision views, and hex views of binary content.
//!
//! Offsets are bytes of the raw revision. Text (valid UTF-8) is cut only at character
//! boundaries when windows are trimmed; a span whose boundary falls inside a character is
//! still shown (lossily) with a warning. The highlighted `<mark class="cited">` holds exactly
//! the cited bytes as text whenever they are whole characters and the span is not elided.

use std::borrow::Cow;

use base64::Engine as _;
use maud::{Markup, html};
use serde_json::Value;

use super::text::{bytes as human_bytes, untrusted};

/// Bytes of context shown on each side of a cited span.
pub const CONTEXT_BYTES: usize = 2048;
/// Spans longer than this show their head and tail only.
pub const MAX_SPAN_BYTES: usize = 64 * 1024;
/// Whole-revision views stop after this many bytes.
pub const MAX_VIEW_BYTES: usize = 256 * 1024;
/// Bytes shown in a hex view.
const HEX_VIEW_BYTES: usize = 1024;

/// The raw bytes of a wire `content` object (`text` or `base64`).
pub fn content_bytes(record: &Value) -> Option<Vec<u8>> {
    let content = record.get("content")?;
    let data = content.get("data")?.as_str()?;
    match content.get("type")?.as_str()? {
        "text" => Some(data.as_bytes().to_vec()),
        "base64" => base64::engine::general_purpose::STANDARD.decode(data).ok(),
        _ => None,
    }
}

/// `index` moved down to a character boundary of `text` (or left as is for non-UTF-8).
fn floor_boundary(bytes: &[u8], mut index: usize) -> usize {
    while index > 0 && index < bytes.len() && (bytes[index] & 0xC0) == 0x80 {
        index -= 1;
    }
    index
}

/// `index` moved up to a character boundary.
fn ceil_boundary(bytes: &[u8], mut index: usize) -> usize {
    while index < bytes.len() && (bytes[index] & 0xC0) == 0x80 {
        index += 1;
    }
    index
}

fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

fn omitted(count: usize, what: &str) -> Markup {
    html! { span.omitted { "⋯ " (human_bytes(count as u64)) " " (what) " ⋯" } }
}

/// A cited span problem the reader must know about.
fn warning(text: &str) -> Markup {
    html! { p.warning { (text) } }
}

/// The revision `bytes` with the span `[start, end)` highlighted (the whole revision when
/// `span` is `None`), in its surrounding context.
pub fn evidence(bytes: &[u8], span: Option<(u64, u64)>) -> Markup {
    let text_like = std::str::from_utf8(bytes).is_ok();
    let Some((start, end)) = span else {
        return html! {
            p.note { "The whole revision (" (human_bytes(bytes.len() as u64)) ") is cited." }
            (whole(bytes))
        };
    };
    let (start, end) = (start as usize, end as usize);
    if start >= end || end > bytes.len() {
        return warning(&format!(
            "The cited span {start}-{end} lies outside this revision of {} bytes.",
            bytes.len()
        ));
    }
    if !text_like {
        return hex_span(bytes, start, end);
    }
    let splits_char = |i: usize| i < bytes.len() && (bytes[i] & 0xC0) == 0x80;
    let split = splits_char(start) || splits_char(end);
    let from = ceil_boundary(bytes, start.saturating_sub(CONTEXT_BYTES));
    let to = floor_boundary(bytes, (end + CONTEXT_BYTES).min(bytes.len()));
    let (from, to) = (from.min(start), to.max(end));
    let span_bytes = &bytes[start..end];
    let elided = span_bytes.len() > MAX_SPAN_BYTES;
    html! {
        @if split {
            (warning("A boundary of this span falls inside a UTF-8 character; the split character is shown as U+FFFD."))
        }
        pre.source {
            @if from > 0 { (omitted(from, "before")) "\n" }
            (untrusted(&lossy(&bytes[from..start])))
            mark.cited data-start=(start) data-end=(end) data-complete=(if elided { "false" } else { "true" }) {
                @if elided {
                    @let head = floor_boundary(span_bytes, MAX_SPAN_BYTES / 2);
                    @let tail = ceil_boundary(span_bytes, span_bytes.len() - MAX_SPAN_BYTES / 2);
                    (untrusted(&lossy(&span_bytes[..head])))
                    (omitted(tail - head, "of the span"))
                    (untrusted(&lossy(&span_bytes[tail..])))
                } @else {
                    (untrusted(&lossy(span_bytes)))
                }
            }
            (untrusted(&lossy(&bytes[end..to])))
            @if to < bytes.len() { "\n" (omitted(bytes.len() - to, "after")) }
        }
    }
}

/// A whole revision: text up to [`MAX_VIEW_BYTES`], or a hex view of binary content.
pub fn whole(bytes: &[u8]) -> Markup {
    if std::str::from_utf8(bytes).is_err() {
        return hex_dump(bytes);
    }
    let shown = floor_boundary(bytes, bytes.len().min(MAX_VIEW_BYTES));
    html! {
        pre.source {
            (untrusted(&lossy(&bytes[..shown])))
            @if shown < bytes.len() { "\n" (omitted(bytes.len() - shown, "more")) }
        }
    }
}

/// Offset, hex and printable ASCII of the first bytes of binary content.
pub fn hex_dump(bytes: &[u8]) -> Markup {
    let shown = &bytes[..bytes.len().min(HEX_VIEW_BYTES)];
    let lines: Vec<String> = shown
        .chunks(16)
        .enumerate()
        .map(|(row, chunk)| {
            let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
            let ascii: String = chunk
                .iter()
                .map(|&b| {
                    if b.is_ascii_graphic() || b == b' ' {
                        b as char
                    } else {
                        '.'
                    }
                })
                .collect();
            format!("{:08x}  {:<47}  {ascii}", row * 16, hex.join(" "))
        })
        .collect();
    html! {
        pre.hex {
            (lines.join("\n"))
            @if shown.len() < bytes.len() { "\n" (omitted(bytes.len() - shown.len(), "more")) }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
}

/// A cited span of binary content as hex, with up to 64 bytes of context on each side.
fn hex_span(bytes: &[u8], start: usize, end: usize) -> Markup {
    const CONTEXT: usize = 64;
    const MAX: usize = 4096;
    let from = start.saturating_sub(CONTEXT);
    let to = (end + CONTEXT).min(bytes.len());
    let cited = &bytes[start..end.min(start + MAX)];
    html! {
        p.note { "Binary content: the cited bytes are shown as hex." }
        pre.hex {
            @if from > 0 { (omitted(from, "before")) "\n" }
            (hex(&bytes[from..start])) " "
            mark.cited data-start=(start) data-end=(end) { (hex(cited)) }
            @if end - start > MAX { " " (omitted(end - start - MAX, "of the span")) }
            " " (hex(&bytes[end..to]))
            @if to < bytes.len() { "\n" (omitted(bytes.len() - to, "after")) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(bytes: &[u8], span: Option<(u64, u64)>) -> String {
        evidence(bytes, span).into_string()
    }

    #[test]
    fn the_cited_bytes_are_exactly_the_highlighted_text() {
        let text = "héllo <wörld> & ünïcode 🦀 tail";
        let start = text.find('<').unwrap();
        let end = text.find(" tail").unwrap();
        let html = render(text.as_bytes(), Some((start as u64, end as u64)));
        let expected = format!(
            "<mark class=\"cited\" data-start=\"{start}\" data-end=\"{end}\" data-complete=\"true\">\
             &lt;wörld&gt; &amp; ünïcode 🦀</mark>"
        );
        assert!(html.contains(&expected), "{html}");
        assert!(!html.contains("warning"));
    }

    #[test]
    fn a_span_inside_a_character_is_shown_with_a_warning() {
        let text = "aé b";
        let html = render(text.as_bytes(), Some((2, 4)));
        assert!(html.contains("falls inside a UTF-8 character"), "{html}");
        assert!(html.contains('\u{fffd}'));
    }

    #[test]
    fn long_revisions_are_windowed_at_character_boundaries() {
        let text = format!("{}needle{}", "é".repeat(3000), "ü".repeat(3000));
        let start = text.find("needle").unwrap();
        let html = render(text.as_bytes(), Some((start as u64, start as u64 + 6)));
        assert!(html.contains("before ⋯") && html.contains("after ⋯"), "{html}");
        assert!(!html.contains('\u{fffd}'));
    }

    #[test]
    fn spans_outside_the_revision_are_reported_not_rendered() {
        assert!(render(b"abc", Some((2, 9))).contains("outside this revision"));
        assert!(render(b"abc", Some((2, 2))).contains("outside this revision"));
    }

    #[test]
    fn binary_content_is_shown_as_hex_and_never_as_text() {
        let bytes = [0x89, b'P', b'N', b'G', 0xff, 0x00, b'<', b'>'];
        let html = render(&bytes, Some((4, 6)));
        assert!(html.contains(">ff 00</mark>"), "{html}");
        let dump = hex_dump(&bytes).into_string();
        assert!(
            dump.contains("89 50 4e 47 ff 00 3c 3e") && dump.contains(".PNG..&lt;&gt;"),
            "{dump}"
        );
    }

    #[test]
    fn wire_content_decodes_from_text_and_base64() {
        let text = serde_json::json!({"content": {"type": "text", "data": "hi"}});
        let b64 = serde_json::json!({"content": {"type": "base64", "data": "AAE="}});
        assert_eq!(content_bytes(&text).unwrap(), b"hi");
        assert_eq!(content_bytes(&b64).unwrap(), [0, 1]);
        assert!(content_bytes(&serde_json::json!({})).is_none());
    }
}
