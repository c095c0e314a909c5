//! The retrieval corpus format (`golden/v1/retrieval/`, described in its README): seed
//! records, judged cases and the metric baseline, loaded and cross-checked before any
//! request is sent.
//!
//! These are file formats of the evaluator, not protocol wire types.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::EvalError;

/// The only corpus format version.
pub const SCHEMA_VERSION: u32 = 1;

/// An explicit owner context of a seed record or a case.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Context {
    pub workspace_id: String,
    pub project_id: String,
    #[serde(default)]
    pub task_id: Option<String>,
    #[serde(default)]
    pub pins: Vec<String>,
}

/// One seed record: a labelled mutation applied in file order. (`flatten` rules out
/// `deny_unknown_fields` here; the action structs deny unknown fields themselves.)
#[derive(Clone, Debug, Deserialize)]
pub struct SeedRecord {
    pub label: String,
    pub context: Context,
    #[serde(flatten)]
    pub action: SeedAction,
}

/// What a seed record does. Exactly one key names the action.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeedAction {
    Artifact(ArtifactSeed),
    Revise(ReviseSeed),
    Forget(LifecycleSeed),
    Claim(ClaimSeed),
    Retract(LifecycleSeed),
    Relation(RelationSeed),
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactSeed {
    pub kind: String,
    pub title: String,
    #[serde(default = "default_media_type")]
    pub media_type: String,
    /// Text content; exclusive with `base64`.
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub base64: Option<String>,
    /// Repeats `text` this many times (long documents); default 1.
    #[serde(default)]
    pub repeat_text: Option<usize>,
    /// Appended after the repeated text (evidence deep inside a long document).
    #[serde(default)]
    pub tail: Option<String>,
    /// The text as consecutive sections, each repeated `repeat` times (long documents with
    /// a needle between boilerplate); exclusive with `text` and `base64`.
    #[serde(default)]
    pub sections: Option<Vec<Section>>,
}

/// One section of a long document.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    pub text: String,
    #[serde(default = "one")]
    pub repeat: usize,
}

fn one() -> usize {
    1
}

fn default_media_type() -> String {
    "text/plain; charset=utf-8".to_owned()
}

impl ArtifactSeed {
    /// The full text content, when the artifact is text.
    pub fn full_text(&self) -> Option<String> {
        if let Some(sections) = &self.sections {
            return Some(sections.iter().map(|s| s.text.repeat(s.repeat)).collect());
        }
        let text = self.text.as_ref()?;
        let mut full = text.repeat(self.repeat_text.unwrap_or(1));
        if let Some(tail) = &self.tail {
            full.push_str(tail);
        }
        Some(full)
    }
}

/// A new revision of a labelled artifact; the record's label names the new revision.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviseSeed {
    pub artifact: String,
    pub text: String,
}

/// Forgets an artifact or retracts a claim.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LifecycleSeed {
    pub target: String,
    pub reason: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimSeed {
    pub claim_type: String,
    pub statement: String,
    #[serde(default)]
    pub evidence: Vec<EvidenceSeed>,
    /// Validity bounds in whole days relative to the run (negative is the past).
    #[serde(default)]
    pub valid_from_days: Option<i64>,
    #[serde(default)]
    pub valid_until_days: Option<i64>,
}

/// Evidence: the revision a label created (an artifact put or a revise), narrowed to the one occurrence
/// of `quote` when given.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceSeed {
    pub artifact: String,
    #[serde(default)]
    pub quote: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelationSeed {
    pub source: String,
    pub relation: String,
    pub target: String,
}

/// Whether a failing case fails the run or is only reported.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    #[default]
    Hard,
    Report,
}

impl Gate {
    pub fn as_str(self) -> &'static str {
        match self {
            Gate::Hard => "hard",
            Gate::Report => "report",
        }
    }
}

fn five() -> usize {
    5
}
fn three() -> usize {
    3
}
fn excerpt_default() -> usize {
    320
}
fn context_default() -> usize {
    4096
}
fn ambient() -> String {
    "ambient".to_owned()
}

