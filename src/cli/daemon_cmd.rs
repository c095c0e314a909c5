//! `memoree daemon status|stop|restart`: manage the local daemon with machine-readable
//! envelopes. Never autostarts. `stop` and `restart` act only on the default private Unix
//! endpoint. `status` exits 1 (with an `ok: true` envelope) when nothing answers.

use std::process::ExitCode;

use clap::Subcommand;

use super::error::{CliError, CliResult};
use super::{GlobalArgs, exit, output};
use crate::client::autostart::Launcher;
use crate::client::control;
use crate::client::socket::SocketClient;
use crate::paths::{Endpoint, Paths};
use crate::protocol::Response;

#[derive(Debug, Clone, Copy, Subcommand)]
pub enum DaemonCommand {
    /// Probe the daemon: its doctor envelope, or `running: false` (exit 1) when stopped.
    #[command(after_help = "Example:\n  memoree daemon status --pretty")]
    Status,
    /// Stop the default daemon (SIGTERM to the verified daemon process) and wait for it.
    #[command(after_help = "Example:\n  memoree daemon stop")]
    Stop,
    /// Stop the default daemon, start a new one and print its doctor envelope.
    #[command(after_help = "Example:\n  memoree daemon restart")]
    Restart,
}

pub(crate) fn run(global: &GlobalArgs, command: DaemonCommand) -> ExitCode {
    let (response, code) = match execute(global, command) {
        Ok(outcome) => outcome,
        Err(failure) => {
            let response = failure.into_response();
            let code = exit::for_response(&response);
            (response, code)
        }
    };
    output::emit(&response, global.pretty);
    code
}

fn execute(global: &GlobalArgs, command: DaemonCommand) -> CliResult<(Response, ExitCode)> {
    let explicit = match &global.endpoint {
        Some(text) => Some(Endpoint::parse(text).map_err(|e| CliError::Config(e.to_string()))?),
        None => None,
    };
    let paths = || Paths::from_env().map_err(|e| CliError::Config(e.to_string()));
    let response = match command {
        DaemonCommand::Status => {
            let endpoint = match explicit {
                Some(endpoint) => endpoint,
                None => paths()?.default_endpoint(),
            };
            let report = control::status(&SocketClient::new(endpoint));
            if !report.running {
                return Ok((report.response, ExitCode::from(1)));
            }
            report.response
        }
        DaemonCommand::Stop => {
            let paths = paths()?;
            let endpoint = explicit.unwrap_or_else(|| paths.default_endpoint());
            control::stop(&paths, &endpoint)
        }
        DaemonCommand::Restart => {
            let paths = paths()?;
            let endpoint = explicit.unwrap_or_else(|| paths.default_endpoint());
            let launcher = Launcher::for_paths(&paths)?;
            control::restart(&paths, &endpoint, &launcher)
        }
    };
    let code = exit::for_response(&response);
    Ok((response, code))
}
