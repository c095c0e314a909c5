//! A throw-away PKI for TLS tests, benches and the conformance runner: real certificates
//! generated with `rcgen` and written as PEM files.
//!
//! - a server CA and a server certificate for `localhost` and `127.0.0.1`;
//! - a client CA that issues client certificates ([`Pki::client`]), current or expired;
//! - an unrelated CA ([`Pki::other_ca`]) for "wrong CA" cases on either side.
//!
//! Shared by `tests/` and `benches/transport.rs` (through `#[path]`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

/// A client certificate on disk.
#[derive(Clone, Debug)]
pub struct ClientCert {
    pub name: String,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// `sha256:<hex>` of the certificate's DER, as `[[remote.clients]]` lists it.
    pub fingerprint: String,
}

/// Who signs a client certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signer {
    /// The client CA the server trusts.
    ClientCa,
    /// A CA the server does not know.
    Other,
}

/// The PEM files of a test PKI in one directory.
pub struct Pki {
    pub dir: PathBuf,
    /// The CA bundle a client trusts for the server.
    pub server_ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    /// The CA the server trusts for clients.
    pub client_ca: PathBuf,
    /// A CA neither side trusts.
    pub other_ca: PathBuf,
    client_issuer: CertifiedIssuer<'static, KeyPair>,
    other_issuer: CertifiedIssuer<'static, KeyPair>,
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

impl Pki {
    /// Generates the CAs and the server certificate into `dir`.
    pub fn generate(dir: &Path) -> Pki {
        std::fs::create_dir_all(dir).unwrap();
        let server_issuer = ca("Memoree Test Server CA");
        let client_issuer = ca("Memoree Test Client CA");
        let other_issuer = ca("Memoree Test Unrelated CA");
        let mut params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "memoree test server");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().unwrap();
        let server = params.signed_by(&key, &*server_issuer).unwrap();
        let pki = Pki {
            dir: dir.to_path_buf(),
            server_ca: dir.join("server-ca.pem"),
            server_cert: dir.join("server.pem"),
            server_key: dir.join("server.key"),
            client_ca: dir.join("client-ca.pem"),
            other_ca: dir.join("other-ca.pem"),
            client_issuer,
            other_issuer,
        };
        write(&pki.server_ca, &server_issuer.pem());
        write(&pki.server_cert, &server.pem());
        write(&pki.server_key, &key.serialize_pem());
        write(&pki.client_ca, &pki.client_issuer.pem());
        write(&pki.other_ca, &pki.other_issuer.pem());
        pki
    }

    /// A client certificate named `name`, signed by `signer`, expired a few years ago when
    /// `expired`.
    pub fn client(&self, name: &str, signer: Signer, expired: bool) -> ClientCert {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let issuer = match signer {
            Signer::ClientCa => &*self.client_issuer,
            Signer::Other => &*self.other_issuer,
        };
        let cert = params.signed_by(&key, issuer).unwrap();
        let client = ClientCert {
            name: name.to_owned(),
            cert: self.dir.join(format!("{name}.pem")),
            key: self.dir.join(format!("{name}.key")),
            fingerprint: memoree::tls::Fingerprint::of(cert.der()).to_string(),
        };
        write(&client.cert, &cert.pem());
        write(&client.key, &key.serialize_pem());
        client
    }

    /// The `[remote]` table of a daemon's `config.toml` accepting `clients` with their
    /// workspaces (`["*"]` for all).
    pub fn remote_table(&self, clients: &[(&ClientCert, &[&str])]) -> String {
        let mut text = format!(
            "[remote]\ncert = {:?}\nkey = {:?}\nclient_ca = {:?}\n",
            self.server_cert, self.server_key, self.client_ca
        );
        for (client, workspaces) in clients {
            let list: Vec<String> = workspaces.iter().map(|w| format!("{w:?}")).collect();
            text.push_str(&format!(
                "\n[[remote.clients]]\nname = {:?}\nfingerprint = {:?}\nworkspaces = [{}]\n",
                client.name,
                client.fingerprint,
                list.join(", ")
            ));
        }
        text
    }

    /// Client credentials for `memoree::client::tls`: trusting `ca`, presenting `client`.
    pub fn credentials(&self, ca: &Path, client: Option<&ClientCert>) -> memoree::client::tls::TlsCredentials {
        memoree::client::tls::TlsCredentials {
            ca: Some(ca.to_path_buf()),
            cert: client.map(|c| c.cert.clone()),
            key: client.map(|c| c.key.clone()),
            server_name: None,
        }
    }
}
