//! The remember plan: source loading and validation, title and kind, the preview result and
//! the ordinary protocol mutations an `--apply` submits.
//!
//! Nothing here talks to the daemon. The CLI resolves the ambient context first, calls
//! [`plan`], prints [`RememberPlan::preview_result`] or submits
//! [`RememberPlan::artifact_put`] and then [`RememberPlan::claim_asserts`] with the ids the
//! put returned.
//!
//! **Invariant:** retry identity is anchored to the exact source: the artifact key depends on
//! the source digest, title, kind and label, and each claim key on its exact byte spans, so
//! re-applying the same note replays instead of duplicating. When two claims of one plan
//! cite exactly the same spans, the second and later ones append `#2`, `#3`, … to the span
//! list so they do not collide (the reference would reuse one key for both).

use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use super::CallerError;
use super::compiler::{Compiler, CompilerReport, MAX_COMPILE_SOURCE_BYTES};
use super::findings::{QualityReport, assess};
use super::proposal::{PlanClaims, PlannedClaim, REMEMBER_SCHEMA_VERSION};
use crate::protocol::artifact::{ArtifactContent, ArtifactPutInput};
use crate::protocol::claim::{ClaimAssertInput, EvidenceLocator};
use crate::protocol::limits::{MAX_ARTIFACT_BYTES, MAX_KIND_BYTES, MAX_TITLE_BYTES};
use crate::protocol::local::{PlannedClaimInfo, QuotedSpan, RememberPlanInfo, RememberResult};
use crate::protocol::{Input, Operation, Warning};

/// The artifact kind when `--kind` is not given.
pub const DEFAULT_KIND: &str = "memory_note";
/// The media type of every remembered note.
pub const MEDIA_TYPE: &str = "text/plain; charset=utf-8";
/// The actor when `MEMOREE_ACTOR` is unset.
pub const DEFAULT_ACTOR: &str = "memoree.remember";
/// The title when the note has no non-blank line.
const FALLBACK_TITLE: &str = "Memory note";
/// Bytes of a derived title.
const MAX_DERIVED_TITLE_BYTES: usize = 160;

/// How the note reached memoree. Only a file snapshot is evidence other than the caller's
/// own say-so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceCapture {
    Inline,
    Stdin,
    FileSnapshot,
}

impl SourceCapture {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceCapture::Inline => "inline",
            SourceCapture::Stdin => "stdin",
            SourceCapture::FileSnapshot => "file_snapshot",
        }
    }
}

/// A validated note: non-blank UTF-8 text, how it was captured, and its provenance label
/// (`inline`, `stdin`, or the canonical file path).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RememberSource {
    pub text: String,
    pub capture: SourceCapture,
    pub label: String,
}

impl RememberSource {
    /// Validates raw bytes as a note.
    pub fn from_bytes(bytes: Vec<u8>, capture: SourceCapture, label: impl Into<String>) -> Result<Self, CallerError> {
        if bytes.len() > MAX_ARTIFACT_BYTES {
            return Err(CallerError::ContentTooLarge(format!(
                "the note exceeds {MAX_ARTIFACT_BYTES} bytes"
            )));
        }
        let text = String::from_utf8(bytes).map_err(|_| {
            CallerError::InvalidRequest(
                "remember accepts UTF-8 text only; store binary content with artifact.put".to_owned(),
            )
        })?;
        if text.trim().is_empty() {
            return Err(CallerError::InvalidRequest(
                "remembered text must not be empty".to_owned(),
            ));
        }
        Ok(RememberSource {
            text,
            capture,
            label: label.into(),
        })
    }

