//! Remote access: the `[remote]` table of `config.toml` and the TLS acceptor built from it.
//!
//! A `tls://IP:PORT` listener speaks TLS 1.3 (rustls, `ring`) and requires a client
//! certificate issued by `client_ca` whose SHA-256 fingerprint is listed in
//! `[[remote.clients]]`; the entry's `workspaces` become the connection's [`Grant`], which
//! the service enforces on every request. Inside the TLS stream the v1 frames are unchanged.
//!
//! ```toml
//! [remote]
//! cert = "server.pem"          # the server's certificate chain (PEM), leaf first
//! key = "server.key"           # its private key (PEM)
//! client_ca = "clients-ca.pem" # the CA(s) that issue client certificates
//!
//! [[remote.clients]]
//! name = "ci-runner"
//! fingerprint = "sha256:…"     # openssl x509 -noout -fingerprint -sha256 -in client.pem
//! workspaces = ["wsp_team"]    # ["*"]: every workspace and the store-wide operations
//! ```
//!
//! Relative paths are relative to the directory of `config.toml`. Credentials are never
//! stored: only certificate fingerprints, which are public.
//!
//! **Invariants:** a client certificate that does not chain to `client_ca`, has expired or
//! is not listed never completes a handshake (it gets a TLS alert: `certificate_expired`,
//! `unknown_ca`, `access_denied`, …); every completed handshake maps to exactly one listed
//! client.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};
use serde::Deserialize;
use tokio_rustls::TlsAcceptor;

use crate::service::Grant;
use crate::tls::{self, Fingerprint};

/// The workspace list that grants everything.
pub const ALL_WORKSPACES: &str = "*";

/// The `[remote]` table: server credentials and the clients it accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteConfig {
    /// The server certificate chain (PEM), leaf first.
    pub cert: PathBuf,
    /// The server's private key (PEM).
    pub key: PathBuf,
    /// The CA certificate(s) (PEM) client certificates must chain to.
    pub client_ca: PathBuf,
    pub clients: Vec<RemoteClient>,
}

/// One `[[remote.clients]]` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteClient {
    pub name: String,
    pub fingerprint: Fingerprint,
    /// `None`: every workspace (`["*"]`).
    pub workspaces: Option<BTreeSet<String>>,
}

impl RemoteClient {
    /// The grant of a connection presenting this client's certificate.
    pub fn grant(&self) -> Grant {
        match &self.workspaces {
            None => Grant::unrestricted(),
            Some(workspaces) => Grant::workspaces(&self.name, workspaces.iter().cloned()),
        }
    }
}

