//! BLAKE3-256 content digests: lowercase hex on the wire, two-level fan-out on disk.

use std::fmt;
use std::path::PathBuf;

/// The BLAKE3-256 digest of a blob's raw bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest([u8; 32]);

impl Digest {
    /// Digests `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(*blake3::hash(bytes).as_bytes())
    }

    /// The digest a finished BLAKE3 hasher computed.
    pub fn from_hash(hash: blake3::Hash) -> Digest {
        Digest(*hash.as_bytes())
    }

    /// Parses 64 lowercase hex characters.
    pub fn parse(hex: &str) -> Option<Digest> {
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return None;
        }
        let hash = blake3::Hash::from_hex(hex).ok()?;
        Some(Digest(*hash.as_bytes()))
    }

    /// Lowercase hex, 64 characters.
    pub fn to_hex(&self) -> String {
        blake3::Hash::from(self.0).to_hex().to_string()
    }

    /// The relative fan-out path `<h0h1>/<h2h3>/<hex>`.
    pub fn relative_path(&self) -> PathBuf {
        let hex = self.to_hex();
        PathBuf::from(&hex[0..2]).join(&hex[2..4]).join(hex)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_uppercase() {
        let digest = Digest::of(b"hello");
        assert_eq!(Digest::parse(&digest.to_hex()), Some(digest));
        assert_eq!(Digest::parse(&digest.to_hex().to_uppercase()), None);
        assert_eq!(Digest::parse("abc"), None);
    }

    #[test]
    fn fan_out_path_uses_the_first_four_hex_digits() {
        let digest = Digest::of(b"");
        let hex = digest.to_hex();
        let path = digest.relative_path();
        assert_eq!(path, PathBuf::from(&hex[..2]).join(&hex[2..4]).join(&hex));
    }
}
