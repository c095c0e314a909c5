//! `memoree eval`: a retrieval benchmark in a throw-away home, on a judged corpus in the
//! golden format (`--corpus`) or on LoCoMo-format conversations (`--locomo`).
//!
//! Unlike the other commands it prints a report, not an envelope: a table for people, or
//! the report as one JSON document with `--json`. The exit status is 0 when the run met its
//! gates (the corpus's own gates and baseline; for LoCoMo, `--gates`), 1 when it did not. A
//! run that could not happen at all (a missing or malformed corpus) prints an error envelope
//! and exits with its code. Progress goes to stderr when it is a terminal.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::error::CliError;
use super::{GlobalArgs, exit, output};
use crate::eval::{self, locomo};
use crate::protocol::{CLI_REQUEST_ID, Response};
use crate::retrieval::qualify::PolicyVersion;

/// Measure retrieval on a judged corpus or on LoCoMo conversations, in a throw-away home.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  memoree eval --corpus golden/v2/retrieval\n  memoree eval --locomo ../shared/data/locomo-dev --qualification v2 --gates lexical"
)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["corpus", "locomo"])))]
pub struct EvalArgs {
    /// A corpus directory in the golden format (`seed.jsonl`, `cases.jsonl`, `baseline.json`).
    #[arg(long, value_name = "DIR")]
    corpus: Option<PathBuf>,
    /// A directory of LoCoMo-format conversations (`*.json`).
    #[arg(long, value_name = "DIR")]
    locomo: Option<PathBuf>,
    /// Fail (exit 1) unless the LoCoMo run meets these gates.
    #[arg(long, value_enum, requires = "locomo")]
    gates: Option<GateSet>,
    /// The qualification policy the throw-away stores answer with.
    #[arg(long, value_enum, default_value = "v2")]
    qualification: Qualification,
    /// Evaluate with the Model2Vec model in DIR (checked as `semantic install` checks it;
    /// nothing is installed or downloaded).
    #[arg(long, value_name = "DIR")]
    semantic: Option<PathBuf>,
    /// The similarity a partial lexical match needs, instead of the calibrated one
    /// (for calibration).
    #[arg(long, value_name = "COSINE", requires = "semantic", hide = true)]
    semantic_threshold: Option<f64>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// `--qualification`: the policies of `retrieval::qualify`.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Qualification {
    /// `qualified_units_v1`: fixed unit weights and a majority of units.
    V1,
    /// `qualified_units_v2`, what the service answers with: weights from the store's
    /// statistics.
    V2,
}

/// Named gate sets for `--gates`.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum GateSet {
    /// Issue 27's lexical gates: search recall@5 >= 0.45, memory.recall recall@5 >= 0.43,
    /// unanswerable answered <= 3%.
    Lexical,
    /// Issue 27's gates with a model: search recall@5 >= 0.50, memory.recall recall@5 >=
    /// 0.48, unanswerable answered <= 3%.
    Semantic,
}

pub(crate) fn run(args: &EvalArgs, global: &GlobalArgs) -> ExitCode {
    let qualification = match args.qualification {
        Qualification::V1 => PolicyVersion::V1,
        Qualification::V2 => PolicyVersion::V2,
    };
    let outcome = match (&args.corpus, &args.locomo) {
        (Some(dir), _) => semantic_state(args)
            .and_then(|semantic| {
                let runtime = crate::service::Runtime {
                    qualification,
                    semantic,
                    semantic_threshold: args.semantic_threshold,
                    ..crate::service::Runtime::default()
                };
                eval::run_in_process_as(dir, runtime)
            })
            .map(|report| {
                let text = if args.json {
                    json_text(&report.to_json(), global.pretty)
                } else {
                    corpus_table(&report)
                };
                (text, report.passed)
            }),
        (None, Some(dir)) => semantic_state(args).and_then(|semantic| {
            let options = locomo::Options {
                progress: true,
                qualification,
                gates: args.gates.map(|gates| match gates {
                    GateSet::Lexical => locomo::Gates::LEXICAL,
                    GateSet::Semantic => locomo::Gates::SEMANTIC,
                }),
                semantic,
                semantic_threshold: args.semantic_threshold,
            };
            locomo::run(dir, &options).map(|report| {
                let text = if args.json {
                    json_text(&report.to_json(), global.pretty)
                } else {
                    report.to_table()
                };
                (text, report.passed())
            })
        }),
        (None, None) => Err(eval::EvalError::Corpus("name --corpus DIR or --locomo DIR".to_owned())),
    };
    match outcome {
        Ok((text, passed)) => {
            output::emit_text(&text);
            if passed { ExitCode::SUCCESS } else { ExitCode::from(1) }
        }
        Err(error) => {
            let failure = match error {
                eval::EvalError::Corpus(message) => CliError::Invalid(message),
                other => CliError::Internal(other.to_string()),
            };
            let response: Response = failure.at(CLI_REQUEST_ID).into_response();
            output::emit(&response, global.pretty);
            exit::for_response(&response)
        }
    }
}

/// The model of `--semantic DIR`, loaded once for every store of the run.
fn semantic_state(args: &EvalArgs) -> Result<crate::semantic::State, eval::EvalError> {
    let Some(dir) = &args.semantic else {
        return Ok(crate::semantic::State::default());
    };
    crate::semantic::Embedder::load(dir, None)
        .map(|embedder| crate::semantic::State::On(std::sync::Arc::new(embedder)))
        .map_err(|e| eval::EvalError::Corpus(e.to_string()))
}

fn json_text(value: &serde_json::Value, pretty: bool) -> String {
    let text = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    };
    format!("{}\n", text.unwrap_or_default())
}

/// A short table of a golden-corpus run.
fn corpus_table(report: &eval::Report) -> String {
    let m = &report.metrics;
    let mut out = format!(
        "corpus {}: {} cases, {} passed\n\
         macro claim recall {:.4}, precision {:.4}; artifact recall {:.4}, precision {:.4}\n\
         false answers {}, forbidden returned {}, excerpt citation violations {}, budget {}, parity {}, scope {}\n",
        report.corpus_version,
        report.cases.len(),
        report.cases.iter().filter(|c| c.passed()).count(),
        m.claim_recall,
        m.claim_precision,
        m.artifact_recall,
        m.artifact_precision,
        report.false_answers,
        report.forbidden_returned,
        report.excerpt_citation_violations,
        report.budget_violations,
        report.citation_parity_violations,
        report.scope_violations,
    );
    for slice in &report.slices {
        out.push_str(&format!(
            "slice {:<24} {}/{} ({:.0}%){}\n",
            slice.slice.as_str(),
            slice.passed,
            slice.cases,
            100.0 * slice.rate(),
            match slice.required_rate {
                Some(rate) if !slice.meets_requirement() => format!(" — below the required {:.0}%", 100.0 * rate),
                Some(rate) => format!(", required {:.0}%", 100.0 * rate),
                None => ", reported".to_owned(),
            }
        ));
    }
    let label = if report.baseline_is_gate {
        "regression"
    } else {
        "regression (reported: the baseline is the lexical path's)"
    };
    for regression in &report.regressions {
        out.push_str(&format!("{label}: {regression}\n"));
    }
    out.push_str(if report.passed { "passed\n" } else { "FAILED\n" });
    out
}
