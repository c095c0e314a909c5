//! `memoree eval --locomo DIR`: retrieval measured on LoCoMo-format conversations
//! (Maharana et al., ACL 2024), a benchmark nobody here wrote.
//!
//! Every conversation gets its own store in a throw-away home, seeded through ordinary
//! `artifact.put`s: one artifact per dialogue turn, titled `Speaker, session N (date)`, its
//! text `Speaker: words`, with a shared photo's caption appended as
//! `[shares a photo: caption]`. Then every answerable question (categories 1–4 with evidence)
//! is asked through `search` (limit 10) and through `memory.recall` with its defaults (its
//! artifact references: three, as an agent gets them), and the qualified hits are judged against the question's evidence turns:
//! recall@1/5/10 (the share of evidence turns among the first k), hit@k (at least one among
//! the first k) and the share of questions with no qualified hit at all, per category.
//! `search` is also judged with its near misses appended after the hits (what the ranking
//! found, whether or not it qualified).
//!
//! Unanswerable questions are the questions of *another* conversation (the next one, in file
//! order): its people never appear in this store, so any qualified hit answers what memory
//! does not hold. A bare FTS5 BM25 ranking (an `OR` of the question's words over the same
//! turns' title and text, SQLite's default `bm25()`) runs beside it as the baseline.
//!
//! The measurement is a pure function of the files and the retrieval method (artifact ids
//! never reach the report), so two runs print the same numbers.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_json::{Value, json};

use super::EvalError;
use crate::client::Exchange;
use crate::progress::Progress;
use crate::protocol::artifact::{ArtifactContent, ArtifactPutInput};
use crate::protocol::retrieval::{RecallInput, RecallResult, SearchInput, SearchResult};
use crate::protocol::{AmbientContext, ContextSource, Input, Request};
use crate::retrieval::build_fts_query;
use crate::retrieval::qualify::PolicyVersion;
use crate::service::{InProcess, Runtime, Service};

/// Hits asked of `search` per question.
pub const DEPTH: usize = 10;
/// The cut-offs reported.
pub const CUTOFFS: [usize; 3] = [1, 5, 10];
/// Workspace and project of every seeded turn.
const WORKSPACE: &str = "locomo";
/// Concurrent writers while seeding one store (the writer commits them as groups).
const SEED_WRITERS: usize = 8;

mod data;

pub use data::{Conversation, Question, Turn, category_name, load};

/// Accumulated measures of one way of asking over a set of questions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    pub questions: usize,
    /// Sum over questions of the evidence share within the first k, per cut-off.
    recall_sum: [f64; 3],
    /// Questions with an evidence turn within the first k, per cut-off.
    hits: [usize; 3],
    /// Questions with no result at all.
    pub empty: usize,
}

impl Tally {
    /// Judges one ranked list of `dia_id`s against the evidence.
    fn add(&mut self, ranked: &[String], evidence: &[String]) {
        self.questions += 1;
        if ranked.is_empty() {
            self.empty += 1;
        }
        for (slot, &k) in CUTOFFS.iter().enumerate() {
            let top = &ranked[..ranked.len().min(k)];
            let found = evidence.iter().filter(|e| top.contains(e)).count();
            self.recall_sum[slot] += found as f64 / evidence.len() as f64;
            if found > 0 {
                self.hits[slot] += 1;
            }
        }
    }

    fn merge(&mut self, other: &Tally) {
        self.questions += other.questions;
        self.empty += other.empty;
        for slot in 0..CUTOFFS.len() {
            self.recall_sum[slot] += other.recall_sum[slot];
            self.hits[slot] += other.hits[slot];
        }
    }

    fn share(&self, count: f64) -> f64 {
        if self.questions == 0 {
            0.0
        } else {
            count / self.questions as f64
        }
    }

    /// Mean evidence recall within the first `k` (1, 5 or 10).
    pub fn recall_at(&self, k: usize) -> f64 {
        let slot = CUTOFFS.iter().position(|&c| c == k).unwrap_or(0);
        self.share(self.recall_sum[slot])
    }

