//! Transparent compression of stored blob bytes: raw DEFLATE (RFC 1951) when it pays,
//! identity otherwise.
//!
//! Encoding is a storage detail: digests, sizes and everything on the wire describe the raw
//! bytes. `encode` and the streaming `decode_to` use `miniz_oxide`; the whole-buffer `decode`
//! that every read of inline content goes through uses libdeflate, whose table setup takes
//! about half of miniz's time, and that setup is most of a small body's decode.
//!
//! Decoding is bounded by the recorded raw size: it never allocates more than that, and a
//! stream that is malformed, truncated, has trailing bytes or decodes to any other length is
//! an error, never data and never a panic.

use std::borrow::Cow;
use std::io::{self, Read};

use miniz_oxide::inflate::stream::{InflateState, inflate};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};

/// How stored bytes encode the raw bytes. The numeric codes are persisted (the
/// `artifact_revisions.inline_encoding` column and CAS object headers): never renumber.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// The stored bytes are the raw bytes.
    Identity,
    /// The stored bytes are one raw DEFLATE stream of the raw bytes.
    Deflate,
}

impl Encoding {
    /// The persisted code.
    pub fn code(self) -> u8 {
        match self {
            Encoding::Identity => 0,
            Encoding::Deflate => 1,
        }
    }

    /// The encoding of a persisted code, if it is one.
    pub fn from_code(code: i64) -> Option<Encoding> {
        match code {
            0 => Some(Encoding::Identity),
            1 => Some(Encoding::Deflate),
            _ => None,
        }
    }
}

/// DEFLATE never expands more than 1032:1 (a 258-byte match per 2 bits), so a recorded size
/// beyond this multiple of the stored length cannot be honest.
const MAX_EXPANSION: usize = 1032;

/// Content shorter than this is stored as is: compressing it saves too little to matter.
pub const MIN_COMPRESSED_INPUT: usize = 256;
/// Compressed bytes are kept only when they are at most 7/8 of the raw size.
const KEEP_NUMERATOR: usize = 7;
const KEEP_DENOMINATOR: usize = 8;
/// Large content is compressed only if a prefix of this size compresses, so incompressible
/// media (images, archives) costs one small trial instead of a full pass.
const TRIAL_BYTES: usize = 64 * 1024;
/// Content up to this size is compressed at [`SMALL_LEVEL`], larger content at
/// [`LARGE_LEVEL`].
const SMALL_INPUT: usize = 4 * 1024;
/// miniz level 6 (the zlib default): on a few KiB it costs tens of microseconds, a few
/// percent of a put, and small artifacts are where the ratio matters most.
const SMALL_LEVEL: u8 = 6;
/// miniz level 1, its fastest: larger content stays close to the put floor (measured by
/// `cargo bench --bench storage -- codec`).
const LARGE_LEVEL: u8 = 1;

fn pays(raw: usize, compressed: usize) -> bool {
    compressed.saturating_mul(KEEP_DENOMINATOR) <= raw.saturating_mul(KEEP_NUMERATOR)
}

/// Encodes raw bytes for storage: DEFLATE when that saves at least an eighth, else identity.
/// Deterministic for a given binary: the same raw bytes always encode the same way.
pub fn encode(raw: &[u8]) -> (Encoding, Cow<'_, [u8]>) {
    if raw.len() < MIN_COMPRESSED_INPUT {
        return (Encoding::Identity, Cow::Borrowed(raw));
    }
    if raw.len() > 2 * TRIAL_BYTES {
        let trial = miniz_oxide::deflate::compress_to_vec(&raw[..TRIAL_BYTES], LARGE_LEVEL);
        if !pays(TRIAL_BYTES, trial.len()) {
            return (Encoding::Identity, Cow::Borrowed(raw));
        }
    }
    let level = if raw.len() <= SMALL_INPUT {
        SMALL_LEVEL
    } else {
        LARGE_LEVEL
    };
    let compressed = miniz_oxide::deflate::compress_to_vec(raw, level);
    if pays(raw.len(), compressed.len()) {
        (Encoding::Deflate, Cow::Owned(compressed))
    } else {
        (Encoding::Identity, Cow::Borrowed(raw))
    }
}

