//! The endpoint syntax: `unix://PATH`, `tcp://IP:PORT` and `tls://HOST:PORT`, parsed by
//! [`Endpoint::parse`] (also `FromStr`) and printed by `Display`; re-exported as
//! `crate::paths::{Endpoint, EndpointError, TlsAddr}`.
//!
//! **Invariants:** parsing is pure (no I/O, no name resolution: a `tcp://` host must be an
//! IP literal, a `tls://` DNS name is only checked and lowercased); an endpoint prints in the
//! form it parses from, so the printed text of a parsed endpoint parses back to it; every
//! parse failure is a `CONFIG_ERROR`.

use std::fmt;
use std::net::{AddrParseError, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;

use crate::protocol::ErrorCode;

/// A daemon endpoint: a Unix socket path, a plain TCP socket address (IP literal only), or
/// TLS over TCP to a host name or IP (`tls://host:port`; the host is also the name the
/// server certificate must carry). A daemon listens on TLS at an IP literal only.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Unix(PathBuf),
    Tcp(SocketAddr),
    Tls(TlsAddr),
}

/// The host and port of a `tls://` endpoint. The host is an IP literal (without brackets)
/// or a DNS name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TlsAddr {
    pub host: String,
    pub port: u16,
}

impl TlsAddr {
    /// The host as an IP address, when it is an IP literal.
    pub fn ip(&self) -> Option<std::net::IpAddr> {
        self.host.parse().ok()
    }

    /// The socket address of an IP-literal host (what a daemon binds).
    pub fn socket_addr(&self) -> Option<SocketAddr> {
        self.ip().map(|ip| SocketAddr::new(ip, self.port))
    }

    fn parse(text: &str) -> Result<TlsAddr, String> {
        if let Ok(addr) = text.parse::<SocketAddr>() {
            return Ok(TlsAddr {
                host: addr.ip().to_string(),
                port: addr.port(),
            });
        }
        let Some((host, port)) = text.rsplit_once(':') else {
            return Err(format!("{text:?} needs a port (tls://HOST:PORT)"));
        };
        let port = port
            .parse::<u16>()
            .map_err(|_| format!("{port:?} is not a port number (tls://HOST:PORT)"))?;
        let name_ok = !host.is_empty()
            && host.len() <= 253
            && host.split('.').all(|label| {
                !label.is_empty() && label.len() <= 63 && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if !name_ok {
            return Err(format!(
                "{host:?} is neither an IP address (IPv6 in brackets) nor a DNS name"
            ));
        }
        Ok(TlsAddr {
            host: host.to_ascii_lowercase(),
            port,
        })
    }
}

impl fmt::Display for TlsAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ip() {
            Some(ip) => write!(f, "{}", SocketAddr::new(ip, self.port)),
            None => write!(f, "{}:{}", self.host, self.port),
        }
    }
}

/// An endpoint string that does not parse. Every variant is a `CONFIG_ERROR`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    #[error("endpoint must begin with unix://, tcp:// or tls://: {value}")]
    UnknownScheme { value: String },
    #[error("invalid TLS endpoint: {0}")]
    InvalidTls(String),
    #[error("Unix endpoint path is empty")]
    EmptyUnixPath,
    #[error("invalid TCP endpoint: {source}")]
    InvalidTcp {
        #[source]
        source: AddrParseError,
    },
}

impl EndpointError {
    /// The wire code the CLI reports for this error.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::ConfigError
    }
}

impl Endpoint {
    /// Parses `unix://<path>`, `tcp://<ip>:<port>` (IPv6 in brackets; host names such as
    /// `localhost` are rejected) or `tls://<host>:<port>` (an IP or a DNS name).
    pub fn parse(value: &str) -> Result<Endpoint, EndpointError> {
        if let Some(path) = value.strip_prefix("unix://") {
            if path.is_empty() {
                return Err(EndpointError::EmptyUnixPath);
            }
            Ok(Endpoint::Unix(PathBuf::from(path)))
        } else if let Some(addr) = value.strip_prefix("tcp://") {
            addr.parse::<SocketAddr>()
                .map(Endpoint::Tcp)
                .map_err(|source| EndpointError::InvalidTcp { source })
        } else if let Some(addr) = value.strip_prefix("tls://") {
            TlsAddr::parse(addr)
                .map(Endpoint::Tls)
                .map_err(EndpointError::InvalidTls)
        } else {
            Err(EndpointError::UnknownScheme {
                value: value.to_owned(),
            })
        }
    }