    /// Loads the note the way `memoree remember` takes it: `--file PATH`, `-` for stdin, or
    /// the text arguments joined with spaces.
    pub fn load(args: &[String], file: Option<&Path>, stdin: impl Read) -> Result<Self, CallerError> {
        match (file, args) {
            (Some(_), [_, ..]) => Err(CallerError::InvalidRequest(
                "pass either TEXT or --file PATH, not both".to_owned(),
            )),
            (Some(path), []) => {
                let canonical = std::fs::canonicalize(path)
                    .map_err(|e| CallerError::InvalidRequest(format!("cannot read --file {}: {e}", path.display())))?;
                let file = std::fs::File::open(&canonical)
                    .map_err(|e| CallerError::io(format!("opening {}", canonical.display()), e))?;
                let bytes = read_limited(file, &canonical.display().to_string())?;
                RememberSource::from_bytes(bytes, SourceCapture::FileSnapshot, canonical.display().to_string())
            }
            (None, [dash]) if dash == "-" => {
                RememberSource::from_bytes(read_limited(stdin, "stdin")?, SourceCapture::Stdin, "stdin")
            }
            (None, []) => Err(CallerError::InvalidRequest(
                "provide text, `-` for stdin, or `--file PATH`".to_owned(),
            )),
            (None, words) => RememberSource::from_bytes(words.join(" ").into_bytes(), SourceCapture::Inline, "inline"),
        }
    }

    /// BLAKE3 hex of the exact source bytes (equal to the stored blob hash).
    pub fn digest(&self) -> String {
        blake3::hash(self.text.as_bytes()).to_hex().to_string()
    }
}

/// Reads at most one byte past the artifact limit, so an oversized input is refused without
/// reading it all.
fn read_limited(reader: impl Read, what: &str) -> Result<Vec<u8>, CallerError> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_ARTIFACT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CallerError::io(format!("reading {what}"), e))?;
    Ok(bytes)
}

/// The caller's choices besides the note itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RememberOptions {
    pub title: Option<String>,
    pub kind: Option<String>,
    /// The logical idempotency key; derived from the source when absent.
    pub idempotency_key: Option<String>,
}

/// One protocol mutation to submit, in order: its typed input and the idempotency key
/// derived from the exact source.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned<I> {
    pub idempotency_key: String,
    pub input: I,
}

impl<I: Input> Planned<I> {
    /// The operation this mutation is.
    pub fn op(&self) -> Operation {
        I::OP
    }
}

/// A complete remember plan.
#[derive(Clone, Debug, PartialEq)]
pub struct RememberPlan {
    pub source: RememberSource,
    pub title: String,
    pub kind: String,
    pub input_digest: String,
    pub compiler: CompilerReport,
    pub claims: PlanClaims,
    pub quality: QualityReport,
    pub logical_key: String,
}

/// Builds a plan. `compiler: None` is `--raw`: no compilation, the note is stored alone.
/// Options are validated before the compiler runs.
pub fn plan(
    source: RememberSource,
    options: &RememberOptions,
    compiler: Option<&Compiler>,
) -> Result<RememberPlan, CallerError> {
    let Some(compiler) = compiler else {
        return plan_with_claims(source, options, CompilerReport::raw(), PlanClaims::default());
    };
    check_options(options)?;
    if source.text.len() > MAX_COMPILE_SOURCE_BYTES {
        return Err(CallerError::InvalidRequest(format!(
            "the note is {} bytes; claim compilation accepts at most {MAX_COMPILE_SOURCE_BYTES} bytes \
             (use --raw --apply to store it without claims)",
            source.text.len()
        )));
    }
    let claims = compiler.compile(&source.text)?;
    plan_with_claims(source, options, compiler.report(), claims)
}