/// Why stored bytes could not be decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    #[error("the stored bytes are not a valid {0} stream")]
    Malformed(&'static str),
    #[error("the stored bytes decode to {actual} bytes, but {expected} are recorded")]
    Length { expected: u64, actual: u64 },
    #[error("the stored bytes continue after the end of the compressed stream")]
    TrailingBytes,
    #[error("reading the stored bytes: {0}")]
    Io(#[from] io::Error),
}

/// Decodes stored bytes into exactly `raw_size` raw bytes, allocating only that much.
pub fn decode(encoding: Encoding, stored: &[u8], raw_size: u64) -> Result<Vec<u8>, DecodeError> {
    let length = |actual: usize| DecodeError::Length {
        expected: raw_size,
        actual: actual as u64,
    };
    match encoding {
        Encoding::Identity => {
            if stored.len() as u64 != raw_size {
                return Err(length(stored.len()));
            }
            Ok(stored.to_vec())
        }
        Encoding::Deflate => {
            // A deflate stream is never stored unless it is smaller than its raw bytes, and
            // its output is bounded by the recorded size, so a hostile size cannot force a
            // large allocation from a small input.
            let size = usize::try_from(raw_size).map_err(|_| length(usize::MAX))?;
            if stored.len() >= size.max(1) {
                return Err(DecodeError::Malformed("deflate (longer than its raw size)"));
            }
            if size > stored.len().saturating_mul(MAX_EXPANSION).saturating_add(64) {
                return Err(DecodeError::Malformed("deflate (shorter than its raw size allows)"));
            }
            let mut out = vec![0u8; size];
            // A decode from another thread-local's destructor finds this one gone: it gets a
            // decompressor of its own.
            let (consumed, written) = INFLATER
                .try_with(|inflater| inflater.inflate(stored, &mut out))
                .unwrap_or_else(|_| Inflater::new().inflate(stored, &mut out))?;
            if written != size {
                return Err(length(written));
            }
            if consumed != stored.len() {
                return Err(DecodeError::TrailingBytes);
            }
            Ok(out)
        }
    }
}

thread_local! {
    /// Each thread's libdeflate decompressor (about 10 KiB of tables), made on its first
    /// decode and reused: a read decodes one body per candidate it examines.
    static INFLATER: Inflater = Inflater::new();
}

/// An owned `libdeflate_decompressor`.
struct Inflater(*mut libdeflate_sys::libdeflate_decompressor);

impl Inflater {
    fn new() -> Inflater {
        // SAFETY: no preconditions; a null result (out of memory) is checked at each use.
        Inflater(unsafe { libdeflate_sys::libdeflate_alloc_decompressor() })
    }

    /// Inflates the one raw DEFLATE stream at the start of `stored` into `out`, and returns
    /// the bytes of `stored` it spans and the bytes it wrote. A stream that needs more room
    /// than `out` is a [`DecodeError::Length`] one byte longer.
    fn inflate(&self, stored: &[u8], out: &mut [u8]) -> Result<(usize, usize), DecodeError> {
        use libdeflate_sys::{
            libdeflate_result_LIBDEFLATE_INSUFFICIENT_SPACE as INSUFFICIENT_SPACE,
            libdeflate_result_LIBDEFLATE_SUCCESS as SUCCESS,
        };
        if self.0.is_null() {
            return Err(DecodeError::Io(io::Error::from(io::ErrorKind::OutOfMemory)));
        }
        let (mut consumed, mut written) = (0usize, 0usize);
        // SAFETY: `self.0` is a live decompressor used by this thread only (a thread-local,
        // and `Inflater` is neither `Send` nor `Sync`); the input and output pointers and
        // lengths come from live slices, and libdeflate writes at most `out.len()` bytes.
        let result = unsafe {
            libdeflate_sys::libdeflate_deflate_decompress_ex(
                self.0,
                stored.as_ptr().cast(),
                stored.len(),
                out.as_mut_ptr().cast(),
                out.len(),
                &mut consumed,
                &mut written,
            )
        };
        match result {
            SUCCESS => Ok((consumed, written)),
            INSUFFICIENT_SPACE => Err(DecodeError::Length {
                expected: out.len() as u64,
                actual: out.len() as u64 + 1,
            }),
            _ => Err(DecodeError::Malformed("deflate")),
        }
    }
}

impl Drop for Inflater {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: allocated by `libdeflate_alloc_decompressor` and freed once, here.
            unsafe { libdeflate_sys::libdeflate_free_decompressor(self.0) }
        }
    }
}

