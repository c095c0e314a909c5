//! From the catalog to trials: one per case file or golden scenario × transport, each with
//! its level and basis, filtered by level and name. A trial starts from a fresh, empty store.

use std::path::PathBuf;
use std::sync::Arc;

use super::case::{self, Case};
use super::catalog::{Catalog, ScenarioKind, case_name};
use super::golden::{self, ScenarioMeta};
use super::level::Level;
use super::schema::Checks;
use super::transport::Transport;

/// Which levels a run selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelFilter {
    /// Only `v1`-level trials: what another v1 implementation must pass.
    V1,
    /// `v1` and `v1.7` trials: what an implementation of the reference's v0.7.1 must pass.
    V17,
    /// Every trial, Memoree's own choices included.
    All,
}

impl LevelFilter {
    pub fn parse(text: &str) -> Result<LevelFilter, String> {
        match text {
            "v1" => Ok(LevelFilter::V1),
            "v1.7" => Ok(LevelFilter::V17),
            "all" => Ok(LevelFilter::All),
            other => Err(format!("--level must be v1, v1.7 or all, not {other:?}")),
        }
    }

    /// Whether a trial at `level` is selected; a file that failed to load (no level) always is,
    /// so a broken case fails loudly instead of disappearing.
    pub fn selects(self, level: Option<Level>) -> bool {
        match self {
            LevelFilter::V1 => level.is_none_or(|l| l == Level::V1),
            LevelFilter::V17 => level.is_none_or(|l| l != Level::Memoree),
            LevelFilter::All => true,
        }
    }
}

enum Body {
    Case(Arc<Result<Case, String>>),
    Scenario {
        dir: String,
        kind: ScenarioKind,
        meta: Arc<Result<ScenarioMeta, String>>,
    },
}

/// One case or scenario on one transport.
pub struct Trial {
    /// `v1/artifact/put_text::daemon`.
    pub name: String,
    /// `v1/artifact/put_text` (the case or scenario, without the transport).
    pub item: String,
    pub transport_name: &'static str,
    /// `None` when the file could not be loaded (the trial then fails with the reason).
    pub level: Option<Level>,
    pub basis: Vec<String>,
    pub description: String,
    /// Why the trial cannot run on this transport, when it cannot.
    pub skip: Option<String>,
    body: Body,
    transport: Arc<dyn Transport>,
    catalog: Arc<Catalog>,
    checks: Arc<Checks>,
    /// `UPDATE_GOLDEN=1`: the checkout whose golden responses are rewritten.
    update: Option<PathBuf>,
}

impl std::fmt::Debug for Trial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trial")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Trial {
    /// Runs the trial on a fresh store of its transport.
    pub fn run(&self) -> Result<(), String> {
        match &self.body {
            Body::Case(loaded) => {
                let case = loaded.as_ref().as_ref().map_err(Clone::clone)?;
                // The problem first (a report's one-line summary), then what the case is about.
                case.run(self.transport.as_ref(), &self.checks)
                    .map_err(|e| format!("{e}\ncase {}: {}", self.item, case.description))
            }
            Body::Scenario { dir, kind, meta } => {
                let meta = meta.as_ref().as_ref().map_err(Clone::clone)?;
                match kind {
                    ScenarioKind::Corpus => super::retrieval::run(&self.catalog, dir, self.transport.as_ref()),
                    ScenarioKind::Transcript => golden::run(
                        &self.catalog,
                        dir,
                        meta.level,
                        self.transport.as_ref(),
                        &self.checks,
                        self.update.as_deref(),
                    ),
                }
            }
        }
    }
}

/// What to plan.
pub struct PlanOptions {
    pub level: LevelFilter,
    /// Rewrites golden responses below this checkout instead of comparing them.
    pub update: Option<PathBuf>,
}

/// Every trial of `catalog` on `transports`, in catalog order (cases, then scenarios), each
/// case's trials grouped together.
pub fn plan(
    catalog: &Arc<Catalog>,
    transports: &[Arc<dyn Transport>],
    checks: &Arc<Checks>,
    options: &PlanOptions,
) -> Vec<Trial> {
    let mut trials = Vec::new();
    let make =
        |item: &str, transport: &Arc<dyn Transport>, body: Body, level, basis: &[String], description: &str, skip| {
            Trial {
                name: format!("{item}::{}", transport.name()),
                item: item.to_owned(),
                transport_name: transport.name(),
                level,
                basis: basis.to_vec(),
                description: description.to_owned(),
                skip,
                body,
                transport: transport.clone(),
                catalog: catalog.clone(),
                checks: checks.clone(),
                update: options.update.clone(),
            }
        };
    for (path, bytes) in catalog.case_files() {
        let item = case_name(path);
        let loaded = Arc::new(case::load(path, bytes));
        let (level, basis, description) = match loaded.as_ref() {
            Ok(case) => (Some(case.level), case.basis.clone(), case.description.clone()),
            Err(_) => (None, Vec::new(), String::new()),
        };
        if !options.level.selects(level) {
            continue;
        }
        for transport in transports {
            if let Ok(case) = loaded.as_ref()
                && !case.applies_to(transport.name())
            {
                continue;
            }
            // A shared, running daemon cannot offer a fresh store per trial.
            let skip = (transport.name() == "endpoint"
                && !loaded.as_ref().as_ref().is_ok_and(Case::is_store_independent))
            .then(|| "needs a fresh store, which a running daemon (--endpoint) cannot offer".to_owned());
            let body = Body::Case(loaded.clone());
            trials.push(make(&item, transport, body, level, &basis, &description, skip));
        }
    }
    for scenario in catalog.scenarios() {
        let meta = Arc::new(golden::load_meta(catalog, &scenario.dir));
        let (level, basis, description) = match meta.as_ref() {
            Ok(meta) => (Some(meta.level), meta.basis.clone(), meta.description.clone()),
            Err(_) => (None, Vec::new(), String::new()),
        };
        if !options.level.selects(level) {
            continue;
        }
        for (index, transport) in transports.iter().enumerate() {
            let skip = if transport.name() == "endpoint" {
                Some("a scenario needs a fresh store, which a running daemon (--endpoint) cannot offer".to_owned())
            } else if options.update.is_some() && index > 0 {
                // Under UPDATE_GOLDEN=1 only the first transport writes; the others would race it.
                Some("UPDATE_GOLDEN=1 rewrites through the first transport only".to_owned())
            } else {
                None
            };
            let body = Body::Scenario {
                dir: scenario.dir.clone(),
                kind: scenario.kind,
                meta: meta.clone(),
            };
            trials.push(make(&scenario.dir, transport, body, level, &basis, &description, skip));
        }
    }
    trials
}