    /// Share of questions with an evidence turn within the first `k`.
    pub fn hit_at(&self, k: usize) -> f64 {
        let slot = CUTOFFS.iter().position(|&c| c == k).unwrap_or(0);
        self.share(self.hits[slot] as f64)
    }

    /// Share of questions with no result at all.
    pub fn empty_share(&self) -> f64 {
        self.share(self.empty as f64)
    }

    fn to_json(&self) -> Value {
        json!({
            "questions": self.questions,
            "recall_at_1": round(self.recall_at(1)),
            "recall_at_5": round(self.recall_at(5)),
            "recall_at_10": round(self.recall_at(10)),
            "hit_at_1": round(self.hit_at(1)),
            "hit_at_5": round(self.hit_at(5)),
            "hit_at_10": round(self.hit_at(10)),
            "no_hit": round(self.empty_share()),
        })
    }
}

fn round(value: f64) -> Value {
    json!((value * 10_000.0).round() / 10_000.0)
}

/// The ways a question is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Method {
    /// `search`, qualified hits.
    Search,
    /// `search`, hits then near misses.
    SearchWithNearMisses,
    /// `memory.recall` with its defaults, artifact references.
    Recall,
    /// Bare FTS5 BM25 over the same turns.
    Bm25,
}

impl Method {
    pub const ALL: [Method; 4] = [
        Method::Search,
        Method::SearchWithNearMisses,
        Method::Recall,
        Method::Bm25,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Method::Search => "search",
            Method::SearchWithNearMisses => "search+near_misses",
            Method::Recall => "memory.recall",
            Method::Bm25 => "fts5_bm25_baseline",
        }
    }
}

/// Questions of another conversation that got at least one qualified result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unanswerable {
    pub asked: usize,
    pub answered_by_search: usize,
    pub answered_by_recall: usize,
}

impl Unanswerable {
    fn share(&self, count: usize) -> f64 {
        if self.asked == 0 {
            0.0
        } else {
            count as f64 / self.asked as f64
        }
    }

    pub fn search_share(&self) -> f64 {
        self.share(self.answered_by_search)
    }

    pub fn recall_share(&self) -> f64 {
        self.share(self.answered_by_recall)
    }
}

/// Bounds a run must meet (`memoree eval --gates`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gates {
    pub min_search_recall_at_5: f64,
    pub min_recall_recall_at_5: f64,
    pub max_unanswerable_answered: f64,
}

impl Gates {
    /// Issue 27's gates for lexical retrieval (no model).
    pub const LEXICAL: Gates = Gates {
        min_search_recall_at_5: 0.45,
        min_recall_recall_at_5: 0.43,
        max_unanswerable_answered: 0.03,
    };
    /// Issue 27's gates with a semantic model (potion-base-8M).
    pub const SEMANTIC: Gates = Gates {
        min_search_recall_at_5: 0.50,
        min_recall_recall_at_5: 0.48,
        max_unanswerable_answered: 0.03,
    };
}

/// One gate's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct GateResult {
    pub name: &'static str,
    pub value: f64,
    pub bound: f64,
    pub at_least: bool,
}

impl GateResult {
    pub fn passed(&self) -> bool {
        if self.at_least {
            self.value + 1e-9 >= self.bound
        } else {
            self.value <= self.bound + 1e-9
        }
    }
}

/// Options of one LoCoMo run.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Draw a progress line on stderr (when it is a terminal).
    pub progress: bool,
    /// The qualification policy the stores answer with.
    pub qualification: PolicyVersion,
    pub gates: Option<Gates>,
    /// The semantic model the stores answer with (`--semantic DIR`), or lexical only.
    pub semantic: crate::semantic::State,
    /// A similarity requirement instead of the calibrated one (`--semantic-threshold`).
    pub semantic_threshold: Option<f64>,
}

