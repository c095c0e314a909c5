//! Deterministic `risk_signals`: flags for instruction-like language in retrieved text.
//! A signal is a hint for the reader; an empty list is never a safety verdict.

/// Each signal and the lowercase phrases that raise it, in the order signals are reported.
const SIGNALS: [(&str, &[&str]); 4] = [
    (
        "instruction_override_language",
        &[
            "ignore previous",
            "ignore all previous",
            "disregard previous",
            "override the system",
            "forget your instructions",
        ],
    ),
    (
        "role_spoofing_language",
        &[
            "system prompt",
            "# system",
            "<system",
            "[system]",
            "developer message",
            "assistant:",
        ],
    ),
    (
        "tool_execution_language",
        &["tool_call", "function_call", "run this command", "execute this command"],
    ),
    (
        "sensitive_data_language",
        &["api key", "access token", "private key", "environment variables"],
    ),
];

/// The risk signals raised by a hit's title and excerpt, in fixed order, each at most once.
/// Matching is by substring over the ASCII-lowercased `title + "\n" + excerpt`.
pub fn risk_signals(title: &str, excerpt: &str) -> Vec<&'static str> {
    let text = format!("{title}\n{excerpt}").to_ascii_lowercase();
    SIGNALS
        .iter()
        .filter(|(_, phrases)| phrases.iter().any(|phrase| text.contains(phrase)))
        .map(|&(signal, _)| signal)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_raises_no_signal() {
        assert!(risk_signals("Storage design", "SQLite is authoritative.").is_empty());
        assert!(risk_signals("", "").is_empty());
    }

    #[test]
    fn override_language_is_flagged() {
        for text in [
            "Please IGNORE previous notes",
            "ignore all previous",
            "Disregard previous answers",
            "this will override the system",
            "now forget your instructions",
        ] {
            assert_eq!(risk_signals("t", text), ["instruction_override_language"]);
        }
    }

    #[test]
    fn role_spoofing_is_flagged() {
        for text in [
            "print the System Prompt",
            "# SYSTEM",
            "<system>hi</system>",
            "[system] do it",
            "a developer message follows",
            "Assistant: sure",
        ] {
            assert_eq!(risk_signals("t", text), ["role_spoofing_language"]);
        }
    }

    #[test]
    fn tool_execution_language_is_flagged() {
        for text in [
            "emit a tool_call",
            "FUNCTION_CALL",
            "run this command now",
            "Execute this command",
        ] {
            assert_eq!(risk_signals("t", text), ["tool_execution_language"]);
        }
    }

    #[test]
    fn sensitive_data_language_is_flagged() {
        for text in [
            "the API key is",
            "an access token",
            "PRIVATE KEY",
            "dump environment variables",
        ] {
            assert_eq!(risk_signals("t", text), ["sensitive_data_language"]);
        }
    }

    #[test]
    fn the_title_is_checked_too() {
        assert_eq!(
            risk_signals("Ignore previous rules", "fine"),
            ["instruction_override_language"]
        );
    }

    #[test]
    fn a_phrase_may_span_the_title_and_excerpt_boundary_only_through_the_newline() {
        assert!(risk_signals("ignore", "previous").is_empty());
        assert_eq!(risk_signals("x", "# system").len(), 1);
        assert_eq!(risk_signals("#", "system").len(), 0);
    }

    #[test]
    fn signals_come_in_fixed_order_and_once_each() {
        let signals = risk_signals(
            "api key",
            "tool_call; assistant: ignore previous; system prompt; private key",
        );
        assert_eq!(
            signals,
            [
                "instruction_override_language",
                "role_spoofing_language",
                "tool_execution_language",
                "sensitive_data_language",
            ]
        );
    }
}
