//! Reading an archive back without importing it: the manifest, every record file's size,
//! record count and BLAKE3 digest, and every blob file re-hashed against its name (what
//! `backup.create` on PostgreSQL checks before it publishes an archive).

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::import::{check_files, read_manifest};
use super::{ArchiveError, BLOBS_DIR, Manifest};
use crate::blob::Digest;
use crate::store::error::StoreResult;

/// Checks the archive at `archive` completely; returns its manifest.
pub fn check_archive(archive: &Path) -> StoreResult<Manifest> {
    let manifest = read_manifest(archive)?;
    check_files(archive, &manifest)?;
    for entry in &manifest.files {
        let mut reader = BufReader::with_capacity(256 * 1024, File::open(archive.join(&entry.name))?);
        let mut hasher = blake3::Hasher::new();
        let mut records = 0u64;
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line)? > 0 {
            hasher.update(&line);
            records += 1;
            line.clear();
        }
        if records != entry.records || hasher.finalize().to_hex().as_str() != entry.blake3 {
            return Err(ArchiveError::Damaged(format!("{} does not match the manifest", entry.name)).into());
        }
    }
    for dir in fs::read_dir(archive.join(BLOBS_DIR))? {
        for file in fs::read_dir(dir?.path())? {
            let file = file?;
            let name = file.file_name().to_string_lossy().into_owned();
            let mut bytes = Vec::new();
            File::open(file.path())?.read_to_end(&mut bytes)?;
            if Digest::parse(&name) != Some(Digest::of(&bytes)) {
                return Err(ArchiveError::Damaged(format!("{BLOBS_DIR} file {name} does not match its name")).into());
            }
        }
    }
    Ok(manifest)
}
