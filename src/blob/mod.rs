//! The filesystem content-addressed blob store (CAS) for content above the inline threshold.
//!
//! An object lives at `blobs/<h0h1>/<h2h3>/<hex>`, where `<hex>` is the BLAKE3 digest of the
//! **raw** bytes. The file is self-describing: a 16-byte header (magic `mcas`, format
//! version 1, the [`Encoding`] code, two zero bytes, the raw length as u64 little-endian)
//! followed by the stored payload: the raw bytes (identity) or one raw DEFLATE stream. Two
//! writes of the same raw bytes name the same path, so they share one object whatever their
//! encoding; the first one published wins and later writers verify it.
//!
//! This binary writes objects as identity ([`COMPRESS_OBJECTS`]) and reads both encodings.
//!
//! **Invariant:** a blob file is immutable once published. It is written to `blobs/.tmp`,
//! fsynced, hard-linked into its fan-out path (which never replaces an existing file) and
//! the directory is fsynced. Every read decodes (never past the recorded raw size) and
//! re-hashes the raw bytes, so corruption is reported as an integrity error instead of being
//! returned. SQLite is authoritative: a blob that no revision references is garbage, never
//! data.

pub mod codec;
mod digest;
mod pin;

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub use codec::Encoding;
pub use digest::Digest;
pub use pin::BlobPin;

use crate::fault::DiskFullFlag;
use crate::paths::BLOBS_TMP_DIR;
use crate::protocol::limits;

/// Length of a CAS object header.
pub const HEADER_BYTES: usize = 16;
/// The first bytes of every CAS object.
pub const MAGIC: [u8; 4] = *b"mcas";
/// The CAS object format version this binary writes and reads.
pub const FORMAT_VERSION: u8 = 1;
/// No blob is larger than the largest artifact; a header claiming more is corrupt.
pub const MAX_RAW_BYTES: u64 = limits::MAX_ARTIFACT_BYTES as u64;
/// Whether new CAS objects are compressed. Off: CAS content is larger than 16 KiB, where
/// DEFLATE costs more than a tenth of a put to encode (about 0.5 ms per 64 KiB of text on the
/// reference machine, `cargo bench --bench storage -- codec`) and about half that again on
/// every read, while such content already stays well under 2x storage amplification
/// uncompressed (BENCHMARKS.md). Inline content, where the ratio matters, is compressed.
/// Readers, `verify` and backups handle compressed objects either way.
pub const COMPRESS_OBJECTS: bool = false;

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
    #[error("blob {digest} cannot be decoded: {detail}")]
    Undecodable { digest: String, detail: String },
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

    fn undecodable(digest: &Digest, detail: impl std::fmt::Display) -> BlobError {
        BlobError::Undecodable {
            digest: digest.to_hex(),
            detail: detail.to_string(),
        }
    }

    fn from_decode(digest: &Digest, path: Option<&Path>, error: codec::DecodeError) -> BlobError {
        match error {
            codec::DecodeError::Length { expected, actual } => BlobError::SizeMismatch {
                digest: digest.to_hex(),
                expected,
                actual,
            },
            codec::DecodeError::Io(source) => BlobError::io(path.unwrap_or(Path::new("<memory>")), source),
            other => BlobError::undecodable(digest, other),
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

/// The decoded header of a CAS object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectHeader {
    pub encoding: Encoding,
    pub raw_size: u64,
}

impl ObjectHeader {
    /// The 16 header bytes.
    pub fn to_bytes(self) -> [u8; HEADER_BYTES] {
        let mut bytes = [0u8; HEADER_BYTES];
        bytes[..4].copy_from_slice(&MAGIC);
        bytes[4] = FORMAT_VERSION;
        bytes[5] = self.encoding.code();
        bytes[8..].copy_from_slice(&self.raw_size.to_le_bytes());
        bytes
    }

    /// Parses and bounds a header; `Err` says what is wrong with it.
    pub fn parse(bytes: &[u8]) -> Result<ObjectHeader, &'static str> {
        let Some(bytes) = bytes.get(..HEADER_BYTES) else {
            return Err("shorter than the 16-byte object header");
        };
        if bytes[..4] != MAGIC {
            return Err("not a CAS object (bad magic)");
        }
        if bytes[4] != FORMAT_VERSION {
            return Err("unknown CAS object format version");
        }
        let encoding = Encoding::from_code(i64::from(bytes[5])).ok_or("unknown encoding")?;
        if bytes[6..8] != [0, 0] {
            return Err("reserved header bytes are not zero");
        }
        let raw_size = u64::from_le_bytes(bytes[8..16].try_into().map_err(|_| "bad raw length")?);
        if raw_size > MAX_RAW_BYTES {
            return Err("raw length exceeds the largest artifact");
        }
        Ok(ObjectHeader { encoding, raw_size })
    }

    /// The longest payload a well-formed object with this header can have: identity is
    /// exactly the raw size, and a DEFLATE payload is only kept when it is smaller.
    fn max_payload(self) -> u64 {
        self.raw_size
    }
}

