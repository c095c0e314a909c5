//! The daemon wire framing: a 4-byte unsigned big-endian length followed by that many bytes
//! of UTF-8 JSON, with no delimiter or trailer.
//!
//! The length is checked against the limit as soon as the four header bytes are in, before
//! anything is allocated for the body, so a hostile header costs nothing. Reading is split
//! into [`read_header`] and [`read_body`] so callers can give the wait for the next request
//! and the transfer of its body different timeouts. A clean end of stream before the first
//! header byte is `Ok(None)`, not an error: it is how a peer says it is done.
//!
//! The async functions (tokio) serve the daemon; [`blocking`] has the same codec over
//! `std::io` for the synchronous client.
//!
//! **Invariant:** no function here allocates more than the declared length of a frame that
//! passed the size check, and [`encode_json`] never produces a frame over its limit.

use std::io;

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub use crate::protocol::limits::MAX_FRAME_BYTES;

/// Bytes in the length prefix.
pub const HEADER_BYTES: usize = 4;

/// A frame that could not be read, written or encoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The declared body length exceeds the limit; nothing was allocated. For a value being
    /// encoded, `len` is where counting stopped, a lower bound of its size.
    #[error("frame of {len} bytes exceeds the {max}-byte frame limit")]
    TooLarge { len: u64, max: usize },
    /// The stream ended inside a frame.
    #[error("connection closed in the middle of a frame ({received} of {expected} bytes received)")]
    Truncated { expected: u64, received: u64 },
    /// Reading or writing the stream failed.
    #[error("frame I/O failed: {0}")]
    Io(#[from] io::Error),
    /// The value could not be serialized as JSON.
    #[error("could not encode the frame as JSON: {0}")]
    Encode(#[source] serde_json::Error),
}

/// Checks a declared body length against `max` (a frame of exactly `max` bytes is allowed).
pub fn check_len(len: u32, max: usize) -> Result<usize, FrameError> {
    let len64 = u64::from(len);
    match usize::try_from(len) {
        Ok(n) if n <= max => Ok(n),
        _ => Err(FrameError::TooLarge { len: len64, max }),
    }
}

/// The length prefix for a body of `len` bytes.
pub fn header(len: usize, max: usize) -> Result<[u8; HEADER_BYTES], FrameError> {
    match u32::try_from(len) {
        Ok(n) if len <= max => Ok(n.to_be_bytes()),
        _ => Err(FrameError::TooLarge { len: len as u64, max }),
    }
}

/// Serializes `value` as one complete frame (prefix included) in a single buffer.
///
/// A first pass only counts the JSON bytes (and stops as soon as they exceed `max`), so the
/// buffer is allocated once at its exact size: peak memory is the frame itself, and a value
/// too large to send is refused before anything big is allocated. Serializing twice costs
/// little next to what a doubling buffer would waste on a 24 MiB frame.
pub fn encode_json<T: Serialize + ?Sized>(value: &T, max: usize) -> Result<Vec<u8>, FrameError> {
    let mut counter = Counter { len: 0, max };
    if let Err(e) = serde_json::to_writer(&mut counter, value) {
        return Err(if counter.len > max {
            FrameError::TooLarge {
                len: counter.len as u64,
                max,
            }
        } else {
            FrameError::Encode(e)
        });
    }
    let len = counter.len;
    let mut buf = Vec::with_capacity(HEADER_BYTES + len);
    buf.extend_from_slice(&header(len, max)?);
    serde_json::to_writer(&mut buf, value).map_err(FrameError::Encode)?;
    debug_assert_eq!(buf.len(), HEADER_BYTES + len);
    Ok(buf)
}

/// A sink that counts bytes and fails once they exceed `max`.
struct Counter {
    len: usize,
    max: usize,
}

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.len = self.len.saturating_add(buf.len());
        if self.len > self.max {
            return Err(io::Error::other("frame limit exceeded"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The declared body length of a complete frame produced by [`encode_json`].
pub fn body_of(frame: &[u8]) -> &[u8] {
    frame.get(HEADER_BYTES..).unwrap_or_default()
}

/// Reads the next length prefix: `Ok(None)` on a clean end of stream, otherwise the checked
/// body length. Nothing is allocated.
pub async fn read_header<R: AsyncRead + Unpin>(reader: &mut R, max: usize) -> Result<Option<usize>, FrameError> {
    let mut prefix = [0u8; HEADER_BYTES];
    let mut filled = 0;
    while filled < HEADER_BYTES {
        let n = reader.read(&mut prefix[filled..]).await?;
        if n == 0 {
            return end_of_header(filled);
        }
        filled += n;
    }
    check_len(u32::from_be_bytes(prefix), max).map(Some)
}

/// Reads a body of exactly `len` bytes (a length returned by [`read_header`]).
pub async fn read_body<R: AsyncRead + Unpin>(reader: &mut R, len: usize) -> Result<Vec<u8>, FrameError> {
    // `vec![0; n]` is a zeroed allocation: large bodies get fresh pages, touched only as
    // they are filled.
    let mut body = vec![0u8; len];
    let mut filled = 0;
    while filled < len {
        let n = reader.read(&mut body[filled..]).await?;
        if n == 0 {
            return Err(truncated(len, filled));
        }
        filled += n;
    }
    Ok(body)
}

/// Reads one whole frame: `Ok(None)` on a clean end of stream before it starts.
pub async fn read<R: AsyncRead + Unpin>(reader: &mut R, max: usize) -> Result<Option<Vec<u8>>, FrameError> {
    match read_header(reader, max).await? {
        Some(len) => read_body(reader, len).await.map(Some),
        None => Ok(None),
    }
}

/// Writes one complete frame (as built by [`encode_json`]) and flushes.
pub async fn write_encoded<W: AsyncWrite + Unpin>(writer: &mut W, frame: &[u8]) -> Result<(), FrameError> {
    writer.write_all(frame).await?;
    writer.flush().await?;
    Ok(())
}

/// Writes `body` as one frame; refuses a body over `max` before writing anything.
pub async fn write<W: AsyncWrite + Unpin>(writer: &mut W, body: &[u8], max: usize) -> Result<(), FrameError> {
    let prefix = header(body.len(), max)?;
    writer.write_all(&prefix).await?;
    writer.write_all(body).await?;
    writer.flush().await?;
    Ok(())
}

fn end_of_header<T>(filled: usize) -> Result<Option<T>, FrameError> {
    if filled == 0 {
        Ok(None)
    } else {
        Err(truncated(HEADER_BYTES, filled))
    }
}

fn truncated(expected: usize, received: usize) -> FrameError {
    FrameError::Truncated {
        expected: expected as u64,
        received: received as u64,
    }
}

/// The same codec over blocking `std::io` streams, for the synchronous client.
pub mod blocking {
    use std::io::{ErrorKind, Read, Write};

    use super::{FrameError, HEADER_BYTES, check_len, end_of_header, header, truncated};

    /// Reads the next length prefix; see [`super::read_header`].
    pub fn read_header<R: Read>(reader: &mut R, max: usize) -> Result<Option<usize>, FrameError> {
        let mut prefix = [0u8; HEADER_BYTES];
        let mut filled = 0;
        while filled < HEADER_BYTES {
            match reader.read(&mut prefix[filled..]) {
                Ok(0) => return end_of_header(filled),
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        check_len(u32::from_be_bytes(prefix), max).map(Some)
    }

    /// Reads a body of exactly `len` bytes; see [`super::read_body`].
    pub fn read_body<R: Read>(reader: &mut R, len: usize) -> Result<Vec<u8>, FrameError> {
        let mut body = vec![0u8; len];
        let mut filled = 0;
        while filled < len {
            match reader.read(&mut body[filled..]) {
                Ok(0) => return Err(truncated(len, filled)),
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(body)
    }

    /// Reads one whole frame; see [`super::read`].
    pub fn read<R: Read>(reader: &mut R, max: usize) -> Result<Option<Vec<u8>>, FrameError> {
        match read_header(reader, max)? {
            Some(len) => read_body(reader, len).map(Some),
            None => Ok(None),
        }
    }

    /// Bodies up to this size are sent with their prefix in one write, so the peer is not
    /// woken for the prefix alone.
    const COALESCE_BYTES: usize = 64 * 1024;

    /// Writes `body` as one frame; refuses a body over `max` before writing anything.
    pub fn write<W: Write>(writer: &mut W, body: &[u8], max: usize) -> Result<(), FrameError> {
        let prefix = header(body.len(), max)?;
        if body.len() <= COALESCE_BYTES {
            let mut frame = Vec::with_capacity(HEADER_BYTES + body.len());
            frame.extend_from_slice(&prefix);
            frame.extend_from_slice(body);
            writer.write_all(&frame)?;
        } else {
            writer.write_all(&prefix)?;
            writer.write_all(body)?;
        }
        writer.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_frame_of_exactly_the_limit_is_allowed_and_one_byte_more_is_not() {
        assert_eq!(check_len(24, 24).unwrap(), 24);
        let err = check_len(25, 24).unwrap_err();
        assert!(matches!(err, FrameError::TooLarge { len: 25, max: 24 }), "{err}");
        assert_eq!(check_len(u32::MAX, MAX_FRAME_BYTES).ok(), None);
    }

    #[test]
    fn encode_json_writes_a_big_endian_prefix_and_the_compact_body() {
        let frame = encode_json(&json!({"a": 1}), MAX_FRAME_BYTES).unwrap();
        assert_eq!(&frame[..4], &[0, 0, 0, 7]);
        assert_eq!(body_of(&frame), br#"{"a":1}"#);
    }

    #[test]
    fn encode_json_refuses_a_body_over_the_limit_without_building_it() {
        let err = encode_json(&json!("0123456789"), 8).unwrap_err();
        // Counting stops at the first write past the limit.
        assert!(matches!(err, FrameError::TooLarge { len, max: 8 } if len > 8), "{err}");
        assert_eq!(encode_json(&json!("012345"), 8).unwrap().len(), 4 + 8);
    }

    #[test]
    fn encode_json_allocates_the_frame_at_its_exact_size() {
        let frame = encode_json(&json!({"data": "x".repeat(100_000)}), MAX_FRAME_BYTES).unwrap();
        assert_eq!(frame.capacity(), frame.len());
    }

    #[tokio::test]
    async fn frames_round_trip_back_to_back_and_end_cleanly() {
        let mut wire = Vec::new();
        write(&mut wire, b"first", 64).await.unwrap();
        write(&mut wire, b"", 64).await.unwrap();
        let mut reader = wire.as_slice();
        assert_eq!(read(&mut reader, 64).await.unwrap().unwrap(), b"first");
        assert_eq!(read(&mut reader, 64).await.unwrap().unwrap(), b"");
        assert!(read(&mut reader, 64).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn an_oversized_header_is_refused_before_the_body_is_read() {
        let mut wire = u32::MAX.to_be_bytes().to_vec();
        wire.extend_from_slice(b"not read");
        let mut reader = wire.as_slice();
        let err = read_header(&mut reader, MAX_FRAME_BYTES).await.unwrap_err();
        assert!(matches!(err, FrameError::TooLarge { len, .. } if len == u64::from(u32::MAX)));
        assert_eq!(reader, b"not read");
    }

    #[tokio::test]
    async fn a_stream_ending_inside_a_frame_is_truncated_not_clean() {
        let mut reader: &[u8] = &[0, 0];
        let err = read(&mut reader, 64).await.unwrap_err();
        assert!(
            matches!(
                err,
                FrameError::Truncated {
                    expected: 4,
                    received: 2
                }
            ),
            "{err}"
        );
        let mut reader: &[u8] = &[0, 0, 0, 5, b'a', b'b'];
        let err = read(&mut reader, 64).await.unwrap_err();
        assert!(
            matches!(
                err,
                FrameError::Truncated {
                    expected: 5,
                    received: 2
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn the_blocking_codec_matches_the_async_one() {
        let mut wire = Vec::new();
        blocking::write(&mut wire, b"{}", 64).unwrap();
        assert_eq!(wire, [0, 0, 0, 2, b'{', b'}']);
        let mut reader = wire.as_slice();
        assert_eq!(blocking::read(&mut reader, 64).unwrap().unwrap(), b"{}");
        assert!(blocking::read(&mut reader, 64).unwrap().is_none());
        let mut reader: &[u8] = &[0, 0, 0, 65];
        assert!(matches!(
            blocking::read(&mut reader, 64).unwrap_err(),
            FrameError::TooLarge { len: 65, max: 64 }
        ));
        assert!(blocking::write(&mut Vec::new(), &[0; 65], 64).is_err());
    }
}