/// Assembles a plan from already-checked claims (pure). A report with mode `raw` yields a
/// plan without claims.
pub fn plan_with_claims(
    source: RememberSource,
    options: &RememberOptions,
    compiler: CompilerReport,
    claims: PlanClaims,
) -> Result<RememberPlan, CallerError> {
    check_options(options)?;
    let raw = compiler.mode == CompilerReport::raw().mode;
    let claims = if raw { PlanClaims::default() } else { claims };
    let title = options.title.clone().unwrap_or_else(|| derive_title(&source.text));
    let kind = options.kind.clone().unwrap_or_else(|| DEFAULT_KIND.to_owned());
    let input_digest = source.digest();
    let logical_key = match &options.idempotency_key {
        Some(key) => key.clone(),
        None => format!(
            "remember:{}",
            blake3::hash(format!("remember-v2\0{input_digest}\0{title}\0{kind}\0{}", source.label).as_bytes()).to_hex()
        ),
    };
    let quality = assess(source.capture, raw, &claims);
    Ok(RememberPlan {
        source,
        title,
        kind,
        input_digest,
        compiler,
        claims,
        quality,
        logical_key,
    })
}

fn check_options(options: &RememberOptions) -> Result<(), CallerError> {
    if let Some(kind) = &options.kind {
        validate_kind(kind)?;
    }
    if let Some(title) = &options.title {
        if title.trim().is_empty() {
            return Err(CallerError::InvalidRequest("title must not be empty".to_owned()));
        }
        if title.len() > MAX_TITLE_BYTES {
            return Err(CallerError::InvalidRequest(format!(
                "title must not exceed {MAX_TITLE_BYTES} bytes"
            )));
        }
    }
    if options.idempotency_key.as_deref().is_some_and(|k| k.trim().is_empty()) {
        return Err(CallerError::InvalidRequest(
            "idempotency key must not be empty".to_owned(),
        ));
    }
    Ok(())
}

/// A kind is 1..=128 characters from `[A-Za-z0-9_.-]`.
pub fn validate_kind(kind: &str) -> Result<(), CallerError> {
    let valid_chars = kind
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if kind.is_empty() || kind.len() > MAX_KIND_BYTES || !valid_chars {
        return Err(CallerError::InvalidRequest(format!(
            "kind must be 1 to {MAX_KIND_BYTES} characters from A-Z, a-z, 0-9, `_`, `.` and `-`"
        )));
    }
    Ok(())
}

/// The deterministic title: the first non-blank line, cut after its first sentence end
/// (`.`, `!` or `?` before whitespace or the line end), then to 160 bytes.
pub fn derive_title(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or(FALLBACK_TITLE);
    let mut chars = line.char_indices().peekable();
    let mut end = line.len();
    while let Some((i, c)) = chars.next() {
        let at_boundary = chars.peek().is_none_or(|(_, next)| next.is_whitespace());
        if matches!(c, '.' | '!' | '?') && at_boundary {
            end = i + 1;
            break;
        }
    }
    let sentence = &line[..end];
    sentence[..sentence.floor_char_boundary(MAX_DERIVED_TITLE_BYTES)]
        .trim_end()
        .to_owned()
}

/// `MEMOREE_ACTOR`, or [`DEFAULT_ACTOR`]. An empty value is passed on (the daemon rejects it).
pub fn actor_from_env() -> Result<String, CallerError> {
    match std::env::var_os("MEMOREE_ACTOR") {
        None => Ok(DEFAULT_ACTOR.to_owned()),
        Some(value) => value
            .into_string()
            .map_err(|_| CallerError::Config("MEMOREE_ACTOR is not valid UTF-8".to_owned())),
    }
}

impl RememberPlan {
    /// The `result` of a preview (nothing written).
    pub fn preview_result(&self) -> RememberResult {
        RememberResult {
            applied: false,
            input_digest: self.input_digest.clone(),
            compiler: self.compiler.info(),
            plan: RememberPlanInfo {
                title: self.title.clone(),
                kind: self.kind.clone(),
                media_type: MEDIA_TYPE.into(),
                size_bytes: self.source.text.len(),
                claims: self.claims.accepted.iter().map(claim_info).collect(),
                quality: self.quality.info(),
            },
            artifact: None,
            stored_claims: Vec::new(),
        }
    }