#[derive(Deserialize)]
struct ConfigFile {
    remote: Option<RawRemote>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRemote {
    cert: PathBuf,
    key: PathBuf,
    client_ca: PathBuf,
    #[serde(default)]
    clients: Vec<RawClient>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClient {
    name: String,
    fingerprint: String,
    workspaces: Vec<String>,
}

impl RemoteConfig {
    /// The `[remote]` table of the config file at `path`; `None` when the file or the
    /// table is absent.
    pub fn load(path: &Path) -> Result<Option<RemoteConfig>, String> {
        match crate::ambient::read_config(path)? {
            Some(text) => RemoteConfig::parse(path, &text),
            None => Ok(None),
        }
    }

    /// Parses the `[remote]` table of `text` (read from `path`, whose directory anchors
    /// relative paths).
    pub fn parse(path: &Path, text: &str) -> Result<Option<RemoteConfig>, String> {
        let invalid = |problem: String| format!("invalid config {}: [remote]: {problem}", path.display());
        let file: ConfigFile =
            toml::from_str(text).map_err(|e| format!("invalid config {}: {}", path.display(), e.message()))?;
        let Some(raw) = file.remote else {
            return Ok(None);
        };
        let base = path.parent().unwrap_or(Path::new("."));
        let mut names = BTreeSet::new();
        let mut fingerprints = BTreeSet::new();
        let mut clients = Vec::with_capacity(raw.clients.len());
        for (index, client) in raw.clients.into_iter().enumerate() {
            let at = format!("clients[{index}]");
            if client.name.trim().is_empty() {
                return Err(invalid(format!("{at}.name must not be empty")));
            }
            if !names.insert(client.name.clone()) {
                return Err(invalid(format!("{at}: the name {:?} is listed twice", client.name)));
            }
            let fingerprint =
                Fingerprint::parse(&client.fingerprint).map_err(|e| invalid(format!("{at}.fingerprint: {e}")))?;
            if !fingerprints.insert(fingerprint) {
                return Err(invalid(format!("{at}: the fingerprint {fingerprint} is listed twice")));
            }
            let workspaces =
                parse_workspaces(&client.workspaces).map_err(|e| invalid(format!("{at}.workspaces: {e}")))?;
            clients.push(RemoteClient {
                name: client.name,
                fingerprint,
                workspaces,
            });
        }
        if clients.is_empty() {
            return Err(invalid(
                "no [[remote.clients]]: list at least one client certificate fingerprint with its workspaces"
                    .to_owned(),
            ));
        }
        Ok(Some(RemoteConfig {
            cert: base.join(raw.cert),
            key: base.join(raw.key),
            client_ca: base.join(raw.client_ca),
            clients,
        }))
    }
}

fn parse_workspaces(list: &[String]) -> Result<Option<BTreeSet<String>>, String> {
    if list.is_empty() {
        return Err("list at least one workspace id, or \"*\" for every workspace".to_owned());
    }
    if list.iter().any(|w| w == ALL_WORKSPACES) {
        if list.len() > 1 {
            return Err("\"*\" grants every workspace and must be the only entry".to_owned());
        }
        return Ok(None);
    }
    if let Some(blank) = list.iter().find(|w| w.trim().is_empty()) {
        return Err(format!("{blank:?} is not a workspace id"));
    }
    Ok(Some(list.iter().cloned().collect()))
}

/// The TLS side of a `tls://` listener: the acceptor and the grant of each listed client.
#[derive(Clone)]
pub(super) struct ServerTls {
    acceptor: TlsAcceptor,
    grants: Arc<HashMap<Fingerprint, (String, Grant)>>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("clients", &self.grants.len())
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Loads the server credentials and the client CA and builds the acceptor.
    pub(super) fn build(config: &RemoteConfig) -> Result<ServerTls, String> {
        let chain = tls::load_certificates("server certificate", &config.cert).map_err(|e| e.to_string())?;
        let key = tls::load_private_key("server private key", &config.key).map_err(|e| e.to_string())?;
        let mut roots = RootCertStore::empty();
        for ca in tls::load_certificates("client CA", &config.client_ca).map_err(|e| e.to_string())? {
            roots
                .add(ca)
                .map_err(|e| format!("the client CA {} is not usable: {e}", config.client_ca.display()))?;
        }
        let provider = tls::provider();
        let webpki = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| format!("the client CA {} is not usable: {e}", config.client_ca.display()))?;
        let listed: BTreeSet<Fingerprint> = config.clients.iter().map(|c| c.fingerprint).collect();
        let verifier = Arc::new(ListedClients { webpki, listed });
        let server = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(tls::PROTOCOL_VERSIONS)
            .map_err(|e| format!("cannot configure TLS: {e}"))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain, key)
            .map_err(|e| {
                format!(
                    "the server certificate {} and key {} are not usable together: {e}",
                    config.cert.display(),
                    config.key.display()
                )
            })?;
        let grants = config
            .clients
            .iter()
            .map(|c| (c.fingerprint, (c.name.clone(), c.grant())))
            .collect();
        Ok(ServerTls {
            acceptor: TlsAcceptor::from(Arc::new(server)),
            grants: Arc::new(grants),
        })
    }

