//! The client side of `tls://` endpoints: where credentials come from, the TLS 1.3
//! connector (rustls, `ring`), and the classification of handshake failures into
//! [`ClientError::Tls`] with a [`TlsFailure`] reason and a hint saying what to fix.
//!
//! Credentials, each from the environment first, then the `[tls]` table of `config.toml`
//! (relative paths are relative to that file's directory):
//!
//! | setting | environment | `[tls]` key |
//! |---|---|---|
//! | CA bundle the server certificate must chain to (required) | `MEMOREE_TLS_CA` | `ca` |
//! | this client's certificate chain (PEM) | `MEMOREE_TLS_CERT` | `cert` |
//! | its private key (PEM) | `MEMOREE_TLS_KEY` | `key` |
//! | the name to verify the server certificate against (default: the endpoint's host) | `MEMOREE_TLS_SERVER_NAME` | `server_name` |
//!
//! **Invariants:** a `tls://` endpoint is never reached without verifying the server
//! certificate; no credential problem is reported as retryable.

use std::ffi::OsString;
use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{AlertDescription, CertificateError, ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use serde::Deserialize;

use crate::paths::{Paths, TlsAddr};
use crate::protocol::TlsFailure;
use crate::tls::{self, Fingerprint};
use crate::transport::ClientError;

pub const ENV_CA: &str = "MEMOREE_TLS_CA";
pub const ENV_CERT: &str = "MEMOREE_TLS_CERT";
pub const ENV_KEY: &str = "MEMOREE_TLS_KEY";
pub const ENV_SERVER_NAME: &str = "MEMOREE_TLS_SERVER_NAME";

/// A client's TLS settings (file paths, nothing loaded yet).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsCredentials {
    pub ca: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub server_name: Option<String>,
}

#[derive(Deserialize)]
struct ConfigFile {
    tls: Option<RawTls>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTls {
    ca: Option<PathBuf>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    server_name: Option<String>,
}

impl TlsCredentials {
    /// The settings of this process: its environment over the `[tls]` table of the
    /// resolved `config.toml`.
    pub fn from_env() -> Result<TlsCredentials, ClientError> {
        let env = |name: &str| std::env::var_os(name);
        let config_file = Paths::from_env().ok().map(|paths| paths.config_file);
        TlsCredentials::resolve(&env, config_file.as_deref())
    }

    /// [`TlsCredentials::from_env`] with an injected environment and config file.
    pub fn resolve(
        env: &dyn Fn(&str) -> Option<OsString>,
        config_file: Option<&Path>,
    ) -> Result<TlsCredentials, ClientError> {
        let raw = match config_file {
            Some(path) => read_table(path)?,
            None => RawTls::default(),
        };
        let base = config_file.and_then(Path::parent).unwrap_or(Path::new("."));
        let anchored = |path: Option<PathBuf>| path.map(|p| base.join(p));
        let from_env = |name: &str| env(name).filter(|value| !value.is_empty());
        Ok(TlsCredentials {
            ca: from_env(ENV_CA).map(PathBuf::from).or_else(|| anchored(raw.ca)),
            cert: from_env(ENV_CERT).map(PathBuf::from).or_else(|| anchored(raw.cert)),
            key: from_env(ENV_KEY).map(PathBuf::from).or_else(|| anchored(raw.key)),
            server_name: from_env(ENV_SERVER_NAME)
                .map(|name| name.to_string_lossy().into_owned())
                .or(raw.server_name),
        })
    }

    /// Loads the files and builds the connector.
    pub fn connector(&self) -> Result<Connector, ClientError> {
        let config_error = |message: String| ClientError::Config(message);
        let Some(ca) = &self.ca else {
            return Err(config_error(format!(
                "a tls:// endpoint needs the CA certificate that issued the server's certificate: set {ENV_CA} or [tls] ca in config.toml"
            )));
        };
        let mut roots = RootCertStore::empty();
        for certificate in tls::load_certificates("CA bundle", ca).map_err(|e| config_error(e.to_string()))? {
            roots
                .add(certificate)
                .map_err(|e| config_error(format!("the CA bundle {} is not usable: {e}", ca.display())))?;
        }
        let builder = ClientConfig::builder_with_provider(tls::provider())
            .with_protocol_versions(tls::PROTOCOL_VERSIONS)
            .map_err(|e| config_error(format!("cannot configure TLS: {e}")))?
            .with_root_certificates(roots);
        let (config, identity) = match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => {
                let chain =
                    tls::load_certificates("client certificate", cert).map_err(|e| config_error(e.to_string()))?;
                let fingerprint = Fingerprint::of(&chain[0]);
                let private_key =
                    tls::load_private_key("client private key", key).map_err(|e| config_error(e.to_string()))?;
                let config = builder.with_client_auth_cert(chain, private_key).map_err(|e| {
                    config_error(format!(
                        "the client certificate {} and key {} are not usable together: {e}",
                        cert.display(),
                        key.display()
                    ))
                })?;
                (config, Some((cert.clone(), fingerprint)))
            }
            (None, None) => (builder.with_no_client_auth(), None),
            (Some(_), None) => {
                return Err(config_error(format!(
                    "a client certificate is set but no private key: set {ENV_KEY} or [tls] key in config.toml"
                )));
            }
            (None, Some(_)) => {
                return Err(config_error(format!(
                    "a client private key is set but no certificate: set {ENV_CERT} or [tls] cert in config.toml"
                )));
            }
        };
        let server_name = match &self.server_name {
            Some(name) => Some(
                ServerName::try_from(name.clone())
                    .map_err(|e| config_error(format!("the TLS server name {name:?} is not usable: {e}")))?,
            ),
            None => None,
        };
        Ok(Connector {
            config: Arc::new(config),
            server_name,
            ca: ca.clone(),
            identity,
        })
    }
}