    /// Whether the endpoint is reachable only from this machine: always for a Unix socket;
    /// for TCP and TLS, when the host is an IP in 127.0.0.0/8 or is `::1`.
    pub fn is_loopback(&self) -> bool {
        match self {
            Endpoint::Unix(_) => true,
            Endpoint::Tcp(addr) => addr.ip().is_loopback(),
            Endpoint::Tls(addr) => addr.ip().is_some_and(|ip| ip.is_loopback()),
        }
    }
}

impl FromStr for Endpoint {
    type Err = EndpointError;

    fn from_str(value: &str) -> Result<Endpoint, EndpointError> {
        Endpoint::parse(value)
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Unix(path) => write!(f, "unix://{}", path.display()),
            Endpoint::Tcp(addr) => write!(f, "tcp://{addr}"),
            Endpoint::Tls(addr) => write!(f, "tls://{addr}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_and_tcp_endpoints_parse_and_display_round_trip() {
        for text in ["unix:///tmp/m.sock", "tcp://127.0.0.1:17878", "tcp://[::1]:17878"] {
            assert_eq!(Endpoint::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(
            Endpoint::parse("unix://rel.sock").unwrap(),
            Endpoint::Unix(PathBuf::from("rel.sock"))
        );
    }

    #[test]
    fn tls_endpoints_take_an_ip_or_a_dns_name_and_always_a_port() {
        for text in [
            "tls://127.0.0.1:7443",
            "tls://[::1]:7443",
            "tls://memoree.example.com:7443",
        ] {
            assert_eq!(Endpoint::parse(text).unwrap().to_string(), text);
        }
        let Endpoint::Tls(addr) = Endpoint::parse("tls://Memoree.Example:443").unwrap() else {
            panic!("not a TLS endpoint");
        };
        assert_eq!(
            (addr.host.as_str(), addr.port, addr.ip()),
            ("memoree.example", 443, None)
        );
        assert!(Endpoint::parse("tls://[::1]:1").unwrap().is_loopback());
        assert!(!Endpoint::parse("tls://10.0.0.1:1").unwrap().is_loopback());
        for bad in [
            "tls://host",
            "tls://:1",
            "tls://host:99999",
            "tls://bad_host:1",
            "tls://a..b:1",
        ] {
            let error = Endpoint::parse(bad).unwrap_err();
            assert!(matches!(error, EndpointError::InvalidTls(_)), "{bad}: {error}");
        }
    }

    #[test]
    fn an_endpoint_without_a_known_scheme_is_refused_with_its_value() {
        let err = Endpoint::parse("http://127.0.0.1:1").unwrap_err();
        assert_eq!(
            err.to_string(),
            "endpoint must begin with unix://, tcp:// or tls://: http://127.0.0.1:1"
        );
        assert_eq!(err.code(), ErrorCode::ConfigError);
        assert!(Endpoint::parse("/tmp/m.sock").is_err());
    }

    #[test]
    fn an_empty_unix_path_is_refused() {
        let err = Endpoint::parse("unix://").unwrap_err();
        assert_eq!(err.to_string(), "Unix endpoint path is empty");
    }

    #[test]
    fn tcp_host_names_and_bad_addresses_are_refused() {
        for text in ["tcp://localhost:17878", "tcp://127.0.0.1", "tcp://::1:17878", "tcp://"] {
            let err = Endpoint::parse(text).unwrap_err();
            assert_eq!(err.to_string(), "invalid TCP endpoint: invalid socket address syntax");
        }
    }

    #[test]
    fn loopback_means_unix_127_slash_8_or_ipv6_localhost() {
        let loopback = |text: &str| Endpoint::parse(text).unwrap().is_loopback();
        assert!(loopback("unix:///tmp/m.sock"));
        assert!(loopback("tcp://127.0.0.1:1"));
        assert!(loopback("tcp://127.9.9.9:1"));
        assert!(loopback("tcp://[::1]:1"));
        assert!(!loopback("tcp://0.0.0.0:1"));
        assert!(!loopback("tcp://[::]:1"));
        assert!(!loopback("tcp://192.168.1.2:1"));
        assert!(!loopback("tcp://[::ffff:127.0.0.1]:1"));
    }
}
