//! Injected storage exhaustion, so fault tests can fill the "disk" of a real daemon without
//! root or a size-limited filesystem.
//!
//! When the environment variable [`DISK_FULL_FLAG_ENV`] names a path at the moment a store is
//! opened, the store treats its data directory as full whenever that path exists:
//!
//! - each group transaction pins SQLite's `max_page_count` to the database's current page
//!   count, so a mutation that needs a new page fails with SQLite's own `SQLITE_FULL` (and
//!   SQLite decides, as on a real full disk, whether that rolls the transaction back);
//! - the CAS refuses to write a new object with `ENOSPC` (an object that already exists
//!   needs no space and is reused as usual).
//!
//! Deleting the path frees the "space": the next group lifts the cap. With the variable unset
//! (the default) nothing here is consulted. See `spec/v1/DIVERGENCES.md` (Faults).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The variable naming the disk-full flag path.
pub const DISK_FULL_FLAG_ENV: &str = "MEMOREE_FAULT_DISK_FULL_FLAG";

/// The injected "disk full" switch of one store; inert unless armed.
#[derive(Clone, Debug, Default)]
pub struct DiskFullFlag {
    path: Option<Arc<PathBuf>>,
}

impl DiskFullFlag {
    /// Armed at the path named by [`DISK_FULL_FLAG_ENV`], if it is set and not empty.
    pub fn from_env() -> DiskFullFlag {
        match std::env::var_os(DISK_FULL_FLAG_ENV) {
            Some(path) if !path.is_empty() => DiskFullFlag::at(PathBuf::from(path)),
            _ => DiskFullFlag::default(),
        }
    }

    /// Armed at `path`.
    pub fn at(path: impl Into<PathBuf>) -> DiskFullFlag {
        DiskFullFlag {
            path: Some(Arc::new(path.into())),
        }
    }

    /// Whether a path was configured at all.
    pub fn is_armed(&self) -> bool {
        self.path.is_some()
    }

    /// The configured path, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref().map(PathBuf::as_path)
    }

    /// Whether the store must behave as if its filesystem were full right now.
    pub fn is_full(&self) -> bool {
        self.path().is_some_and(|path| path.symlink_metadata().is_ok())
    }

    /// The error a write fails with while the flag is up.
    pub fn error() -> io::Error {
        io::Error::from_raw_os_error(libc::ENOSPC)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_is_up_exactly_while_its_path_exists() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("full");
        assert!(!DiskFullFlag::default().is_full());
        let flag = DiskFullFlag::at(&path);
        assert!(flag.is_armed() && !flag.is_full());
        std::fs::write(&path, b"").unwrap();
        assert!(flag.is_full());
        std::fs::remove_file(&path).unwrap();
        assert!(!flag.is_full());
        assert!(crate::blob::is_storage_full(&DiskFullFlag::error()));
    }
}