impl Options {
    /// A fresh service over `data_dir` as this run evaluates it.
    fn open_service(&self, data_dir: &Path) -> Result<Service, EvalError> {
        let store = crate::store::Store::open(data_dir).map_err(|e| EvalError::Seed(e.to_string()))?;
        let runtime = Runtime {
            qualification: self.qualification,
            semantic: self.semantic.clone(),
            semantic_threshold: self.semantic_threshold,
            ..Runtime::default()
        };
        Ok(Service::new(store, runtime))
    }
}

/// The whole LoCoMo evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct LocomoReport {
    pub qualification: PolicyVersion,
    /// The semantic model's digest, `None` for a lexical run.
    pub semantic_model: Option<String>,
    pub conversations: Vec<String>,
    pub turns: usize,
    pub without_evidence: usize,
    /// Method → category (0 = all) → tally.
    pub tallies: BTreeMap<Method, BTreeMap<u8, Tally>>,
    pub unanswerable: Unanswerable,
    pub gates: Vec<GateResult>,
}

impl LocomoReport {
    pub fn overall(&self, method: Method) -> Tally {
        self.tallies
            .get(&method)
            .and_then(|by| by.get(&0))
            .cloned()
            .unwrap_or_default()
    }

    pub fn passed(&self) -> bool {
        self.gates.iter().all(GateResult::passed)
    }

    fn apply_gates(&mut self, gates: &Gates) {
        self.gates = vec![
            GateResult {
                name: "search_recall_at_5",
                value: self.overall(Method::Search).recall_at(5),
                bound: gates.min_search_recall_at_5,
                at_least: true,
            },
            GateResult {
                name: "recall_recall_at_5",
                value: self.overall(Method::Recall).recall_at(5),
                bound: gates.min_recall_recall_at_5,
                at_least: true,
            },
            GateResult {
                name: "unanswerable_answered_search",
                value: self.unanswerable.search_share(),
                bound: gates.max_unanswerable_answered,
                at_least: false,
            },
            GateResult {
                name: "unanswerable_answered_recall",
                value: self.unanswerable.recall_share(),
                bound: gates.max_unanswerable_answered,
                at_least: false,
            },
        ];
    }

    pub fn to_json(&self) -> Value {
        let methods: BTreeMap<&str, Value> = self
            .tallies
            .iter()
            .map(|(method, by)| {
                let categories: BTreeMap<String, Value> = by
                    .iter()
                    .map(|(category, tally)| {
                        let key = if *category == 0 {
                            "all".to_owned()
                        } else {
                            format!("{category}_{}", category_name(*category))
                        };
                        (key, tally.to_json())
                    })
                    .collect();
                (method.as_str(), json!(categories))
            })
            .collect();
        json!({
            "benchmark": "locomo",
            "qualification_policy": self.qualification.as_str(),
            "semantic_model": self.semantic_model,
            "isolated_temporary_store": true,
            "conversations": self.conversations,
            "turns": self.turns,
            "answerable_questions": self.overall(Method::Search).questions,
            "questions_without_evidence": self.without_evidence,
            "methods": methods,
            "unanswerable": {
                "asked": self.unanswerable.asked,
                "answered_by_search": self.unanswerable.answered_by_search,
                "answered_by_recall": self.unanswerable.answered_by_recall,
                "search_share": round(self.unanswerable.search_share()),
                "recall_share": round(self.unanswerable.recall_share()),
                "fts5_bm25_baseline_share": if self.unanswerable.asked == 0 { 0.0 } else { 1.0 },
            },
            "gates": self.gates.iter().map(|g| json!({
                "name": g.name, "value": round(g.value), "bound": g.bound,
                "kind": if g.at_least { "at_least" } else { "at_most" }, "passed": g.passed(),
            })).collect::<Vec<_>>(),
            "passed": self.passed(),
        })
    }