/// A CAS rooted at `<data>/blobs`.
#[derive(Clone, Debug)]
pub struct BlobStore {
    root: PathBuf,
    disk_full: DiskFullFlag,
    pins: pin::Pins,
}

impl BlobStore {
    /// Opens (creating if needed) a blob store rooted at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<BlobStore, BlobError> {
        let root = root.into();
        let tmp = root.join(BLOBS_TMP_DIR);
        fs::create_dir_all(&tmp).map_err(|e| BlobError::io(&tmp, e))?;
        remove_abandoned_temp_files(&tmp);
        Ok(BlobStore {
            root,
            disk_full: DiskFullFlag::default(),
            pins: pin::Pins::default(),
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

    /// Stores raw `bytes` durably and returns their digest. An existing object is verified
    /// and reused; a concurrent writer that wins the race is verified too.
    pub fn put(&self, bytes: &[u8]) -> Result<Digest, BlobError> {
        self.put_object(bytes, COMPRESS_OBJECTS)
    }

    /// [`BlobStore::put`], compressing the object when `compress` is set and that pays.
    pub(crate) fn put_object(&self, bytes: &[u8], compress: bool) -> Result<Digest, BlobError> {
        self.publish(Digest::of(bytes), bytes, compress)
    }

    /// Publishes `bytes`, whose digest the caller computed, as [`BlobStore::put_object`].
    fn publish(&self, digest: Digest, bytes: &[u8], compress: bool) -> Result<Digest, BlobError> {
        let dest = self.path_of(&digest);
        if dest.exists() {
            self.verify(&digest, bytes.len() as u64)?;
            return Ok(digest);
        }
        if self.disk_full.is_full() {
            return Err(BlobError::io(&self.root.join(BLOBS_TMP_DIR), DiskFullFlag::error()));
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
        let (encoding, payload) = if compress {
            codec::encode(bytes)
        } else {
            (Encoding::Identity, std::borrow::Cow::Borrowed(bytes))
        };
        let header = ObjectHeader {
            encoding,
            raw_size: bytes.len() as u64,
        };
        let tmp = self
            .root
            .join(BLOBS_TMP_DIR)
            .join(format!("{}.{}", digest.to_hex(), ulid::Ulid::new()));
        let result = write_synced(&tmp, &header.to_bytes(), &payload).and_then(|()| match fs::hard_link(&tmp, &dest) {
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

    /// Reads a blob, decodes it into exactly `expected_size` bytes and verifies its digest.
    pub fn get(&self, digest: &Digest, expected_size: u64) -> Result<Vec<u8>, BlobError> {
        let path = self.path_of(digest);
        let stored = read_object(&path, digest, expected_size)?;
        decode_object(stored, digest, expected_size)
    }

    /// Verifies a stored blob (streaming: the raw bytes are never held whole).
    pub fn verify(&self, digest: &Digest, expected_size: u64) -> Result<(), BlobError> {
        check_object_file(&self.path_of(digest), digest, Some(expected_size)).map(|_| ())
    }

    /// Whether the object file exists (without verifying it).
    pub fn contains(&self, digest: &Digest) -> bool {
        self.path_of(digest).exists()
    }
}

/// Reads a whole CAS object file as stored, refusing one longer than a well-formed object of
/// `expected_size` raw bytes can be (so a hostile file cannot force a large read).
pub fn read_object(path: &Path, digest: &Digest, expected_size: u64) -> Result<Vec<u8>, BlobError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(BlobError::Missing {
                digest: digest.to_hex(),
            });
        }
        Err(e) => return Err(BlobError::io(path, e)),
    };
    let limit = HEADER_BYTES as u64 + expected_size.min(MAX_RAW_BYTES);
    let mut stored = Vec::with_capacity(usize::try_from(limit).unwrap_or(0).min(HEADER_BYTES + 64 * 1024));
    file.take(limit + 1)
        .read_to_end(&mut stored)
        .map_err(|e| BlobError::io(path, e))?;
    if stored.len() as u64 > limit {
        return Err(BlobError::undecodable(
            digest,
            format!("the object file is longer than a {expected_size}-byte blob can be stored in"),
        ));
    }
    Ok(stored)
}

/// Decodes a whole stored CAS object (header and payload) into exactly `expected_size` raw
/// bytes and verifies their digest. An identity payload is returned in place, not copied.
pub fn decode_object(mut stored: Vec<u8>, digest: &Digest, expected_size: u64) -> Result<Vec<u8>, BlobError> {
    let header = ObjectHeader::parse(&stored).map_err(|detail| BlobError::undecodable(digest, detail))?;
    check_header_size(digest, header, expected_size)?;
    let bytes = match header.encoding {
        Encoding::Identity => {
            stored.drain(..HEADER_BYTES);
            stored
        }
        Encoding::Deflate => codec::decode(header.encoding, &stored[HEADER_BYTES..], header.raw_size)
            .map_err(|e| BlobError::from_decode(digest, None, e))?,
    };
    check(digest, expected_size, &bytes)?;
    Ok(bytes)
}

/// Verifies a whole stored CAS object in memory without materializing its raw bytes.
pub fn check_object_bytes(stored: &[u8], digest: &Digest, expected_size: u64) -> Result<(), BlobError> {
    let header = ObjectHeader::parse(stored).map_err(|detail| BlobError::undecodable(digest, detail))?;
    check_header_size(digest, header, expected_size)?;
    if (stored.len() - HEADER_BYTES) as u64 > header.max_payload() {
        return Err(BlobError::undecodable(
            digest,
            "the payload is longer than its raw size",
        ));
    }
    let mut hasher = blake3::Hasher::new();
    codec::decode_to(header.encoding, &stored[HEADER_BYTES..], header.raw_size, |chunk| {
        hasher.update(chunk);
    })
    .map_err(|e| BlobError::from_decode(digest, None, e))?;
    check_hash(digest, &hasher)
}

/// Streams a CAS object file through the decoder and the hasher. Returns the raw size from
/// its header; `expected_size` (when known) must match it.
pub fn check_object_file(path: &Path, digest: &Digest, expected_size: Option<u64>) -> Result<u64, BlobError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(BlobError::Missing {
                digest: digest.to_hex(),
            });
        }
        Err(e) => return Err(BlobError::io(path, e)),
    };
    let mut header = [0u8; HEADER_BYTES];
    let mut filled = 0;
    while filled < HEADER_BYTES {
        match file.read(&mut header[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(BlobError::io(path, e)),
        }
    }
    let header = ObjectHeader::parse(&header[..filled]).map_err(|detail| BlobError::undecodable(digest, detail))?;
    if let Some(expected) = expected_size {
        check_header_size(digest, header, expected)?;
    }
    let payload = file
        .metadata()
        .map_err(|e| BlobError::io(path, e))?
        .len()
        .saturating_sub(HEADER_BYTES as u64);
    if payload > header.max_payload() {
        return Err(BlobError::undecodable(
            digest,
            "the payload is longer than its raw size",
        ));
    }
    let mut hasher = blake3::Hasher::new();
    codec::decode_to(
        header.encoding,
        file.take(header.max_payload() + 1),
        header.raw_size,
        |chunk| {
            hasher.update(chunk);
        },
    )
    .map_err(|e| BlobError::from_decode(digest, Some(path), e))?;
    check_hash(digest, &hasher)?;
    Ok(header.raw_size)
}

fn check_header_size(digest: &Digest, header: ObjectHeader, expected_size: u64) -> Result<(), BlobError> {
    if header.raw_size != expected_size {
        return Err(BlobError::SizeMismatch {
            digest: digest.to_hex(),
            expected: expected_size,
            actual: header.raw_size,
        });
    }
    Ok(())
}

fn check_hash(digest: &Digest, hasher: &blake3::Hasher) -> Result<(), BlobError> {
    let actual = Digest::from_hash(hasher.finalize());
    if actual != *digest {
        return Err(BlobError::DigestMismatch {
            digest: digest.to_hex(),
            actual: actual.to_hex(),
        });
    }
    Ok(())
}

/// Checks raw bytes against an expected digest and size.
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

/// Decodes inline (database) blob bytes stored with `encoding` and verifies them against the
/// recorded digest and raw size.
pub fn decode_inline(encoding: Encoding, stored: &[u8], digest: &Digest, raw_size: u64) -> Result<Vec<u8>, BlobError> {
    if raw_size > MAX_RAW_BYTES {
        return Err(BlobError::undecodable(
            digest,
            "the recorded size exceeds the largest artifact",
        ));
    }
    let bytes = codec::decode(encoding, stored, raw_size).map_err(|e| BlobError::from_decode(digest, None, e))?;
    check(digest, raw_size, &bytes)?;
    Ok(bytes)
}

fn write_synced(path: &Path, header: &[u8], payload: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.set_permissions(fs::Permissions::from_mode(0o600))?;
    file.write_all(header)?;
    file.write_all(payload)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(size: usize) -> Vec<u8> {
        "the cas holds compressed blobs and sqlite stays authoritative; "
            .bytes()
            .cycle()
            .take(size)
            .collect()
    }

    fn store() -> (tempfile::TempDir, BlobStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path().join("blobs")).unwrap();
        (dir, store)
    }

