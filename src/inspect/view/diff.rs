//! A line diff of two text revisions (Myers, from the `similar` crate) as a unified table
//! with three lines of context, bounded in input size and time.

use std::time::Duration;

use maud::{Markup, html};
use similar::{ChangeTag, TextDiff};

use super::text::{bytes, untrusted};

/// Larger revisions are not diffed line by line.
pub const MAX_DIFF_BYTES: usize = 2 * 1024 * 1024;

/// The unified line diff of `old` → `new`.
pub fn lines(old: &str, new: &str) -> Markup {
    if old.len() > MAX_DIFF_BYTES || new.len() > MAX_DIFF_BYTES {
        return html! {
            p.note { "These revisions are too large to diff line by line here (limit " (bytes(MAX_DIFF_BYTES as u64)) ")." }
        };
    }
    if old == new {
        return html! { p.note { "The two revisions have identical content." } };
    }
    let diff = TextDiff::configure()
        .timeout(Duration::from_secs(2))
        .diff_lines(old, new);
    let stats = diff
        .iter_all_changes()
        .fold((0, 0), |(ins, del), change| match change.tag() {
            ChangeTag::Insert => (ins + 1, del),
            ChangeTag::Delete => (ins, del + 1),
            ChangeTag::Equal => (ins, del),
        });
    html! {
        p.note { span.added { "+" (stats.0) } " " span.removed { "−" (stats.1) } " lines" }
        table.diff {
            @for (index, group) in diff.grouped_ops(3).iter().enumerate() {
                @if index > 0 { tr.gap { td colspan="4" { "⋯" } } }
                @for op in group {
                    @for change in diff.iter_changes(op) {
                        @let (class, sign) = match change.tag() {
                            ChangeTag::Insert => ("ins", "+"),
                            ChangeTag::Delete => ("del", "−"),
                            ChangeTag::Equal => ("eq", " "),
                        };
                        tr class=(class) {
                            td.ln { @if let Some(i) = change.old_index() { (i + 1) } }
                            td.ln { @if let Some(i) = change.new_index() { (i + 1) } }
                            td.sign { (sign) }
                            td.line { (untrusted(change.value().trim_end_matches(['\n', '\r']))) }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_are_marked_and_escaped() {
        let html = lines("a\n<b>\nc\n", "a\n<B>\nc\nd\n").into_string();
        assert!(
            html.contains("<tr class=\"del\">") && html.contains("&lt;b&gt;"),
            "{html}"
        );
        assert!(
            html.contains("<tr class=\"ins\">") && html.contains("&lt;B&gt;"),
            "{html}"
        );
        assert!(html.contains("+2") && html.contains("−1"), "{html}");
    }

    #[test]
    fn identical_revisions_say_so() {
        assert!(lines("same", "same").into_string().contains("identical"));
    }
}