/// One judged retrieval case.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub id: String,
    /// What the case exercises, for readers of the corpus.
    #[serde(default)]
    pub note: Option<String>,
    pub context: Context,
    pub query: String,
    #[serde(default = "ambient")]
    pub horizon: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default = "five")]
    pub max_claims: usize,
    #[serde(default = "three")]
    pub max_artifact_refs: usize,
    #[serde(default = "excerpt_default")]
    pub max_excerpt_bytes: usize,
    #[serde(default = "context_default")]
    pub max_context_bytes: usize,
    /// `claims`, `artifacts_only` or `none`.
    pub presence: String,
    #[serde(default)]
    pub relevant_claims: Vec<String>,
    #[serde(default)]
    pub relevant_artifacts: Vec<String>,
    /// Labels that must not appear in recall, search or the context manifest.
    #[serde(default)]
    pub forbidden: Vec<String>,
    /// Claim label pairs whose contradiction recall must surface (either orientation).
    #[serde(default)]
    pub conflicts: Vec<[String; 2]>,
    #[serde(default)]
    pub gate: Gate,
    /// The slice of a v2 corpus the case belongs to (see [`Slice`]).
    #[serde(default)]
    pub slice: Option<Slice>,
    /// Artifact label → text its excerpt must show (search hit and recall reference).
    #[serde(default)]
    pub excerpts: BTreeMap<String, String>,
}

/// The slices of a v2 corpus, each with its pass requirement.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Slice {
    ExactIdentifier,
    Lexical,
    Inflection,
    Typo,
    Paraphrase,
    HonestNone,
    LongDocument,
    Decoy,
    Scope,
    Temporal,
    Conflict,
    Broadening,
}

impl Slice {
    pub const ALL: [Slice; 12] = [
        Slice::ExactIdentifier,
        Slice::Lexical,
        Slice::Inflection,
        Slice::Typo,
        Slice::Paraphrase,
        Slice::HonestNone,
        Slice::LongDocument,
        Slice::Decoy,
        Slice::Scope,
        Slice::Temporal,
        Slice::Conflict,
        Slice::Broadening,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Slice::ExactIdentifier => "exact_identifier",
            Slice::Lexical => "lexical",
            Slice::Inflection => "inflection",
            Slice::Typo => "typo",
            Slice::Paraphrase => "paraphrase",
            Slice::HonestNone => "honest_none",
            Slice::LongDocument => "long_document",
            Slice::Decoy => "decoy",
            Slice::Scope => "scope",
            Slice::Temporal => "temporal",
            Slice::Conflict => "conflict",
            Slice::Broadening => "broadening",
        }
    }

    /// The share of the slice's cases that must pass (`None`: reported only). Whatever
    /// the slice, a violation (false answer, forbidden label, scope, parity, budget, an
    /// excerpt citation that does not round-trip) fails the run.
    pub fn required_pass_rate(self) -> Option<f64> {
        match self {
            // Paraphrases need words memory does not use. Decoy, temporal and broadening
            // cases are judged by their forbidden labels and horizons (violations, always
            // hard); their relevance expectations are reported.
            Slice::Paraphrase | Slice::Decoy | Slice::Temporal | Slice::Broadening => None,
            Slice::Typo => Some(0.9),
            _ => Some(1.0),
        }
    }
}

/// Macro metrics a run must not fall below (minus `epsilon`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub corpus_version: String,
    pub macro_claim_recall: f64,
    pub macro_claim_precision: f64,
    pub macro_artifact_recall: f64,
    pub macro_artifact_precision: f64,
    #[serde(default = "default_epsilon")]
    pub epsilon: f64,
}

fn default_epsilon() -> f64 {
    0.02
}

/// A loaded, cross-checked corpus.
#[derive(Clone, Debug)]
pub struct Corpus {
    pub version: String,
    pub seed: Vec<SeedRecord>,
    pub cases: Vec<Case>,
    pub baseline: Baseline,
}

/// Reads one JSONL file; blank lines and lines starting with `//` are skipped.
fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::Corpus(format!("{}: {e}", path.display())))?;
    let mut items = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .map_err(|e| EvalError::Corpus(format!("{}:{}: {e}", path.display(), number + 1)))?;
        if value.get("schema_version").and_then(Value::as_u64) != Some(u64::from(SCHEMA_VERSION)) {
            return Err(EvalError::Corpus(format!(
                "{}:{}: schema_version must be {SCHEMA_VERSION}",
                path.display(),
                number + 1
            )));
        }
        let mut value = value;
        value.as_object_mut().map(|o| o.remove("schema_version"));
        items.push(
            serde_json::from_value(value)
                .map_err(|e| EvalError::Corpus(format!("{}:{}: {e}", path.display(), number + 1)))?,
        );
    }
    Ok(items)
}

