//! How a caller reaches a daemon: the framed socket client, autostart of the default
//! daemon, and daemon control.
//!
//! [`socket::SocketClient`] speaks framed JSON to a daemon over a Unix socket, loopback
//! TCP or TLS (one connection per exchange, or one kept alive; [`tls`] holds the TLS
//! credentials and failure classification); [`autostart::Autostart`] starts the
//! default daemon when it is not running; [`control`] implements `daemon
//! status|stop|restart`. Both transports implement [`Transport`] (the seam shared with
//! `service::InProcess`), so every caller gets typed exchanges through [`Exchange`] (the
//! example is compiled by `tests/client_example.rs`):
//!
//! ```no_run
//! use memoree::client::{Exchange, autostart::Autostart};
//! use memoree::paths::Paths;
//! use memoree::protocol::meta::CapabilitiesInput;
//! use memoree::protocol::{Request, RequestId};
//!
//! let client = Autostart::for_paths(&Paths::from_env()?)?.keep_alive();
//! let response = client.exchange(&Request::new(RequestId::generate(), CapabilitiesInput {}))?;
//! println!("{}", response.result.unwrap().max_frame_bytes);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Layering:** nothing here reaches into the service or the store; the daemon does not
//! depend on this module either (both share `protocol`, `frame`, `net` and `transport`).

pub mod autostart;
pub mod control;
pub mod socket;
pub mod tls;

pub use crate::transport::{ClientError, Exchange, Transport, encode};