/// Streams the decoding of `stored` into `sink` in chunks, without holding the raw bytes;
/// fails as soon as the output would exceed `raw_size`, and unless it is exactly that long.
pub fn decode_to(
    encoding: Encoding,
    mut stored: impl Read,
    raw_size: u64,
    mut sink: impl FnMut(&[u8]),
) -> Result<(), DecodeError> {
    const CHUNK: usize = 64 * 1024;
    let mut total: u64 = 0;
    let mut emit = |bytes: &[u8], total: &mut u64| -> Result<(), DecodeError> {
        *total += bytes.len() as u64;
        if *total > raw_size {
            return Err(DecodeError::Length {
                expected: raw_size,
                actual: *total,
            });
        }
        sink(bytes);
        Ok(())
    };
    let mut input = vec![0u8; CHUNK];
    match encoding {
        Encoding::Identity => loop {
            let read = read_some(&mut stored, &mut input)?;
            if read == 0 {
                break;
            }
            emit(&input[..read], &mut total)?;
        },
        Encoding::Deflate => {
            let mut state = InflateState::new_boxed(DataFormat::Raw);
            let mut output = vec![0u8; CHUNK];
            let (mut start, mut end, mut eof) = (0usize, 0usize, false);
            loop {
                if start == end && !eof {
                    end = read_some(&mut stored, &mut input)?;
                    start = 0;
                    eof = end == 0;
                }
                let result = inflate(&mut state, &input[start..end], &mut output, MZFlush::None);
                start += result.bytes_consumed;
                emit(&output[..result.bytes_written], &mut total)?;
                let progressed = result.bytes_consumed > 0 || result.bytes_written > 0;
                match result.status {
                    Ok(MZStatus::StreamEnd) => break,
                    Ok(_) if progressed => {}
                    Err(MZError::Buf) if start == end && !eof => {}
                    Err(MZError::Buf) if eof && start == end => {
                        return Err(DecodeError::Malformed("deflate (truncated)"));
                    }
                    _ => return Err(DecodeError::Malformed("deflate")),
                }
            }
            if start < end || read_some(&mut stored, &mut input)? > 0 {
                return Err(DecodeError::TrailingBytes);
            }
        }
    }
    if total != raw_size {
        return Err(DecodeError::Length {
            expected: raw_size,
            actual: total,
        });
    }
    Ok(())
}