    /// The report as a text table.
    pub fn to_table(&self) -> String {
        let mut out = format!(
            "LoCoMo retrieval ({}, {}): {} conversations ({}), {} turns, {} answerable questions",
            self.qualification.as_str(),
            self.semantic_model
                .as_deref()
                .map_or("lexical only".to_owned(), |d| format!("semantic model {d}")),
            self.conversations.len(),
            self.conversations.join(", "),
            self.turns,
            self.overall(Method::Search).questions
        );
        if self.without_evidence > 0 {
            out.push_str(&format!(
                " ({} without an evidence turn left out)",
                self.without_evidence
            ));
        }
        out.push_str("\n\n");
        out.push_str(&format!(
            "{:<20} {:<13} {:>5} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7}\n",
            "method", "category", "n", "R@1", "R@5", "R@10", "hit@1", "hit@5", "hit@10", "no-hit"
        ));
        for (method, by) in &self.tallies {
            for (category, tally) in by {
                let name = if *category == 0 {
                    "all".to_owned()
                } else {
                    format!("{category} {}", category_name(*category))
                };
                out.push_str(&format!(
                    "{:<20} {:<13} {:>5} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.1}%\n",
                    method.as_str(),
                    name,
                    tally.questions,
                    tally.recall_at(1),
                    tally.recall_at(5),
                    tally.recall_at(10),
                    tally.hit_at(1),
                    tally.hit_at(5),
                    tally.hit_at(10),
                    100.0 * tally.empty_share()
                ));
            }
        }
        out.push_str(
            "(memory.recall is asked with its defaults: at most 3 artifact references, so its R@5 and R@10 are \
             its R@3)\n",
        );
        let u = &self.unanswerable;
        out.push_str(&format!(
            "\nunanswerable (another conversation's questions) answered: search {:.1}% ({}/{}), memory.recall \
             {:.1}% ({}/{}), fts5_bm25_baseline 100%\n",
            100.0 * u.search_share(),
            u.answered_by_search,
            u.asked,
            100.0 * u.recall_share(),
            u.answered_by_recall,
            u.asked
        ));
        for gate in &self.gates {
            out.push_str(&format!(
                "gate {}: {:.4} {} {} — {}\n",
                gate.name,
                gate.value,
                if gate.at_least { ">=" } else { "<=" },
                gate.bound,
                if gate.passed() { "pass" } else { "FAIL" }
            ));
        }
        out
    }
}

/// Evaluates the conversations in `dir`, each in its own fresh store in a temporary home.
pub fn run(dir: &Path, options: &Options) -> Result<LocomoReport, EvalError> {
    let conversations = load(dir)?;
    let home = tempfile::tempdir()?;
    let total_turns: usize = conversations.iter().map(|c| c.turns.len()).sum();
    let total_questions: usize = conversations.iter().map(|c| c.questions.len()).sum();
    let mut seeding = progress(options, "eval: seeding turns", total_turns);
    let mut stores = Vec::with_capacity(conversations.len());
    for (index, conversation) in conversations.iter().enumerate() {
        let service = options.open_service(&home.path().join(format!("store-{index}")))?;
        let turns = seed(&service, conversation)?;
        seeding.inc(conversation.turns.len() as u64);
        stores.push((service, turns));
    }
    seeding.finish();
    let mut tallies: BTreeMap<Method, BTreeMap<u8, Tally>> = BTreeMap::new();
    let mut unanswerable = Unanswerable::default();
    let mut asking = progress(options, "eval: asking questions", 2 * total_questions);
    let result = (|| {
        for (index, conversation) in conversations.iter().enumerate() {
            let (service, turns) = &stores[index];
            let transport = InProcess::new(service.clone());
            let baseline = Bm25Baseline::new(&conversation.turns)?;
            for question in &conversation.questions {
                let asked = ask(&transport, &question.text, turns)?;
                let ranked = [
                    (Method::Search, asked.search),
                    (Method::SearchWithNearMisses, asked.search_with_near_misses),
                    (Method::Recall, asked.recall),
                    (Method::Bm25, baseline.rank(&question.text)?),
                ];
                for (method, list) in ranked {
                    let by = tallies.entry(method).or_default();
                    by.entry(question.category).or_default().add(&list, &question.evidence);
                }
                asking.inc(1);
            }
            // The next conversation's questions: none of its people appear here.
            if conversations.len() > 1 {
                let other = &conversations[(index + 1) % conversations.len()];
                for question in &other.questions {
                    let asked = ask(&transport, &question.text, turns)?;
                    unanswerable.asked += 1;
                    unanswerable.answered_by_search += usize::from(!asked.search.is_empty());
                    unanswerable.answered_by_recall += usize::from(!asked.recall.is_empty());
                    asking.inc(1);
                }
            }
        }
        Ok::<(), EvalError>(())
    })();
    asking.finish();
    for (service, _) in &stores {
        service.store().shutdown();
    }
    result?;
    for by in tallies.values_mut() {
        let mut all = Tally::default();
        for tally in by.values() {
            all.merge(tally);
        }
        by.insert(0, all);
    }
    let mut report = LocomoReport {
        qualification: options.qualification,
        semantic_model: options.semantic.embedder().map(|e| e.digest().to_owned()),
        conversations: conversations.iter().map(|c| c.name.clone()).collect(),
        turns: total_turns,
        without_evidence: conversations.iter().map(|c| c.without_evidence).sum(),
        tallies,
        unanswerable,
        gates: Vec::new(),
    };
    if let Some(gates) = &options.gates {
        report.apply_gates(gates);
    }
    Ok(report)
}

