//! `memoree serve`: run the daemon in the foreground until SIGINT or SIGTERM.
//!
//! Prints nothing while serving and exits 0 after a clean shutdown; a startup failure
//! prints one error envelope and exits with its code. The global `--endpoint` is ignored.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::error::{CliError, CliResult};
use super::{exit, output};
use crate::daemon::remote::RemoteConfig;
use crate::daemon::{self, DaemonConfig};
use crate::paths::{Endpoint, Paths};

/// Flags of `memoree serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Where to listen: `unix://PATH`, `tcp://IP:PORT` or `tls://IP:PORT` (credentials and
    /// accepted clients from the `[remote]` table of config.toml) [default: the private Unix socket]
    #[arg(long, value_name = "ENDPOINT")]
    pub listen: Option<String>,
    /// The data directory to serve [default: the resolved data dir]
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Serve a PostgreSQL database (`postgres://USER@HOST/DB`) instead of the embedded store
    /// in the data directory; several daemons may serve one database. No password here: it
    /// comes from PGPASSWORD, PGPASSFILE (~/.pgpass) or `[store] password_file` [default:
    /// `[store] url` in config.toml, else the embedded store]
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// With a PostgreSQL store: how long to wait for the database to accept connections at
    /// startup, retrying with backoff and answering `doctor` meanwhile, before exiting with an
    /// error [default: `[store] wait` in config.toml, else 60]
    #[arg(long, value_name = "SECONDS")]
    pub store_wait: Option<u64>,
    /// Allow a plain `tcp://` address that is not loopback: no authentication, no
    /// encryption. Prefer `tls://`.
    #[arg(long)]
    pub dangerously_allow_non_loopback_tcp: bool,
    /// Who stops this daemon: `memoree` when a client autostarted it, `external` when a
    /// person or a supervisor did (reported by `doctor` as `lifecycle_owner`).
    #[arg(long, value_enum, default_value = "external", hide = true)]
    pub lifecycle_owner: LifecycleOwner,
    /// The `binary_version` `doctor` reports instead of this build's version, for a client
    /// that refuses any daemon but its own release (the reference's v0.7.1 CLI requires
    /// `0.7.1`); see DIVERGENCES, *Discovery* [default: this build's version]
    #[arg(long, value_name = "VERSION", env = "MEMOREE_REPORT_BINARY_VERSION")]
    pub report_binary_version: Option<String>,
}

/// `serve --lifecycle-owner`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LifecycleOwner {
    /// Autostarted by a client, which may stop it.
    Memoree,
    /// Started by a person or a supervisor.
    #[default]
    External,
}

pub(crate) fn run(args: &ServeArgs, pretty: bool) -> ExitCode {
    match serve(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            let response = failure.into_response();
            output::emit(&response, pretty);
            exit::for_response(&response)
        }
    }
}

fn serve(args: &ServeArgs) -> CliResult<()> {
    let config = config(args)?;
    daemon::run(config).map_err(|error| {
        tracing::error!(%error, "the daemon stopped");
        CliError::from(error)
    })?;
    Ok(())
}

fn config(args: &ServeArgs) -> Result<DaemonConfig, CliError> {
    let resolve = || Paths::from_env().map_err(|e| CliError::Config(e.to_string()));
    let mut config = match &args.listen {
        Some(text) => {
            let endpoint = Endpoint::parse(text).map_err(|e| CliError::Config(e.to_string()))?;
            let data_dir = match &args.data_dir {
                Some(dir) => dir.clone(),
                None => resolve()?.data_dir,
            };
            DaemonConfig::new(endpoint, data_dir)
        }
        None => {
            let paths = resolve()?;
            let data_dir = args.data_dir.clone().unwrap_or_else(|| paths.data_dir.clone());
            let mut config = DaemonConfig::new(paths.default_endpoint(), data_dir);
            config.private_runtime_dir = Some(paths.runtime_dir);
            config
        }
    };
    config.allow_non_loopback_tcp = args.dangerously_allow_non_loopback_tcp;
    config.discovery = crate::service::Discovery {
        binary_version: args
            .report_binary_version
            .clone()
            .filter(|version| !version.trim().is_empty()),
        lifecycle_owner: match args.lifecycle_owner {
            LifecycleOwner::Memoree => crate::service::LIFECYCLE_MEMOREE,
            LifecycleOwner::External => crate::service::LIFECYCLE_EXTERNAL,
        },
    };
    let settings = || {
        let config_file = resolve()?.config_file;
        crate::ambient::load_settings(&config_file).map_err(|e| CliError::Config(e.to_string()))
    };
    config.store_url = match &args.store {
        Some(url) if !crate::store::pg::is_postgres_url(url) => {
            return Err(CliError::Config(
                "--store must be a postgres:// or postgresql:// URL".to_owned(),
            ));
        }
        explicit => super::store_url::choose(explicit.clone(), false)?,
    };
    if config.store_url.is_some() {
        let wait = match args.store_wait {
            Some(seconds) => Some(seconds),
            None => settings()?.store_wait_secs,
        };
        if let Some(seconds) = wait {
            config.store_wait = std::time::Duration::from_secs(seconds);
        }
    }
    if matches!(config.listen, Endpoint::Tls(_)) {
        let paths = resolve()?;
        config.remote = RemoteConfig::load(&paths.config_file).map_err(CliError::Config)?;
    }
    Ok(config)
}