    pub(super) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }

    /// The listed client and grant of a completed handshake's peer certificate.
    pub(super) fn client_of(&self, peer: Option<&[CertificateDer<'static>]>) -> Option<&(String, Grant)> {
        let leaf = peer?.first()?;
        self.grants.get(&Fingerprint::of(leaf))
    }
}

/// WebPKI verification against the client CA (chain, validity period, key usage), then the
/// fingerprint allow-list: a valid certificate that is not listed gets `access_denied`.
#[derive(Debug)]
struct ListedClients {
    webpki: Arc<dyn ClientCertVerifier>,
    listed: BTreeSet<Fingerprint>,
}

impl ClientCertVerifier for ListedClients {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        true
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.webpki.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self.webpki.verify_client_cert(end_entity, intermediates, now)?;
        if self.listed.contains(&Fingerprint::of(end_entity)) {
            Ok(verified)
        } else {
            tracing::warn!(
                fingerprint = %Fingerprint::of(end_entity),
                "refusing a client certificate that is not listed in [[remote.clients]]"
            );
            Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FP: &str = "sha256:a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";

    fn parse(text: &str) -> Result<Option<RemoteConfig>, String> {
        RemoteConfig::parse(Path::new("/etc/memoree/config.toml"), text)
    }

    #[test]
    fn a_remote_table_resolves_paths_next_to_the_config_and_grants_listed_workspaces() {
        let config = parse(&format!(
            "schema = 1\n[remote]\ncert = \"server.pem\"\nkey = \"/keys/server.key\"\nclient_ca = \"ca.pem\"\n\
             [[remote.clients]]\nname = \"ci\"\nfingerprint = \"{FP}\"\nworkspaces = [\"wsp_a\", \"wsp_b\"]\n\
             [[remote.clients]]\nname = \"admin\"\nfingerprint = \"{}\"\nworkspaces = [\"*\"]\n",
            FP.replace("a1", "b2")
        ))
        .unwrap()
        .unwrap();
        assert_eq!(config.cert, Path::new("/etc/memoree/server.pem"));
        assert_eq!(config.key, Path::new("/keys/server.key"));
        let ci = config.clients[0].grant();
        assert!(ci.is_restricted() && ci.allows("wsp_a") && ci.allows("wsp_b") && !ci.allows("wsp_c"));
        assert!(!config.clients[1].grant().is_restricted());
        assert_eq!(parse("schema = 1\n").unwrap(), None);
    }

    #[test]
    fn a_broken_client_list_is_refused_with_the_entry_it_concerns() {
        let table = |clients: &str| {
            parse(&format!(
                "[remote]\ncert = \"s.pem\"\nkey = \"s.key\"\nclient_ca = \"ca.pem\"\n{clients}"
            ))
            .unwrap_err()
        };
        assert!(table("").contains("no [[remote.clients]]"));
        let entry = |fields: &str| format!("[[remote.clients]]\n{fields}\n");
        let error = table(&entry(&format!(
            "name = \"a\"\nfingerprint = \"{FP}\"\nworkspaces = []"
        )));
        assert!(error.contains("clients[0].workspaces"), "{error}");
        let error = table(&entry(&format!(
            "name = \"a\"\nfingerprint = \"{FP}\"\nworkspaces = [\"*\", \"w\"]"
        )));
        assert!(error.contains("must be the only entry"), "{error}");
        let error = table(&entry("name = \"a\"\nfingerprint = \"nope\"\nworkspaces = [\"w\"]"));
        assert!(error.contains("clients[0].fingerprint"), "{error}");
        let twice = entry(&format!("name = \"a\"\nfingerprint = \"{FP}\"\nworkspaces = [\"w\"]"));
        let error = table(&format!("{twice}{}", twice.replace("\"a\"", "\"b\"")));
        assert!(error.contains("listed twice"), "{error}");
        let error = table(&entry(&format!(
            "name = \"a\"\nfingerprint = \"{FP}\"\nworkspaces = [\"w\"]\ntoken = \"x\""
        )));
        assert!(error.contains("token"), "{error}");
    }
}
