//! The filesystem content-addressed blob store (CAS) for content above the inline threshold.
//!
//! **Invariant:** a blob file is immutable once published. It is written to `blobs/.tmp`,
//! fsynced, hard-linked into its fan-out path (which never replaces an existing file) and
//! the directory is fsynced. Every read re-hashes the bytes, so corruption is reported as
//! an integrity error instead of being returned. SQLite is authoritative: a blob that no
//! revision references is garbage, never data.

mod digest;

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub use digest::Digest;

use crate::fault::DiskFullFlag;

/// Failures of the blob store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlobError {
    #[error("missing CAS object {digest}")]
    Missing { digest: String },
    #[error("blob digest mismatch for {digest}: the stored bytes hash to {actual}")]
    DigestMismatch { digest: String, actual: String },
    #[error("blob size mismatch for {digest}: expected {expected} bytes, found {actual}")]
    SizeMismatch { digest: String, expected: u64, actual: u64 },
    #[error("blob store I/O on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl BlobError {
    fn io(path: &Path, source: io::Error) -> BlobError {
        BlobError::Io {
            path: path.to_owned(),
            source,
        }
    }

    /// Whether this is a storage-capacity failure (disk full or quota).
    pub fn is_storage_full(&self) -> bool {
        match self {
            BlobError::Io { source, .. } => is_storage_full(source),
            _ => false,
        }
    }
}

/// Whether an I/O error means the disk or quota is full.
pub fn is_storage_full(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
        || error.kind() == io::ErrorKind::StorageFull
}

/// A CAS rooted at `<data>/blobs`.
#[derive(Clone, Debug)]
pub struct BlobStore {
    root: PathBuf,
    disk_full: DiskFullFlag,
}

impl BlobStore {
    /// Opens (creating if needed) a blob store rooted at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<BlobStore, BlobError> {
        let root = root.into();
        let tmp = root.join(".tmp");
        fs::create_dir_all(&tmp).map_err(|e| BlobError::io(&tmp, e))?;
        remove_abandoned_temp_files(&tmp);
        Ok(BlobStore {
            root,
            disk_full: DiskFullFlag::default(),
        })
    }

    /// Makes new objects fail with `ENOSPC` while `flag` is up (see [`crate::fault`]).
    pub fn with_disk_full_flag(mut self, flag: DiskFullFlag) -> BlobStore {
        self.disk_full = flag;
        self
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute path of a blob.
    pub fn path_of(&self, digest: &Digest) -> PathBuf {
        self.root.join(digest.relative_path())
    }

    /// Stores `bytes` durably and returns their digest. An existing object is verified and
    /// reused; a concurrent writer that wins the race is verified too.
    pub fn put(&self, bytes: &[u8]) -> Result<Digest, BlobError> {
        let digest = Digest::of(bytes);
        let dest = self.path_of(&digest);
        if dest.exists() {
            self.verify(&digest, bytes.len() as u64)?;
            return Ok(digest);
        }
        if self.disk_full.is_full() {
            return Err(BlobError::io(&self.root.join(".tmp"), DiskFullFlag::error()));
        }
        let parent = dest.parent().unwrap_or(&self.root);
        let new_fan_out = !parent.exists();
        fs::create_dir_all(parent).map_err(|e| BlobError::io(parent, e))?;
        if new_fan_out {
            // The fan-out directories' own entries must be durable before a commit cites a
            // blob inside them, or a power loss could drop the whole `<h0h1>/<h2h3>` path.
            for dir in [parent.parent().unwrap_or(&self.root), self.root.as_path()] {
                sync_dir(dir).map_err(|e| BlobError::io(dir, e))?;
            }
        }
        let tmp = self
            .root
            .join(".tmp")
            .join(format!("{}.{}", digest.to_hex(), ulid::Ulid::new()));
        let result = write_synced(&tmp, bytes).and_then(|()| match fs::hard_link(&tmp, &dest) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        });
        let _ = fs::remove_file(&tmp);
        let published = result.map_err(|e| BlobError::io(&dest, e))?;
        if published {
            // The link is durable once its directory entry is; a commit may cite it only then.
            sync_dir(parent).map_err(|e| BlobError::io(parent, e))?;
        } else {
            self.verify(&digest, bytes.len() as u64)?;
        }
        Ok(digest)
    }

    /// Reads a blob and verifies its size and digest.
    pub fn get(&self, digest: &Digest, expected_size: u64) -> Result<Vec<u8>, BlobError> {
        let path = self.path_of(digest);
        let mut file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(BlobError::Missing {
                    digest: digest.to_hex(),
                });
            }
            Err(e) => return Err(BlobError::io(&path, e)),
        };
        let mut bytes = Vec::with_capacity(usize::try_from(expected_size).unwrap_or(0));
        file.read_to_end(&mut bytes).map_err(|e| BlobError::io(&path, e))?;
        check(digest, expected_size, &bytes)?;
        Ok(bytes)
    }

    /// Verifies a stored blob without returning it.
    pub fn verify(&self, digest: &Digest, expected_size: u64) -> Result<(), BlobError> {
        self.get(digest, expected_size).map(|_| ())
    }

    /// Whether the object file exists (without verifying it).
    pub fn contains(&self, digest: &Digest) -> bool {
        self.path_of(digest).exists()
    }
}