fn read_some(reader: &mut impl Read, buffer: &mut [u8]) -> io::Result<usize> {
    loop {
        match reader.read(buffer) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(size: usize) -> Vec<u8> {
        let words = [
            "memoree",
            "keeps",
            "sqlite",
            "authoritative",
            "and",
            "the",
            "cas",
            "holds",
            "blobs",
        ];
        let mut out = Vec::new();
        let mut i = 7usize;
        while out.len() < size {
            out.extend_from_slice(words[i % words.len()].as_bytes());
            out.push(b' ');
            i = i.wrapping_mul(31).wrapping_add(11);
        }
        out.truncate(size);
        out
    }

    fn noise(size: usize) -> Vec<u8> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..size)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    fn streamed(encoding: Encoding, stored: &[u8], raw_size: u64) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        decode_to(encoding, stored, raw_size, |chunk| out.extend_from_slice(chunk))?;
        Ok(out)
    }

    #[test]
    fn text_is_deflated_and_round_trips_both_ways() {
        for size in [256, 1536, 16 * 1024, 300 * 1024] {
            let raw = text(size);
            let (encoding, stored) = encode(&raw);
            assert_eq!(encoding, Encoding::Deflate, "{size}");
            assert!(stored.len() * 2 < raw.len(), "{size}: {}", stored.len());
            assert_eq!(decode(encoding, &stored, size as u64).unwrap(), raw);
            assert_eq!(streamed(encoding, &stored, size as u64).unwrap(), raw);
        }
    }

    #[test]
    fn small_or_incompressible_content_is_stored_as_is() {
        for raw in [text(100), noise(4096), noise(1 << 20)] {
            let (encoding, stored) = encode(&raw);
            assert_eq!(encoding, Encoding::Identity);
            assert_eq!(&*stored, raw.as_slice());
            assert_eq!(decode(encoding, &stored, raw.len() as u64).unwrap(), raw);
            assert_eq!(streamed(encoding, &stored, raw.len() as u64).unwrap(), raw);
        }
    }

    #[test]
    fn a_wrong_recorded_size_is_a_length_error_either_way() {
        let raw = text(4096);
        let (encoding, stored) = encode(&raw);
        for size in [4095u64, 4097, 1 << 40] {
            assert!(decode(encoding, &stored, size).is_err(), "{size}");
            assert!(streamed(encoding, &stored, size).is_err(), "{size}");
        }
        assert!(matches!(
            decode(Encoding::Identity, b"abc", 4),
            Err(DecodeError::Length { .. })
        ));
        assert!(matches!(
            streamed(Encoding::Identity, b"abcde", 4),
            Err(DecodeError::Length { .. })
        ));
    }

    #[test]
    fn corrupt_truncated_or_padded_streams_are_errors_not_data() {
        let raw = text(8192);
        let (encoding, stored) = encode(&raw);
        let size = raw.len() as u64;
        let truncated = &stored[..stored.len() / 2];
        assert!(decode(encoding, truncated, size).is_err());
        assert!(streamed(encoding, truncated, size).is_err());
        let mut padded = stored.to_vec();
        padded.extend_from_slice(b"tail");
        assert!(decode(encoding, &padded, size).is_err());
        assert!(streamed(encoding, padded.as_slice(), size).is_err());
        for garbage in [vec![0xffu8; 64], vec![0u8; 64], noise(3000), Vec::new()] {
            assert!(decode(Encoding::Deflate, &garbage, size).is_err());
            assert!(streamed(Encoding::Deflate, garbage.as_slice(), size).is_err());
        }
        // Flip every byte in turn: never a panic, and never the wrong bytes as data.
        for at in 0..stored.len() {
            let mut flipped = stored.to_vec();
            flipped[at] ^= 0x55;
            if let Ok(bytes) = decode(encoding, &flipped, size) {
                assert_eq!(bytes.len() as u64, size);
            }
            let _ = streamed(encoding, flipped.as_slice(), size);
        }
    }

    #[test]
    fn a_damaged_stream_the_whole_buffer_decoder_accepts_streams_to_the_same_bytes() {
        // `decode` (libdeflate) serves reads and `decode_to` (miniz_oxide) streams CAS
        // objects and backups: what the first takes as data, the second reads identically.
        // (The streaming decoder is the laxer one: a damaged stream whose back-reference
        // reaches before its first byte reads zeros there instead of failing.)
        for size in [300, 700, 1500, 20_000] {
            let raw = text(size);
            let (encoding, stored) = encode(&raw);
            assert_eq!(encoding, Encoding::Deflate);
            let mut damaged = vec![stored.to_vec()];
            for at in (0..stored.len()).step_by(1 + stored.len() / 1000) {
                for mask in [0x01u8, 0x80, 0xff] {
                    let mut flipped = stored.to_vec();
                    flipped[at] ^= mask;
                    damaged.push(flipped);
                }
                damaged.push(stored[..at].to_vec());
            }
            for bytes in &damaged {
                for recorded in [size as u64, size as u64 - 1, size as u64 + 1] {
                    if let Ok(whole) = decode(encoding, bytes, recorded) {
                        let stream = streamed(encoding, bytes.as_slice(), recorded).ok();
                        assert_eq!(Some(whole), stream, "size {size}, recorded {recorded}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_compression_bomb_stops_at_the_recorded_size() {
        let raw = vec![b'a'; 4 << 20];
        let (encoding, stored) = encode(&raw);
        assert_eq!(encoding, Encoding::Deflate);
        assert!(stored.len() < 64 * 1024);
        // Claimed small: decoding refuses without producing more than the claim.
        assert!(matches!(
            decode(encoding, &stored, 100_000),
            Err(DecodeError::Length { .. })
        ));
        let mut seen = 0u64;
        let result = decode_to(encoding, &*stored, 100_000, |chunk| seen += chunk.len() as u64);
        assert!(result.is_err());
        assert!(seen <= 100_000);
    }
}
