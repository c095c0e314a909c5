//! Which implementation a run checks, and through which transports: `--binary PATH` (its
//! `call`, and `serve` for the daemon transport), `--daemon-command CMD` (a daemon started per
//! trial by any command), `--daemon-listen unix|tcp`, or `--endpoint URL` (a running daemon).

use std::path::PathBuf;
use std::sync::Arc;

use super::daemon::{Daemon, Launch, Listen, Running};
use super::transport::{Binary, Transport};

/// The target flags, shared by the kit and the in-tree runner.
#[derive(Debug, Default, Clone)]
pub struct Target {
    pub binary: Option<PathBuf>,
    pub daemon_command: Option<String>,
    pub daemon_listen: Option<String>,
    pub endpoint: Option<String>,
    /// `postgres`: every trial's daemon serves a fresh database of one throw-away
    /// PostgreSQL cluster (`serve --store URL`) instead of an embedded store.
    pub daemon_store: Option<String>,
}

impl Target {
    /// Whether any implementation was named.
    pub fn is_given(&self) -> bool {
        self.binary.is_some() || self.daemon_command.is_some() || self.endpoint.is_some()
    }

    /// The transports to run on. `default_binary` stands in when neither `--binary` nor
    /// `--daemon-command` names one (the in-tree runner passes this crate's `memoree`).
    pub fn transports(&self, default_binary: Option<PathBuf>) -> Result<Vec<Arc<dyn Transport>>, String> {
        if let Some(endpoint) = &self.endpoint {
            if self.binary.is_some() || self.daemon_command.is_some() || self.daemon_listen.is_some() {
                return Err("--endpoint targets a running daemon; it cannot be combined with \
                            --binary, --daemon-command or --daemon-listen"
                    .to_owned());
            }
            return Ok(vec![Arc::new(Running::new(endpoint)?)]);
        }
        let listen = self.daemon_listen.as_deref().map_or(Ok(Listen::Unix), Listen::parse)?;
        let store = match self.daemon_store.as_deref() {
            None => None,
            Some("postgres") => Some(Arc::new(memoree::testkit::postgres::TestCluster::start_required())),
            Some(other) => return Err(format!("--daemon-store must be postgres, not {other:?}")),
        };
        let binary = match &self.binary {
            // The child runs in its own directory, so a relative path must be made absolute here.
            Some(path) => Some(std::fs::canonicalize(path).map_err(|e| format!("--binary {}: {e}", path.display()))?),
            None => default_binary,
        };
        let launch = match (&self.daemon_command, &binary) {
            (Some(template), _) if !template.contains("{endpoint}") => {
                return Err(format!(
                    "--daemon-command {template:?} must contain {{endpoint}} (and usually {{data_dir}})"
                ));
            }
            (Some(template), _) => Launch::Command(template.clone()),
            (None, Some(binary)) => Launch::Serve(binary.clone()),
            (None, None) => {
                return Err(
                    "name the implementation: --binary PATH, --daemon-command CMD or --endpoint URL".to_owned(),
                );
            }
        };
        let mut transports: Vec<Arc<dyn Transport>> = Vec::new();
        // `--daemon-command` alone checks only the daemon; with `--binary`, `call` too.
        if let Some(binary) = binary.filter(|_| self.binary.is_some() || self.daemon_command.is_none()) {
            transports.push(Arc::new(Binary::new(binary)));
        }
        transports.push(Arc::new(Daemon::new(launch, listen, store)));
        Ok(transports)
    }
}