    /// The `result` after `--apply`: the preview plus the artifact and the stored claims
    /// (mutation results as the daemon returned them; `stored_claims` omitted when empty).
    pub fn applied_result(&self, artifact: Value, stored_claims: Vec<Value>) -> RememberResult {
        RememberResult {
            applied: true,
            artifact: Some(artifact),
            stored_claims,
            ..self.preview_result()
        }
    }

    /// Warning findings, to copy into the envelope `warnings`.
    pub fn warnings(&self) -> Vec<Warning> {
        self.quality.warnings()
    }

    /// The `artifact.put` that stores the exact note.
    pub fn artifact_put(&self, actor: &str) -> Planned<ArtifactPutInput> {
        let mut provenance = Map::new();
        provenance.insert("source".to_owned(), Value::from(self.source.label.as_str()));
        provenance.insert("input_digest".to_owned(), Value::from(self.input_digest.as_str()));
        provenance.insert(
            "remember_schema_version".to_owned(),
            Value::from(REMEMBER_SCHEMA_VERSION),
        );
        provenance.insert("compiler".to_owned(), Value::from(self.compiler.mode));
        if let Some(model) = self.compiler.model {
            provenance.insert("model".to_owned(), Value::from(model));
        }
        Planned {
            idempotency_key: derived_key(&format!("{}\0artifact", self.logical_key)),
            input: ArtifactPutInput {
                kind: self.kind.clone(),
                title: self.title.clone(),
                media_type: MEDIA_TYPE.to_owned(),
                content: ArtifactContent::Text(self.source.text.clone()),
                provenance,
                actor: Some(actor.to_owned()),
            },
        }
    }

    /// One `claim.assert` per accepted claim, citing the stored revision with exact spans.
    /// Confidence and validity are deliberately unset.
    pub fn claim_asserts(&self, artifact_id: &str, revision_id: &str, actor: &str) -> Vec<Planned<ClaimAssertInput>> {
        let mut seen_spans: Vec<String> = Vec::new();
        self.claims
            .accepted
            .iter()
            .map(|claim| {
                let spans = span_list(claim);
                // Two claims on the same spans get distinct, still deterministic, keys.
                let repeat = seen_spans.iter().filter(|s| **s == spans).count();
                seen_spans.push(spans.clone());
                let suffix = if repeat == 0 {
                    String::new()
                } else {
                    format!("#{}", repeat + 1)
                };
                let evidence = claim
                    .evidence
                    .iter()
                    .map(|span| EvidenceLocator {
                        artifact_id: artifact_id.into(),
                        revision_id: revision_id.into(),
                        start_byte: Some(span.start as u64),
                        end_byte: Some(span.end as u64),
                    })
                    .collect();
                Planned {
                    idempotency_key: derived_key(&format!("{}\0claim-spans:{spans}{suffix}", self.logical_key)),
                    input: ClaimAssertInput {
                        claim_type: claim.claim_type,
                        statement: claim.statement.clone(),
                        confidence: None,
                        evidence,
                        valid_from: None,
                        valid_until: None,
                        actor: Some(actor.to_owned()),
                    },
                }
            })
            .collect()
    }
}

fn span_list(claim: &PlannedClaim) -> String {
    claim
        .evidence
        .iter()
        .map(|s| format!("{}-{}", s.start, s.end))
        .collect::<Vec<_>>()
        .join(",")
}

fn derived_key(material: &str) -> String {
    format!("remember_{}", blake3::hash(material.as_bytes()).to_hex())
}

fn claim_info(claim: &PlannedClaim) -> PlannedClaimInfo {
    PlannedClaimInfo {
        claim_type: claim.claim_type,
        statement: claim.statement.clone(),
        evidence: claim
            .evidence
            .iter()
            .map(|span| QuotedSpan {
                evidence_quote: span.quote.clone(),
                start_byte: span.start,
                end_byte: span.end,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
