//! Pins and erasure: the one way a CAS object is ever removed.
//!
//! A mutation writes its CAS object before it enters the writer, so between the two a
//! concurrent purge could erase an object that the mutation is about to cite (when the
//! purged content and the new content are the same bytes). [`BlobStore::put_pinned`] pins the
//! digest before it looks for an existing object and keeps it pinned until the returned
//! [`BlobPin`] is dropped, which the mutation does once its closure has run on the writer;
//! [`BlobStore::erase_unpinned`] checks the pins under the same lock before it removes
//! anything.
//!
//! **Invariant:** an object is erased only while nobody holds a pin on its digest, and
//! erasing overwrites the file's bytes with zeros and syncs them before unlinking it.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{BlobError, BlobStore, COMPRESS_OBJECTS, Digest, sync_dir};

/// The digests pending writes have pinned, with their pin counts.
#[derive(Clone, Debug, Default)]
pub(super) struct Pins(Arc<Mutex<HashMap<Digest, usize>>>);

impl Pins {
    fn lock(&self) -> MutexGuard<'_, HashMap<Digest, usize>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pin(&self, digest: Digest) -> BlobPin {
        *self.lock().entry(digest).or_insert(0) += 1;
        BlobPin {
            pins: self.clone(),
            digest,
        }
    }
}

/// Keeps one CAS object from being erased while it is alive.
pub struct BlobPin {
    pins: Pins,
    digest: Digest,
}

impl std::fmt::Debug for BlobPin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobPin").field("digest", &self.digest).finish()
    }
}

impl Drop for BlobPin {
    fn drop(&mut self) {
        let mut pins = self.pins.lock();
        if let Some(count) = pins.get_mut(&self.digest) {
            *count -= 1;
            if *count == 0 {
                pins.remove(&self.digest);
            }
        }
    }
}

impl BlobStore {
    /// [`BlobStore::put`], returning a pin that keeps the object from being erased until
    /// the caller drops it (after the mutation citing the object has run).
    pub fn put_pinned(&self, bytes: &[u8]) -> Result<(Digest, BlobPin), BlobError> {
        let digest = Digest::of(bytes);
        let pin = self.pins.pin(digest);
        self.publish(digest, bytes, COMPRESS_OBJECTS)?;
        Ok((digest, pin))
    }

    /// Whether a pending write holds a pin on `digest`.
    pub fn is_pinned(&self, digest: &Digest) -> bool {
        self.pins.lock().contains_key(digest)
    }

    /// Erases the object for `digest` unless a pending write has pinned it: its bytes are
    /// overwritten with zeros and synced, then the file is unlinked and its directory
    /// synced. Returns `false` (and leaves the object) when it is pinned; an object that
    /// does not exist counts as erased.
    pub fn erase_unpinned(&self, digest: &Digest) -> Result<bool, BlobError> {
        let pins = self.pins.lock();
        if pins.contains_key(digest) {
            return Ok(false);
        }
        let path = self.path_of(digest);
        let mut file = match OpenOptions::new().write(true).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
            Err(e) => return Err(BlobError::io(&path, e)),
        };
        let len = file.metadata().map_err(|e| BlobError::io(&path, e))?.len();
        let zeros = vec![0u8; 64 * 1024];
        let mut left = len;
        while left > 0 {
            let n = left.min(zeros.len() as u64) as usize;
            file.write_all(&zeros[..n]).map_err(|e| BlobError::io(&path, e))?;
            left -= n as u64;
        }
        file.sync_all().map_err(|e| BlobError::io(&path, e))?;
        drop(file);
        fs::remove_file(&path).map_err(|e| BlobError::io(&path, e))?;
        if let Some(dir) = path.parent() {
            sync_dir(dir).map_err(|e| BlobError::io(dir, e))?;
        }
        drop(pins);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_object_survives_erasure_until_its_pin_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path().join("blobs")).unwrap();
        let bytes = vec![42u8; 20_000];
        let (digest, pin) = store.put_pinned(&bytes).unwrap();
        let (_, second) = store.put_pinned(&bytes).unwrap();
        assert!(!store.erase_unpinned(&digest).unwrap());
        drop(pin);
        assert!(store.is_pinned(&digest));
        assert!(!store.erase_unpinned(&digest).unwrap());
        drop(second);
        assert!(!store.is_pinned(&digest));
        assert!(store.contains(&digest));
        assert!(store.erase_unpinned(&digest).unwrap());
        assert!(!store.contains(&digest));
        assert!(store.erase_unpinned(&digest).unwrap());
    }
}
