//! The only module that writes to stdout: exactly one JSON envelope per invocation.

#![allow(clippy::print_stdout)]

use std::io::Write;

use crate::protocol::Response;

/// Writes one envelope plus a newline to stdout: compact, or 2-space indented with `pretty`.
pub fn emit(response: &Response, pretty: bool) {
    let text = if pretty {
        serde_json::to_string_pretty(response)
    } else {
        serde_json::to_string(response)
    };
    let text = text.unwrap_or_else(|e| {
        format!(r#"{{"v":1,"request_id":"req_cli","ok":false,"error":{{"code":"INTERNAL_ERROR","message":"internal error: could not encode the response: {e}","retryable":false,"details":null}},"warnings":[]}}"#)
    });
    let mut stdout = std::io::stdout().lock();
    // A closed stdout (e.g. `| head`) is not worth a panic.
    let _ = writeln!(stdout, "{text}");
    let _ = stdout.flush();
}

/// Writes clap's help or version text to stdout.
pub fn emit_text(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = write!(stdout, "{text}");
    let _ = stdout.flush();
}