fn read_table(path: &Path) -> Result<RawTls, ClientError> {
    let Some(text) = crate::ambient::read_config(path).map_err(ClientError::Config)? else {
        return Ok(RawTls::default());
    };
    let file: ConfigFile = toml::from_str(&text)
        .map_err(|e| ClientError::Config(format!("invalid config {}: {}", path.display(), e.message())))?;
    Ok(file.tls.unwrap_or_default())
}

/// A loaded TLS client configuration for `tls://` endpoints.
#[derive(Clone)]
pub struct Connector {
    config: Arc<ClientConfig>,
    server_name: Option<ServerName<'static>>,
    ca: PathBuf,
    /// The client certificate's path and fingerprint, for messages.
    identity: Option<(PathBuf, Fingerprint)>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("ca", &self.ca)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

/// A TLS session over TCP.
pub(crate) type TlsStream = StreamOwned<ClientConnection, TcpStream>;

impl Connector {
    /// The client certificate's fingerprint, as a server lists it in `[[remote.clients]]`.
    pub fn fingerprint(&self) -> Option<Fingerprint> {
        self.identity.as_ref().map(|(_, fingerprint)| *fingerprint)
    }

    /// Connects over TCP and completes the TLS handshake, all within `limit`.
    pub(crate) fn connect(&self, addr: &TlsAddr, limit: Duration) -> Result<TlsStream, ClientError> {
        let endpoint = format!("tls://{addr}");
        let tcp = connect_tcp(addr, limit).map_err(|e| {
            if matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock) {
                ClientError::Transport(format!(
                    "connect to {endpoint} timed out after {}",
                    crate::net::describe(limit)
                ))
            } else {
                ClientError::Transport(format!("cannot connect to {endpoint}: {e}"))
            }
        })?;
        let name = match &self.server_name {
            Some(name) => name.clone(),
            None => ServerName::try_from(addr.host.clone())
                .map_err(|e| ClientError::Config(format!("{:?} is not a usable TLS server name: {e}", addr.host)))?,
        };
        let connection = ClientConnection::new(Arc::clone(&self.config), name)
            .map_err(|e| ClientError::Config(format!("cannot start a TLS session: {e}")))?;
        let mut stream = StreamOwned::new(connection, tcp);
        let handshake = (|| -> io::Result<()> {
            stream.sock.set_read_timeout(Some(limit))?;
            stream.sock.set_write_timeout(Some(limit))?;
            while stream.conn.is_handshaking() {
                stream.conn.complete_io(&mut stream.sock)?;
            }
            Ok(())
        })();
        match handshake {
            Ok(()) => Ok(stream),
            Err(e) => Err(self.classify(&e, addr).unwrap_or_else(|| {
                if matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock) {
                    ClientError::Transport(format!(
                        "the TLS handshake with {endpoint} timed out after {}",
                        crate::net::describe(limit)
                    ))
                } else {
                    ClientError::Transport(format!("the TLS handshake with {endpoint} failed: {e}"))
                }
            })),
        }
    }

    /// The TLS failure an I/O error carries, if any: the server's certificate rejected here,
    /// or this client's rejected by the server (its alert arrives during the handshake or,
    /// in TLS 1.3, at the first read after it).
    pub(crate) fn classify(&self, error: &io::Error, addr: &TlsAddr) -> Option<ClientError> {
        let tls_error = error.get_ref()?.downcast_ref::<rustls::Error>()?;
        let endpoint = format!("tls://{addr}");
        let ours = || match &self.identity {
            Some((path, fingerprint)) => format!("this client's certificate {} ({fingerprint})", path.display()),
            None => "this client's certificate".to_owned(),
        };
        let (failure, message) = match tls_error {
            rustls::Error::InvalidCertificate(problem) => match problem {
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => (
                    TlsFailure::ServerNameMismatch,
                    format!("the certificate of {endpoint} is not valid for the name it was reached by: {tls_error}"),
                ),
                CertificateError::Expired
                | CertificateError::ExpiredContext { .. }
                | CertificateError::NotValidYet
                | CertificateError::NotValidYetContext { .. } => (
                    TlsFailure::ServerCertificateExpired,
                    format!("the certificate of {endpoint} is expired or not yet valid: {tls_error}"),
                ),
                _ => (
                    TlsFailure::ServerUntrusted,
                    format!(
                        "the certificate of {endpoint} is not trusted by the CA bundle {}: {tls_error}",
                        self.ca.display()
                    ),
                ),
            },
            rustls::Error::AlertReceived(alert) => match alert {
                AlertDescription::CertificateRequired => (
                    TlsFailure::ClientCertificateMissing,
                    format!("{endpoint} requires a client certificate and none is configured"),
                ),
                AlertDescription::CertificateExpired => (
                    TlsFailure::ClientCertificateExpired,
                    format!("{endpoint} refused {} as expired or not yet valid", ours()),
                ),
                AlertDescription::AccessDenied => (
                    TlsFailure::ClientCertificateNotListed,
                    format!(
                        "{endpoint} does not accept {}: its fingerprint is not listed in the server's [[remote.clients]]",
                        ours()
                    ),
                ),
                AlertDescription::UnknownCA
                | AlertDescription::BadCertificate
                | AlertDescription::UnsupportedCertificate
                | AlertDescription::CertificateRevoked
                | AlertDescription::CertificateUnknown
                | AlertDescription::DecryptError => (
                    TlsFailure::ClientCertificateUntrusted,
                    format!(
                        "{endpoint} refused {} ({alert:?}): it is not issued by the CA the server trusts for clients",
                        ours()
                    ),
                ),
                _ => (
                    TlsFailure::HandshakeFailed,
                    format!("{endpoint} ended the TLS session: {tls_error}"),
                ),
            },
            _ => (
                TlsFailure::HandshakeFailed,
                format!("the TLS session with {endpoint} failed: {tls_error}"),
            ),
        };
        Some(ClientError::Tls { failure, message })
    }
}