/// Checks bytes against an expected digest and size (used for inline blobs too).
pub fn check(digest: &Digest, expected_size: u64, bytes: &[u8]) -> Result<(), BlobError> {
    if bytes.len() as u64 != expected_size {
        return Err(BlobError::SizeMismatch {
            digest: digest.to_hex(),
            expected: expected_size,
            actual: bytes.len() as u64,
        });
    }
    let actual = Digest::of(bytes);
    if actual != *digest {
        return Err(BlobError::DigestMismatch {
            digest: digest.to_hex(),
            actual: actual.to_hex(),
        });
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Scratch files older than this were abandoned by a writer that died mid-write (they are
/// never published under their temporary name, so removing them loses nothing).
const ABANDONED_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(600);

/// Best-effort removal of scratch files a killed writer left in `blobs/.tmp`. Only old files
/// go, so a writer in another process that is mid-write is never disturbed.
fn remove_abandoned_temp_files(tmp: &Path) {
    let Ok(entries) = fs::read_dir(tmp) else { return };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|modified| modified.elapsed().is_ok_and(|age| age > ABANDONED_TEMP_AGE));
        if old && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.set_permissions(fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_bytes_are_stored_once_and_read_back_verified() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path().join("blobs")).unwrap();
        let a = store.put(b"same bytes").unwrap();
        let b = store.put(b"same bytes").unwrap();
        assert_eq!(a, b);
        assert_eq!(store.get(&a, 10).unwrap(), b"same bytes");
        let mode = fs::metadata(store.path_of(&a)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(fs::read_dir(dir.path().join("blobs/.tmp")).unwrap().count(), 0);
    }

    #[test]
    fn a_corrupted_blob_is_an_integrity_error_not_data() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path().join("blobs")).unwrap();
        let digest = store.put(b"precious").unwrap();
        let path = store.path_of(&digest);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(&path, b"precioua").unwrap();
        assert!(matches!(store.get(&digest, 8), Err(BlobError::DigestMismatch { .. })));
        fs::remove_file(&path).unwrap();
        assert!(matches!(store.get(&digest, 8), Err(BlobError::Missing { .. })));
    }

    #[test]
    fn opening_removes_old_abandoned_temp_files_but_keeps_fresh_ones() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("blobs");
        BlobStore::open(&root).unwrap();
        let old = root.join(".tmp/abandoned");
        let fresh = root.join(".tmp/in-flight");
        fs::write(&old, b"partial").unwrap();
        fs::write(&fresh, b"partial").unwrap();
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        BlobStore::open(&root).unwrap();
        assert!(!old.exists());
        assert!(fresh.exists());
    }
}
