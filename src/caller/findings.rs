//! Deterministic quality findings attached to every remember plan.
//!
//! Findings describe how the evidence was obtained and what the plan deliberately leaves
//! out. **Invariant:** they never certify that any content is correct; they only point at
//! what a reviewer should look at.

use super::proposal::{ClaimType, PlanClaims, RejectedClaim};
use super::remember::SourceCapture;
use crate::protocol::Warning;
use crate::protocol::local::{FindingInfo, QualityInfo};

pub const SELF_ATTESTED_SOURCE: &str = "REMEMBER_SELF_ATTESTED_SOURCE";
pub const MUTABLE_OBSERVATION: &str = "REMEMBER_MUTABLE_OBSERVATION";
pub const RELATIONS_NOT_CREATED: &str = "REMEMBER_RELATIONS_NOT_CREATED";
pub const QUOTE_REJECTED: &str = "REMEMBER_QUOTE_REJECTED";

/// Statement bytes quoted back in a rejection message.
const STATEMENT_PREVIEW_BYTES: usize = 160;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Info,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
        }
    }
}

/// One finding. `claim_indexes` are 1-based; for [`QUOTE_REJECTED`] they number the
/// compiler's proposal (the claim is not in the plan), otherwise they number `plan.claims`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    pub claim_indexes: Vec<usize>,
}

impl Finding {
    pub fn info(&self) -> FindingInfo {
        FindingInfo {
            code: self.code.into(),
            severity: self.severity.as_str().into(),
            message: self.message.clone(),
            claim_indexes: self.claim_indexes.clone(),
        }
    }
}

/// The `plan.quality` report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QualityReport {
    pub source_capture: SourceCapture,
    pub findings: Vec<Finding>,
}

impl QualityReport {
    /// True when any finding is a warning.
    pub fn requires_review(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Warning)
    }

    /// The `plan.quality` object.
    pub fn info(&self) -> QualityInfo {
        QualityInfo {
            evidence_basis: "remember_source_revision".into(),
            source_capture: self.source_capture.as_str().into(),
            requires_review: self.requires_review(),
            findings: self.findings.iter().map(Finding::info).collect(),
        }
    }

    /// Warning-severity findings, as envelope warnings.
    pub fn warnings(&self) -> Vec<Warning> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .map(|f| Warning {
                code: f.code.to_owned(),
                message: f.message.clone(),
            })
            .collect()
    }
}

/// Assesses a plan. `raw` plans have no claims and therefore no claim findings.
pub fn assess(capture: SourceCapture, raw: bool, claims: &PlanClaims) -> QualityReport {
    let mut findings = Vec::new();
    let has_claims = !raw && !claims.accepted.is_empty();
    if has_claims && capture != SourceCapture::FileSnapshot {
        findings.push(Finding {
            code: SELF_ATTESTED_SOURCE,
            severity: Severity::Warning,
            message: format!(
                "the evidence is text the caller supplied {}; the quotes show only that the note \
                 says this, so review the claims before relying on them",
                match capture {
                    SourceCapture::Stdin => "on stdin",
                    _ => "inline",
                }
            ),
            claim_indexes: Vec::new(),
        });
    }
    let observations: Vec<usize> = claims
        .accepted
        .iter()
        .enumerate()
        .filter(|(_, c)| c.claim_type == ClaimType::Observation)
        .map(|(i, _)| i + 1)
        .collect();
    if !raw && !observations.is_empty() {
        findings.push(Finding {
            code: MUTABLE_OBSERVATION,
            severity: Severity::Warning,
            message: "observation claims describe a state that may change, and remember sets no \
                      validity window for them; revise or retract them when the state changes"
                .to_owned(),
            claim_indexes: observations,
        });
    }
    if has_claims {
        findings.push(Finding {
            code: RELATIONS_NOT_CREATED,
            severity: Severity::Info,
            message: "remember creates no relations, conflicts or supersessions; link related \
                      memories explicitly if needed"
                .to_owned(),
            claim_indexes: Vec::new(),
        });
    }
    if !raw {
        findings.extend(claims.rejected.iter().map(rejection_finding));
    }
    QualityReport {
        source_capture: capture,
        findings,
    }
}

fn rejection_finding(rejected: &RejectedClaim) -> Finding {
    let reasons: Vec<String> = rejected
        .failures
        .iter()
        .map(|(quote, reason)| format!("evidence quote {quote} {}", reason.describe()))
        .collect();
    Finding {
        code: QUOTE_REJECTED,
        severity: Severity::Warning,
        message: format!(
            "proposed claim {} ({}) will not be stored because {}: \"{}\"",
            rejected.proposal_index,
            rejected.claim_type.as_str(),
            reasons.join(" and "),
            preview(&rejected.statement),
        ),
        claim_indexes: vec![rejected.proposal_index],
    }
}