/// A TCP connection to the first address of `addr` that accepts one.
fn connect_tcp(addr: &TlsAddr, limit: Duration) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{} resolves to no address", addr.host));
    for socket_addr in (addr.host.as_str(), addr.port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&socket_addr, limit) {
            Ok(stream) => {
                stream.set_nodelay(true)?;
                return Ok(stream);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_overrides_the_tls_table_and_relative_paths_follow_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.toml");
        std::fs::write(
            &config,
            "schema = 1\n[tls]\nca = \"ca.pem\"\ncert = \"client.pem\"\nkey = \"client.key\"\nserver_name = \"memoree.example\"\n",
        )
        .unwrap();
        let none = |_: &str| None;
        let settings = TlsCredentials::resolve(&none, Some(&config)).unwrap();
        assert_eq!(settings.ca, Some(dir.path().join("ca.pem")));
        assert_eq!(settings.key, Some(dir.path().join("client.key")));
        assert_eq!(settings.server_name.as_deref(), Some("memoree.example"));
        let env = |name: &str| (name == ENV_CERT).then(|| OsString::from("/elsewhere/me.pem"));
        let settings = TlsCredentials::resolve(&env, Some(&config)).unwrap();
        assert_eq!(settings.cert, Some(PathBuf::from("/elsewhere/me.pem")));
        assert_eq!(settings.ca, Some(dir.path().join("ca.pem")));
        std::fs::write(&config, "[tls]\ncafile = \"x\"\n").unwrap();
        let error = TlsCredentials::resolve(&none, Some(&config)).unwrap_err().to_string();
        assert!(error.contains("cafile"), "{error}");
    }

    #[test]
    fn missing_or_half_configured_credentials_are_config_errors_naming_the_setting() {
        let error = TlsCredentials::default().connector().unwrap_err();
        assert!(
            matches!(&error, ClientError::Config(m) if m.contains(ENV_CA)),
            "{error}"
        );
        let dir = tempfile::tempdir().unwrap();
        let settings = TlsCredentials {
            ca: Some(dir.path().join("absent-ca.pem")),
            ..TlsCredentials::default()
        };
        let error = settings.connector().unwrap_err().to_string();
        assert!(error.contains("absent-ca.pem"), "{error}");
    }
}