fn progress(options: &Options, label: &'static str, total: usize) -> Progress {
    if options.progress {
        Progress::new(label, total as u64)
    } else {
        Progress::hidden(label, total as u64)
    }
}

fn context() -> AmbientContext {
    AmbientContext::project(WORKSPACE, WORKSPACE)
}

fn request<I: Input>(id: String, input: I) -> Request<I> {
    Request::new(id, input).with_context(context(), ContextSource::Explicit)
}

/// Seeds one artifact per turn, with a few concurrent writers so the single writer commits
/// them in groups. Returns artifact id → `dia_id`.
fn seed(service: &Service, conversation: &Conversation) -> Result<HashMap<String, String>, EvalError> {
    let chunk = conversation.turns.len().div_ceil(SEED_WRITERS).max(1);
    let results: Vec<Result<Vec<(String, String)>, EvalError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = conversation
            .turns
            .chunks(chunk)
            .enumerate()
            .map(|(part, turns)| {
                let transport = InProcess::new(service.clone());
                scope.spawn(move || {
                    let mut ids = Vec::with_capacity(turns.len());
                    for (index, turn) in turns.iter().enumerate() {
                        let input = ArtifactPutInput {
                            kind: "conversation_turn".to_owned(),
                            title: turn.title.clone(),
                            media_type: "text/plain".to_owned(),
                            content: ArtifactContent::Text(turn.text.clone()),
                            provenance: serde_json::Map::from_iter([(
                                "locomo_dia_id".to_owned(),
                                Value::from(turn.dia_id.as_str()),
                            )]),
                            actor: Some(super::seed::ACTOR.to_owned()),
                        };
                        let id = format!("eval-locomo-{part}-{index}");
                        let put = request(id.clone(), input).with_idempotency_key(id);
                        let response = transport.send(&put).map_err(|e| EvalError::Request(e.to_string()))?;
                        let result = match response.into_result() {
                            Some(Ok(result)) => result,
                            Some(Err(error)) => {
                                return Err(EvalError::Seed(format!(
                                    "{}: {}: {}",
                                    turn.dia_id, error.code, error.message
                                )));
                            }
                            None => return Err(EvalError::Seed(format!("{}: an empty envelope", turn.dia_id))),
                        };
                        let id = result["artifact_id"].as_str().unwrap_or_default().to_owned();
                        ids.push((id, turn.dia_id.clone()));
                    }
                    Ok(ids)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(EvalError::Seed("a seeding thread panicked".to_owned())))
            })
            .collect()
    });
    let mut turns = HashMap::with_capacity(conversation.turns.len());
    for part in results {
        turns.extend(part?);
    }
    Ok(turns)
}