fn preview(statement: &str) -> String {
    if statement.len() <= STATEMENT_PREVIEW_BYTES {
        return statement.to_owned();
    }
    format!(
        "{}…",
        &statement[..statement.floor_char_boundary(STATEMENT_PREVIEW_BYTES)]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::proposal::{EvidenceSpan, PlannedClaim, QuoteRejection};

    fn planned(index: usize, claim_type: ClaimType) -> PlannedClaim {
        PlannedClaim {
            proposal_index: index,
            claim_type,
            statement: format!("statement {index}"),
            evidence: vec![EvidenceSpan {
                quote: "q".into(),
                start: 0,
                end: 1,
            }],
        }
    }

    fn codes(report: &QualityReport) -> Vec<&'static str> {
        report.findings.iter().map(|f| f.code).collect()
    }

    #[test]
    fn inline_claims_are_self_attested_and_observations_are_indexed() {
        let claims = PlanClaims {
            accepted: vec![planned(1, ClaimType::Fact), planned(2, ClaimType::Observation)],
            rejected: vec![],
        };
        let report = assess(SourceCapture::Inline, false, &claims);
        assert_eq!(
            codes(&report),
            vec![SELF_ATTESTED_SOURCE, MUTABLE_OBSERVATION, RELATIONS_NOT_CREATED]
        );
        assert_eq!(report.findings[1].claim_indexes, vec![2]);
        assert!(report.requires_review());
        let json = serde_json::to_value(report.info()).unwrap();
        assert_eq!(json["evidence_basis"], "remember_source_revision");
        assert_eq!(json["source_capture"], "inline");
        assert!(json["findings"][0].get("claim_indexes").is_none());
        assert_eq!(json["findings"][2]["severity"], "info");
        assert_eq!(report.warnings().len(), 2);
    }

    #[test]
    fn file_snapshots_are_not_self_attested() {
        let claims = PlanClaims {
            accepted: vec![planned(1, ClaimType::Decision)],
            rejected: vec![],
        };
        let report = assess(SourceCapture::FileSnapshot, false, &claims);
        assert_eq!(codes(&report), vec![RELATIONS_NOT_CREATED]);
        assert!(!report.requires_review());
    }

    #[test]
    fn no_claims_and_raw_plans_carry_no_claim_findings() {
        assert!(
            assess(SourceCapture::Stdin, false, &PlanClaims::default())
                .findings
                .is_empty()
        );
        assert!(
            assess(SourceCapture::Inline, true, &PlanClaims::default())
                .findings
                .is_empty()
        );
    }

    #[test]
    fn a_rejected_quote_names_the_claim_quote_and_reason() {
        let claims = PlanClaims {
            accepted: vec![],
            rejected: vec![RejectedClaim {
                proposal_index: 3,
                claim_type: ClaimType::Fact,
                statement: "x".repeat(400),
                failures: vec![(2, QuoteRejection::Ambiguous), (4, QuoteRejection::Missing)],
            }],
        };
        let report = assess(SourceCapture::Stdin, false, &claims);
        assert_eq!(codes(&report), vec![QUOTE_REJECTED]);
        let finding = &report.findings[0];
        assert_eq!(finding.claim_indexes, vec![3]);
        assert!(
            finding.message.starts_with(
                "proposed claim 3 (fact) will not be stored because evidence quote 2 occurs more than once"
            )
        );
        assert!(
            finding
                .message
                .contains("evidence quote 4 does not occur in the source")
        );
        assert!(finding.message.len() < 400);
        assert!(report.requires_review());
    }

    #[test]
    fn no_message_claims_the_content_is_true() {
        let claims = PlanClaims {
            accepted: vec![planned(1, ClaimType::Observation)],
            rejected: vec![RejectedClaim {
                proposal_index: 2,
                claim_type: ClaimType::Fact,
                statement: "s".into(),
                failures: vec![(1, QuoteRejection::OutOfBounds)],
            }],
        };
        for finding in assess(SourceCapture::Inline, false, &claims).findings {
            let lower = finding.message.to_lowercase();
            for word in ["true", "verified", "correct ", "certif", "confirmed"] {
                assert!(!lower.contains(word), "{} says {word}", finding.message);
            }
        }
    }
}
