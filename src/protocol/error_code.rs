//! Stable wire error codes, their default retryability and their message prefixes.

crate::wire_enum! {
    /// The stable `error.code` values of protocol v1, in the order the protocol lists them.
    pub enum ErrorCode {
        NoAmbientContext = "NO_AMBIENT_CONTEXT",
        InvalidRequest = "INVALID_REQUEST",
        NotFound = "NOT_FOUND",
        /// `citation.get` could not return the cited bytes (`details.citation_error` names
        /// why). The reference's v0.7 code, placed where it places it.
        CitationError = "CITATION_ERROR",
        RevisionConflict = "REVISION_CONFLICT",
        IdempotencyConflict = "IDEMPOTENCY_CONFLICT",
        IndexNotReady = "INDEX_NOT_READY",
        ScopeViolation = "SCOPE_VIOLATION",
        ConfigError = "CONFIG_ERROR",
        ContentTooLarge = "CONTENT_TOO_LARGE",
        IntegrityError = "INTEGRITY_ERROR",
        UnsupportedVersion = "UNSUPPORTED_VERSION",
        TransportError = "TRANSPORT_ERROR",
        ReasonerError = "REASONER_ERROR",
        InternalError = "INTERNAL_ERROR",
    }
}

crate::wire_enum! {
    /// `details.reason` of the client's `TRANSPORT_ERROR` when a TLS session to a
    /// `tls://` endpoint cannot be established. None of them is retryable: each needs a
    /// credential or trust setting changed.
    pub enum TlsFailure {
        /// The server certificate does not chain to the configured CA bundle.
        ServerUntrusted = "tls_server_untrusted",
        /// The server certificate is not valid for the endpoint's host name.
        ServerNameMismatch = "tls_server_name_mismatch",
        /// The server certificate has expired (or is not yet valid).
        ServerCertificateExpired = "tls_server_certificate_expired",
        /// The server requires a client certificate and none was configured.
        ClientCertificateMissing = "tls_client_certificate_missing",
        /// The server refused the client certificate as expired (or not yet valid).
        ClientCertificateExpired = "tls_client_certificate_expired",
        /// The server refused the client certificate: not issued by its client CA.
        ClientCertificateUntrusted = "tls_client_certificate_untrusted",
        /// The certificate is valid but not listed for this server (revoked or never granted).
        ClientCertificateNotListed = "tls_client_certificate_not_listed",
        /// Any other handshake failure (e.g. the endpoint does not speak TLS 1.3).
        HandshakeFailed = "tls_handshake_failed",
    }
}

impl ErrorCode {
    /// Whether a caller may retry the identical request automatically. `REASONER_ERROR`
    /// decides per case; this is its conservative default.
    pub fn default_retryable(self) -> bool {
        matches!(self, ErrorCode::IndexNotReady | ErrorCode::TransportError)
    }

    /// The words every message of this code starts with, e.g. `invalid request` in
    /// `invalid request: title must not be empty`. Error types format their messages with
    /// it (`"{}: {detail}"`) instead of spelling the prefix out.
    pub const fn prefix(self) -> &'static str {
        match self {
            ErrorCode::NoAmbientContext => "no ambient context",
            ErrorCode::InvalidRequest => "invalid request",
            ErrorCode::NotFound => "not found",
            ErrorCode::CitationError => "citation error",
            ErrorCode::RevisionConflict => "revision conflict",
            ErrorCode::IdempotencyConflict => "idempotency conflict",
            ErrorCode::IndexNotReady => "index is not ready",
            ErrorCode::ScopeViolation => "scope violation",
            ErrorCode::ConfigError => "configuration error",
            ErrorCode::ContentTooLarge => "content exceeds the configured size limit",
            ErrorCode::IntegrityError => "integrity check failed",
            ErrorCode::UnsupportedVersion => "unsupported protocol version",
            ErrorCode::TransportError => "transport error",
            ErrorCode::ReasonerError => "reasoning adapter error",
            ErrorCode::InternalError => "internal error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_own_prefix() {
        let mut prefixes: Vec<&str> = ErrorCode::ALL.iter().map(|code| code.prefix()).collect();
        prefixes.sort_unstable();
        prefixes.dedup();
        assert_eq!(prefixes.len(), ErrorCode::ALL.len());
    }
}