    #[test]
    fn identical_bytes_are_stored_once_and_read_back_verified() {
        let (dir, store) = store();
        let a = store.put(b"same bytes").unwrap();
        let b = store.put(b"same bytes").unwrap();
        assert_eq!(a, b);
        assert_eq!(store.get(&a, 10).unwrap(), b"same bytes");
        let mode = fs::metadata(store.path_of(&a)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(fs::read_dir(dir.path().join("blobs/.tmp")).unwrap().count(), 0);
    }

    #[test]
    fn text_is_stored_compressed_under_the_digest_of_its_raw_bytes() {
        let (_dir, store) = store();
        let raw = text(64 * 1024);
        let digest = store.put_object(&raw, true).unwrap();
        assert_eq!(digest, Digest::of(&raw));
        let stored = fs::read(store.path_of(&digest)).unwrap();
        let header = ObjectHeader::parse(&stored).unwrap();
        assert_eq!(header.encoding, Encoding::Deflate);
        assert_eq!(header.raw_size, raw.len() as u64);
        assert!(stored.len() < raw.len() / 4, "{}", stored.len());
        assert_eq!(store.get(&digest, raw.len() as u64).unwrap(), raw);
        store.verify(&digest, raw.len() as u64).unwrap();
        check_object_bytes(&stored, &digest, raw.len() as u64).unwrap();
        assert_eq!(
            check_object_file(&store.path_of(&digest), &digest, None).unwrap(),
            raw.len() as u64
        );
        // A second put of the same bytes, under either policy, reuses (and verifies) the
        // object: equal raw bytes share one object whatever its encoding.
        assert_eq!(store.put(&raw).unwrap(), digest);
        assert_eq!(fs::read(store.path_of(&digest)).unwrap(), stored);
        let plain = text(20_000);
        let plain_digest = store.put(&plain).unwrap();
        let plain_stored = fs::read(store.path_of(&plain_digest)).unwrap();
        assert_eq!(ObjectHeader::parse(&plain_stored).unwrap().encoding, Encoding::Identity);
        assert_eq!(&plain_stored[HEADER_BYTES..], plain.as_slice());
        assert_eq!(store.put_object(&plain, true).unwrap(), plain_digest);
        assert_eq!(fs::read(store.path_of(&plain_digest)).unwrap(), plain_stored);
    }

    fn overwrite(store: &BlobStore, digest: &Digest, bytes: &[u8]) {
        let path = store.path_of(digest);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(&path, bytes).unwrap();
    }

    fn all_reads_fail(store: &BlobStore, digest: &Digest, size: u64) -> Vec<BlobError> {
        let stored = fs::read(store.path_of(digest)).unwrap();
        vec![
            store.get(digest, size).unwrap_err(),
            store.verify(digest, size).unwrap_err(),
            check_object_bytes(&stored, digest, size).unwrap_err(),
            check_object_file(&store.path_of(digest), digest, None).unwrap_err(),
        ]
    }

    #[test]
    fn a_corrupted_blob_is_an_integrity_error_not_data() {
        let (_dir, store) = store();
        let digest = store.put(b"precious").unwrap();
        let mut stored = fs::read(store.path_of(&digest)).unwrap();
        let last = stored.len() - 1;
        stored[last] ^= 1;
        overwrite(&store, &digest, &stored);
        for error in all_reads_fail(&store, &digest, 8) {
            assert!(matches!(error, BlobError::DigestMismatch { .. }), "{error}");
        }
        overwrite(&store, &digest, b"precious");
        for error in all_reads_fail(&store, &digest, 8) {
            assert!(matches!(error, BlobError::Undecodable { .. }), "{error}");
        }
        fs::remove_file(store.path_of(&digest)).unwrap();
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

    #[test]
    fn corrupt_compressed_objects_and_lying_headers_are_refused_without_panics() {
        let (_dir, store) = store();
        let raw = text(40_000);
        let size = raw.len() as u64;
        let digest = store.put_object(&raw, true).unwrap();
        let good = fs::read(store.path_of(&digest)).unwrap();

        // A flipped payload byte is an error, never the wrong bytes. (In periodic text a
        // flipped match distance can name an identical earlier copy: then the raw bytes
        // are unchanged, and reading them is right.)
        let mut refused = 0;
        for at in (HEADER_BYTES..good.len()).step_by(7) {
            let mut bad = good.clone();
            bad[at] ^= 0x41;
            overwrite(&store, &digest, &bad);
            match store.get(&digest, size) {
                Ok(bytes) => {
                    assert_eq!(bytes, raw, "flip at {at}");
                    store.verify(&digest, size).unwrap();
                }
                Err(error) => {
                    assert!(!matches!(error, BlobError::Io { .. }), "{error}");
                    assert!(store.verify(&digest, size).is_err(), "flip at {at}");
                    refused += 1;
                }
            }
        }
        assert!(refused > 0);
        // Truncated and padded payloads.
        for bad in [good[..good.len() - 3].to_vec(), [good.as_slice(), b"junk"].concat()] {
            overwrite(&store, &digest, &bad);
            assert!(
                all_reads_fail(&store, &digest, size)
                    .iter()
                    .all(|e| !matches!(e, BlobError::Io { .. }))
            );
        }
        // A header claiming a huge raw size is refused before anything is allocated.
        let mut huge = good.clone();
        huge[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
        overwrite(&store, &digest, &huge);
        for error in all_reads_fail(&store, &digest, size) {
            assert!(
                matches!(error, BlobError::Undecodable { .. } | BlobError::SizeMismatch { .. }),
                "{error}"
            );
        }
        // A header whose size disagrees with the database is a size mismatch.
        let mut lying = good.clone();
        lying[8..16].copy_from_slice(&(size + 1).to_le_bytes());
        overwrite(&store, &digest, &lying);
        assert!(matches!(store.get(&digest, size), Err(BlobError::SizeMismatch { .. })));
        // Unknown encodings and versions are refused.
        for (at, value) in [(4usize, 2u8), (5, 9), (6, 1)] {
            let mut bad = good.clone();
            bad[at] = value;
            overwrite(&store, &digest, &bad);
            assert!(matches!(store.get(&digest, size), Err(BlobError::Undecodable { .. })));
        }
    }

    #[test]
    fn inline_bytes_decode_only_to_their_recorded_digest_and_size() {
        let raw = text(5000);
        let digest = Digest::of(&raw);
        let (encoding, stored) = codec::encode(&raw);
        assert_eq!(encoding, Encoding::Deflate);
        assert_eq!(decode_inline(encoding, &stored, &digest, 5000).unwrap(), raw);
        assert!(matches!(
            decode_inline(encoding, &stored, &digest, 4999),
            Err(BlobError::SizeMismatch { .. })
        ));
        assert!(matches!(
            decode_inline(encoding, &stored, &digest, u64::MAX),
            Err(BlobError::Undecodable { .. })
        ));
        assert!(decode_inline(Encoding::Deflate, b"\xff\xff", &digest, 5000).is_err());
        assert!(matches!(
            decode_inline(Encoding::Identity, &stored, &digest, stored.len() as u64),
            Err(BlobError::DigestMismatch { .. })
        ));
    }
}