impl Corpus {
    /// Loads `seed.jsonl`, `cases.jsonl` and `baseline.json` from `dir` and checks labels,
    /// case ids, horizons and reasons.
    pub fn load(dir: &Path) -> Result<Corpus, EvalError> {
        let version = dir
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let seed: Vec<SeedRecord> = read_jsonl(&dir.join("seed.jsonl"))?;
        let cases: Vec<Case> = read_jsonl(&dir.join("cases.jsonl"))?;
        let baseline_path = dir.join("baseline.json");
        let baseline_text = std::fs::read_to_string(&baseline_path)
            .map_err(|e| EvalError::Corpus(format!("{}: {e}", baseline_path.display())))?;
        let mut baseline_value: Value = serde_json::from_str(&baseline_text)
            .map_err(|e| EvalError::Corpus(format!("{}: {e}", baseline_path.display())))?;
        if baseline_value.get("schema_version").and_then(Value::as_u64) != Some(u64::from(SCHEMA_VERSION)) {
            return Err(EvalError::Corpus("baseline.json: schema_version must be 1".to_owned()));
        }
        baseline_value.as_object_mut().map(|o| o.remove("schema_version"));
        let baseline: Baseline = serde_json::from_value(baseline_value)
            .map_err(|e| EvalError::Corpus(format!("{}: {e}", baseline_path.display())))?;
        if baseline.corpus_version != version {
            return Err(EvalError::Corpus(format!(
                "baseline corpus_version {:?} does not match the corpus directory version {version:?}",
                baseline.corpus_version
            )));
        }
        let corpus = Corpus {
            version,
            seed,
            cases,
            baseline,
        };
        corpus.check()?;
        Ok(corpus)
    }

    fn check(&self) -> Result<(), EvalError> {
        if self.seed.is_empty() || self.cases.is_empty() {
            return Err(EvalError::Corpus("the corpus needs seed records and cases".to_owned()));
        }
        let mut labels: BTreeMap<&str, &SeedAction> = BTreeMap::new();
        for record in &self.seed {
            if labels.insert(&record.label, &record.action).is_some() {
                return Err(EvalError::Corpus(format!("duplicate seed label {}", record.label)));
            }
        }
        let mut ids = HashSet::new();
        for case in &self.cases {
            if !ids.insert(&case.id) {
                return Err(EvalError::Corpus(format!("duplicate case id {}", case.id)));
            }
            if !matches!(case.horizon.as_str(), "ambient" | "workspace" | "personal") {
                return Err(EvalError::Corpus(format!(
                    "case {}: unknown horizon {}",
                    case.id, case.horizon
                )));
            }
            if case.horizon != "ambient" && case.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                return Err(EvalError::Corpus(format!(
                    "case {}: a broadened case needs a reason",
                    case.id
                )));
            }
            if !matches!(case.presence.as_str(), "claims" | "artifacts_only" | "none") {
                return Err(EvalError::Corpus(format!(
                    "case {}: unknown presence {}",
                    case.id, case.presence
                )));
            }
            if self.version != "v1" {
                if case.slice.is_none() {
                    return Err(EvalError::Corpus(format!(
                        "case {}: a {} case needs a slice",
                        case.id, self.version
                    )));
                }
                if case.forbidden.is_empty() {
                    return Err(EvalError::Corpus(format!(
                        "case {}: a {} case names forbidden labels",
                        case.id, self.version
                    )));
                }
            }
            let named = case
                .relevant_claims
                .iter()
                .chain(&case.relevant_artifacts)
                .chain(&case.forbidden)
                .chain(case.conflicts.iter().flatten())
                .chain(case.excerpts.keys());
            for label in named {
                if !labels.contains_key(label.as_str()) {
                    return Err(EvalError::Corpus(format!("case {}: unknown label {label}", case.id)));
                }
            }
        }
        Ok(())
    }
}
