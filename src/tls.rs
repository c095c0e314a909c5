//! TLS pieces both sides use (rustls on the `ring` provider, TLS 1.3 only): PEM loading of
//! certificates and private keys, the SHA-256 certificate [`Fingerprint`] that names a
//! client credential in `[[remote.clients]]`, and the [`provider`].
//!
//! The daemon's acceptor (client certificate required, fingerprints mapped to workspace
//! grants) is in `daemon::remote`; the client's connector (CA bundle, client certificate,
//! failure classification) is in `client::tls`.
//!
//! **Invariant:** nothing here does network I/O; a key file's contents never appear in an
//! error message.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The one TLS protocol version either side speaks.
pub static PROTOCOL_VERSIONS: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13];

/// The crypto provider of every TLS configuration: `ring`.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A PEM file that could not be used. Always a configuration problem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PemError {
    #[error("cannot read the {what} {}: {source}", path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the {what} {} is not valid PEM: {detail}", path.display())]
    Invalid {
        what: &'static str,
        path: PathBuf,
        detail: String,
    },
    #[error("the {what} {} contains no {expected}", path.display())]
    Empty {
        what: &'static str,
        path: PathBuf,
        expected: &'static str,
    },
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, PemError> {
    std::fs::read(path).map_err(|source| PemError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })
}

/// Every certificate (`-----BEGIN CERTIFICATE-----`) of a PEM file, in order; at least one.
/// `what` names the file in messages ("CA bundle", "server certificate", …).
pub fn load_certificates(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let bytes = read(what, path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PemError::Invalid {
            what,
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(PemError::Empty {
            what,
            path: path.to_path_buf(),
            expected: "certificate (-----BEGIN CERTIFICATE-----)",
        });
    }
    Ok(certs)
}

/// The first private key (PKCS#8, PKCS#1 or SEC1) of a PEM file.
pub fn load_private_key(what: &'static str, path: &Path) -> Result<PrivateKeyDer<'static>, PemError> {
    let bytes = read(what, path)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => PemError::Empty {
            what,
            path: path.to_path_buf(),
            expected: "private key (-----BEGIN PRIVATE KEY-----)",
        },
        // The error text of a malformed section never includes the key material.
        other => PemError::Invalid {
            what,
            path: path.to_path_buf(),
            detail: other.to_string(),
        },
    })
}

/// The SHA-256 digest of a certificate's DER encoding, written `sha256:<64 hex digits>`:
/// the same value as `openssl x509 -noout -fingerprint -sha256` (which prints it in upper
/// case with colons; [`Fingerprint::parse`] accepts both spellings).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    pub fn of(certificate: &CertificateDer<'_>) -> Fingerprint {
        let digest = ring::digest::digest(&ring::digest::SHA256, certificate.as_ref());
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(digest.as_ref());
        Fingerprint(bytes)
    }

    /// `sha256:<hex>`, `<hex>`, or OpenSSL's `AB:CD:…` (optionally after `SHA256 Fingerprint=`);
    /// case-insensitive.
    pub fn parse(text: &str) -> Result<Fingerprint, String> {
        let trimmed = text.trim();
        let lower = trimmed.to_ascii_lowercase();
        let body = lower
            .strip_prefix("sha256:")
            .or_else(|| lower.strip_prefix("sha256 fingerprint="))
            .unwrap_or(&lower);
        let hex: String = body.chars().filter(|c| *c != ':').collect();
        let invalid =
            || format!("{trimmed:?} is not a SHA-256 certificate fingerprint (expected sha256: and 64 hex digits)");
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid());
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| invalid())?;
        }
        Ok(Fingerprint(bytes))
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fingerprint_reads_in_every_common_spelling_and_prints_as_sha256_hex() {
        let hex = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";
        let canonical = Fingerprint::parse(&format!("sha256:{hex}")).unwrap();
        assert_eq!(canonical.to_string(), format!("sha256:{hex}"));
        let openssl: Vec<String> = hex
            .as_bytes()
            .chunks(2)
            .map(|pair| String::from_utf8_lossy(pair).to_uppercase())
            .collect();
        let openssl = format!("SHA256 Fingerprint={}", openssl.join(":"));
        assert_eq!(Fingerprint::parse(&openssl).unwrap(), canonical);
        assert_eq!(Fingerprint::parse(hex).unwrap(), canonical);
        assert!(Fingerprint::parse("sha256:abcd").unwrap_err().contains("64 hex digits"));
        assert!(Fingerprint::parse(&format!("sha256:{}", "g".repeat(64))).is_err());
    }

    #[test]
    fn pem_problems_name_the_file_and_what_was_expected() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no pem here\n").unwrap();
        let error = load_certificates("CA bundle", &empty).unwrap_err().to_string();
        assert!(
            error.contains("CA bundle") && error.contains("empty.pem") && error.contains("CERTIFICATE"),
            "{error}"
        );
        let error = load_private_key("client key", &empty).unwrap_err().to_string();
        assert!(error.contains("client key") && error.contains("PRIVATE KEY"), "{error}");
        let missing = load_certificates("CA bundle", &dir.path().join("absent.pem")).unwrap_err();
        assert!(matches!(missing, PemError::Read { .. }), "{missing:?}");
    }
}
