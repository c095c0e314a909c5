//! The one table from wire error codes to process exit codes (documented in the README).

use std::process::ExitCode;

use crate::protocol::{ErrorCode, Response};

/// The exit status for a failure with `code`.
pub fn exit_status(code: ErrorCode) -> u8 {
    match code {
        ErrorCode::InvalidRequest
        | ErrorCode::ConfigError
        | ErrorCode::ContentTooLarge
        | ErrorCode::UnsupportedVersion => 2,
        ErrorCode::NotFound => 3,
        ErrorCode::RevisionConflict | ErrorCode::IdempotencyConflict => 4,
        ErrorCode::NoAmbientContext => 5,
        ErrorCode::IndexNotReady => 6,
        ErrorCode::ScopeViolation => 7,
        // CITATION_ERROR is 1 as in the reference v0.7.1 CLI: not one of the v0.2.0 codes
        // a script was written to tell apart.
        ErrorCode::CitationError
        | ErrorCode::IntegrityError
        | ErrorCode::TransportError
        | ErrorCode::ReasonerError
        | ErrorCode::InternalError => 1,
    }
}

/// The exit code for a response: 0 on success, the code's status on failure.
pub fn for_response(response: &Response) -> ExitCode {
    match response.error_code() {
        None if response.ok => ExitCode::SUCCESS,
        None => ExitCode::from(1),
        Some(code) => ExitCode::from(exit_status(code)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_code_has_a_nonzero_exit_status() {
        for code in ErrorCode::ALL {
            assert_ne!(exit_status(code), 0, "{code}");
        }
    }
}
