//! Optional local semantics: a static embedding model in the Model2Vec format (a WordPiece
//! `tokenizer.json`, a safetensors embedding matrix and a `config.json`), installed by
//! `memoree semantic install DIR` into the data directory and loaded by the serving process.
//!
//! - `model.rs` checks a model directory and loads it ([`Embedder`]): every file present and
//!   bounded, the matrix two-dimensional and as wide as `config.json` says, every token id of
//!   the tokenizer a row of the matrix, and one probe text embedding to a finite unit vector.
//!   The matrix is kept as int8 with one scale per row (a quarter of its f32 size).
//! - `project.rs` decides what the model reads of a revision (an artifact's title plus body
//!   windows, a claim's statement) and keeps vectors as int8 (`store::vectors` stores them).
//! - `install.rs` copies a checked model into `<data dir>/semantic/` with a manifest
//!   recording its digest, reports it (`status`) and removes it.
//!
//! **Invariants:** nothing here downloads (the crate is built `local-only`, without its hub
//! client); a model is published by one rename after it was checked, so the data directory
//! holds a complete model or none; a model whose files no longer match the recorded digest
//! is not loaded, and the store answers lexically and says why ([`State::Off`]).

use std::path::Path;
use std::sync::Arc;

mod install;
mod model;
pub mod project;

pub use install::{InstallReport, Manifest, install, remove, status};
pub use model::{Embedder, MODEL_FILES, cosine, digest_dir};

pub use crate::paths::SEMANTIC_DIR;
/// The manifest inside [`SEMANTIC_DIR`].
pub const MANIFEST_FILE: &str = "manifest.json";

/// Why a model directory cannot be installed or loaded. Every variant is the caller's
/// `INVALID_REQUEST` except [`SemanticError::Io`] on the data directory.
#[derive(Debug, thiserror::Error)]
pub enum SemanticError {
    #[error("model directory {0}: {1}")]
    BadModel(String, String),
    #[error("the model's digest is {actual}, not the expected {expected}")]
    DigestMismatch { expected: String, actual: String },
    #[error("{0}")]
    Io(String),
}

impl SemanticError {
    fn bad(dir: &Path, message: impl Into<String>) -> SemanticError {
        SemanticError::BadModel(dir.display().to_string(), message.into())
    }

    /// Whether the request was at fault (`INVALID_REQUEST`) rather than the machine.
    pub fn is_invalid_request(&self) -> bool {
        !matches!(self, SemanticError::Io(_))
    }
}

/// Whether the serving process has a model, and if not, why.
#[derive(Clone, Debug)]
pub enum State {
    On(Arc<Embedder>),
    Off(OffReason),
}

/// Why semantics is off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OffReason {
    /// No model was installed (the default).
    NotInstalled,
    /// A model was installed but cannot be loaded now (removed files, a changed digest, a
    /// damaged matrix); the detail says what.
    Unusable(String),
}

impl State {
    /// Loads the model installed in `data_dir`, if any. Never fails: a model that cannot be
    /// loaded leaves semantics off with the reason, and the service answers lexically.
    pub fn load(data_dir: &Path) -> State {
        match install::load_installed(data_dir) {
            Ok(Some(embedder)) => State::On(Arc::new(embedder)),
            Ok(None) => State::Off(OffReason::NotInstalled),
            Err(error) => {
                tracing::warn!(%error, "semantic model not loaded; answering lexically");
                State::Off(OffReason::Unusable(error.to_string()))
            }
        }
    }

    pub fn embedder(&self) -> Option<&Arc<Embedder>> {
        match self {
            State::On(embedder) => Some(embedder),
            State::Off(_) => None,
        }
    }

    /// The wire description (`capabilities.semantic`, `doctor`'s `semantic`).
    pub fn describe(&self) -> crate::protocol::meta::SemanticStatus {
        use crate::protocol::meta::SemanticStatus;
        match self {
            State::On(e) => SemanticStatus {
                enabled: true,
                format: Some("model2vec".to_owned()),
                model_digest: Some(e.digest().to_owned()),
                dimensions: Some(e.dimensions() as u64),
                reason: None,
                vectors: None,
            },
            State::Off(OffReason::NotInstalled) => SemanticStatus {
                reason: Some("no model installed (memoree semantic install DIR)".to_owned()),
                ..SemanticStatus::default()
            },
            State::Off(OffReason::Unusable(detail)) => SemanticStatus {
                reason: Some(format!("the installed model cannot be used: {detail}")),
                ..SemanticStatus::default()
            },
        }
    }
}

impl Default for State {
    fn default() -> State {
        State::Off(OffReason::NotInstalled)
    }
}

#[cfg(test)]
mod tests;