/// What one question got: `dia_id`s, best first.
struct Asked {
    search: Vec<String>,
    search_with_near_misses: Vec<String>,
    recall: Vec<String>,
}

fn ask(transport: &InProcess, question: &str, turns: &HashMap<String, String>) -> Result<Asked, EvalError> {
    let dia = |id: &str| turns.get(id).cloned();
    let mut input = SearchInput::new(question);
    input.limit = DEPTH as i64;
    let searched: SearchResult = typed(transport, request("eval-locomo-search".to_owned(), input))?;
    let search: Vec<String> = searched.hits.iter().filter_map(|h| dia(&h.entity_id)).collect();
    let mut search_with_near_misses = search.clone();
    search_with_near_misses.extend(searched.near_misses.iter().filter_map(|m| dia(&m.entity_id)));
    let input = RecallInput::new(question);
    let recalled: RecallResult = typed(transport, request("eval-locomo-recall".to_owned(), input))?;
    let recall = recalled
        .artifact_refs
        .iter()
        .filter_map(|r| dia(r.artifact_id.as_str()))
        .collect();
    Ok(Asked {
        search,
        search_with_near_misses,
        recall,
    })
}

fn typed<I: Input>(transport: &InProcess, request: Request<I>) -> Result<I::Output, EvalError> {
    let response = transport
        .exchange(&request)
        .map_err(|e| EvalError::Request(e.to_string()))?;
    match response.into_result() {
        Some(Ok(result)) => Ok(result),
        Some(Err(error)) => Err(EvalError::Request(format!(
            "{}: {}: {}",
            I::OP,
            error.code,
            error.message
        ))),
        None => Err(EvalError::Request(format!("{}: an empty envelope", I::OP))),
    }
}

/// The baseline: the turns in a bare in-memory FTS5 table (the store's tokenizer), ranked by
/// SQLite's default `bm25()` for an `OR` of the question's words.
struct Bm25Baseline {
    conn: rusqlite::Connection,
    dia_ids: Vec<String>,
}

impl Bm25Baseline {
    fn new(turns: &[Turn]) -> Result<Bm25Baseline, EvalError> {
        let fail = |e: rusqlite::Error| EvalError::Seed(format!("baseline index: {e}"));
        let conn = rusqlite::Connection::open_in_memory().map_err(fail)?;
        conn.execute_batch(
            "CREATE VIRTUAL TABLE turns USING fts5(title, body, tokenize = 'unicode61 remove_diacritics 2');
             BEGIN;",
        )
        .map_err(fail)?;
        for (index, turn) in turns.iter().enumerate() {
            conn.execute(
                "INSERT INTO turns(rowid, title, body) VALUES (?1, ?2, ?3)",
                rusqlite::params![index as i64, turn.title, turn.text],
            )
            .map_err(fail)?;
        }
        conn.execute_batch("COMMIT;").map_err(fail)?;
        Ok(Bm25Baseline {
            conn,
            dia_ids: turns.iter().map(|t| t.dia_id.clone()).collect(),
        })
    }

    fn rank(&self, question: &str) -> Result<Vec<String>, EvalError> {
        let Ok(query) = build_fts_query(question) else {
            return Ok(Vec::new());
        };
        let fail = |e: rusqlite::Error| EvalError::Request(format!("baseline query: {e}"));
        let mut stmt = self
            .conn
            .prepare_cached("SELECT rowid FROM turns WHERE turns MATCH ?1 ORDER BY bm25(turns), rowid LIMIT ?2")
            .map_err(fail)?;
        let rows = stmt
            .query_map(rusqlite::params![query.match_expr, DEPTH as i64], |r| {
                r.get::<_, i64>(0)
            })
            .map_err(fail)?;
        let mut ranked = Vec::new();
        for row in rows {
            let index = row.map_err(fail)? as usize;
            if let Some(id) = self.dia_ids.get(index) {
                ranked.push(id.clone());
            }
        }
        Ok(ranked)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod vector_only;
