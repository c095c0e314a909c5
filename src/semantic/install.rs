//! `memoree semantic install|status|remove`: the model's copy in `<data dir>/semantic/`.
//!
//! **Invariant:** the copy is staged beside its destination, digested again once written,
//! and published by a rename; a failure at any step leaves the data directory as it was.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::model::{Embedder, MODEL_FILES, digest_dir};
use super::{MANIFEST_FILE, SEMANTIC_DIR, SemanticError};
use crate::fsutil;

/// What `semantic install` recorded beside the model's files.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub model_digest: String,
    pub dimensions: usize,
    /// The directory the model was installed from.
    pub source: String,
    pub installed_at: String,
    pub bytes: u64,
}

/// What an install did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallReport {
    pub manifest: Manifest,
    pub path: String,
    /// The digest of the model this one replaced, if any.
    pub replaced: Option<String>,
}

fn io(what: &str, path: &Path, error: impl std::fmt::Display) -> SemanticError {
    SemanticError::Io(format!("{what} {}: {error}", path.display()))
}

/// Checks the model in `source` (and its digest, when `expected_digest` is given) and
/// installs a copy into `data_dir`, replacing an installed model.
pub fn install(data_dir: &Path, source: &Path, expected_digest: Option<&str>) -> Result<InstallReport, SemanticError> {
    let embedder = Embedder::load(source, expected_digest)?;
    fsutil::ensure_private_dir(data_dir, crate::paths::LAYOUT_ENTRIES)
        .map_err(|e| io("preparing the data directory", data_dir, e))?;
    let staging = tempfile::Builder::new()
        .prefix(".semantic-staging-")
        .tempdir_in(data_dir)
        .map_err(|e| io("creating a staging directory in", data_dir, e))?;
    let mut bytes = 0;
    for (name, _) in MODEL_FILES {
        let to = staging.path().join(name);
        bytes += fs::copy(source.join(name), &to).map_err(|e| io("copying", &source.join(name), e))?;
        fs::File::open(&to)
            .and_then(|f| f.sync_all())
            .map_err(|e| io("syncing", &to, e))?;
    }
    // The copy must be what was checked (a source rewritten meanwhile is refused).
    let copied = digest_dir(staging.path())?;
    if copied != embedder.digest() {
        return Err(SemanticError::BadModel(
            source.display().to_string(),
            "the files changed while they were copied; install again".to_owned(),
        ));
    }
    let manifest = Manifest {
        format: "model2vec".to_owned(),
        model_digest: copied,
        dimensions: embedder.dimensions(),
        source: source.display().to_string(),
        installed_at: crate::timefmt::to_wire(&crate::timefmt::now()),
        bytes,
    };
    let json = serde_json::to_vec_pretty(&manifest).map_err(|e| SemanticError::Io(e.to_string()))?;
    let manifest_path = staging.path().join(MANIFEST_FILE);
    fsutil::write_atomic(&manifest_path, &json, false).map_err(|e| io("writing", &manifest_path, e))?;
    fsutil::fsync_dir(staging.path()).map_err(|e| io("syncing", staging.path(), e))?;

    let destination = data_dir.join(SEMANTIC_DIR);
    let replaced = read_manifest(data_dir).ok().flatten().map(|m| m.model_digest);
    let aside = data_dir.join(format!(".semantic-old-{}", ulid::Ulid::new()));
    let had_one = fs::symlink_metadata(&destination).is_ok();
    if had_one {
        fs::rename(&destination, &aside).map_err(|e| io("moving aside", &destination, e))?;
    }
    let staged = staging.keep();
    if let Err(e) = fsutil::rename_noreplace(&staged, &destination) {
        let _ = fs::remove_dir_all(&staged);
        if had_one {
            let _ = fs::rename(&aside, &destination);
        }
        return Err(io("publishing", &destination, e));
    }
    fsutil::fsync_dir(data_dir).map_err(|e| io("syncing", data_dir, e))?;
    if had_one {
        let _ = fs::remove_dir_all(&aside);
    }
    remove_leftovers(data_dir);
    Ok(InstallReport {
        manifest,
        path: destination.display().to_string(),
        replaced,
    })
}

/// The installed model's manifest, if a model is installed.
pub fn status(data_dir: &Path) -> Result<Option<Manifest>, SemanticError> {
    read_manifest(data_dir)
}

/// Removes the installed model. `Ok(None)`: nothing was installed; `Ok(Some(digest))`: the
/// removed model's recorded digest (`None` inside when its manifest was unreadable).
pub fn remove(data_dir: &Path) -> Result<Option<Option<String>>, SemanticError> {
    let destination = data_dir.join(SEMANTIC_DIR);
    if fs::symlink_metadata(&destination).is_err() {
        return Ok(None);
    }
    let digest = read_manifest(data_dir).ok().flatten().map(|m| m.model_digest);
    // One rename takes the model out of use; deleting its bytes follows.
    let aside = data_dir.join(format!(".semantic-old-{}", ulid::Ulid::new()));
    fs::rename(&destination, &aside).map_err(|e| io("removing", &destination, e))?;
    fsutil::fsync_dir(data_dir).map_err(|e| io("syncing", data_dir, e))?;
    fs::remove_dir_all(&aside).map_err(|e| io("removing", &aside, e))?;
    remove_leftovers(data_dir);
    Ok(Some(digest))
}

/// The model installed in `data_dir`, loaded and checked against its recorded digest.
pub(super) fn load_installed(data_dir: &Path) -> Result<Option<Embedder>, SemanticError> {
    let Some(manifest) = read_manifest(data_dir)? else {
        return Ok(None);
    };
    let dir = data_dir.join(SEMANTIC_DIR);
    let embedder = Embedder::load(&dir, Some(&manifest.model_digest))?;
    if embedder.dimensions() != manifest.dimensions {
        return Err(SemanticError::BadModel(
            dir.display().to_string(),
            format!(
                "dimension mismatch: installed with {} dimensions, the files have {}",
                manifest.dimensions,
                embedder.dimensions()
            ),
        ));
    }
    Ok(Some(embedder))
}

fn read_manifest(data_dir: &Path) -> Result<Option<Manifest>, SemanticError> {
    let dir = data_dir.join(SEMANTIC_DIR);
    if fs::symlink_metadata(&dir).is_err() {
        return Ok(None);
    }
    let path: PathBuf = dir.join(MANIFEST_FILE);
    let bytes = fs::read(&path)
        .map_err(|e| SemanticError::BadModel(dir.display().to_string(), format!("{MANIFEST_FILE}: {e}")))?;
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| SemanticError::BadModel(dir.display().to_string(), format!("{MANIFEST_FILE} is damaged: {e}")))
}

/// Staging and set-aside directories an interrupted install or remove left behind.
fn remove_leftovers(data_dir: &Path) {
    let Ok(entries) = fs::read_dir(data_dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(".semantic-staging-") || name.starts_with(".semantic-old-") {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}
