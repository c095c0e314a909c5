//! Autostart: when the default daemon does not answer, start it in the background and
//! retry briefly.
//!
//! Only the default endpoint autostarts; an explicit `--endpoint` / `MEMOREE_ENDPOINT`, or
//! `--no-autostart` / `MEMOREE_NO_AUTOSTART=true`, means "talk to what is there". Only a
//! client-side transport failure (nothing answered, or the answer was unusable) triggers a
//! start; an error envelope from a daemon is an answer.
//!
//! The daemon is [`DAEMON_EXE`] from the directory of the current executable (the slim
//! daemon binary `cargo install` puts beside `memoree`) run as
//! `--listen <endpoint> --data-dir <dir>`, or, when that file is missing or cannot be run,
//! the current executable as `serve --listen <endpoint> --data-dir <dir>`; either runs in a
//! new session (`setsid`, so it outlives
//! the terminal), with its working directory in the data dir, stdin from `/dev/null`, and
//! stdout and stderr appended to `<data>/memoreed.log` (0600). If two clients race to start it, the data-dir lock lets
//! exactly one daemon run and the other exits; both clients then reach the survivor.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::socket::SocketClient;
use super::{ClientError, Transport};
use crate::fsutil::{ensure_private_dir, open_private_append};
use crate::paths::{DAEMON_LOG, Endpoint, LAYOUT_ENTRIES, Paths};
use crate::protocol::Response;

/// The daemon executable autostart prefers, looked up beside the current executable.
pub const DAEMON_EXE: &str = "memoree-daemon";

/// Attempts after starting the daemon.
pub const START_RETRIES: u32 = 60;
/// The pause before each attempt (60 × 50 ms ≈ 3 s in all).
pub const START_RETRY_DELAY: Duration = Duration::from_millis(50);
/// How long a client keeps trying, past [`START_RETRIES`], while the daemon it started is
/// still running but not listening yet: it binds its endpoint only once its store is open,
/// and opening a large store that needs a migration (one that rebuilds the full-text index,
/// say) takes seconds.
pub const START_PATIENCE: Duration = Duration::from_secs(300);

/// How to start a daemon for one endpoint and data directory.
#[derive(Clone, Debug)]
pub struct Launcher {
    pub exe: PathBuf,
    pub endpoint: Endpoint,
    pub data_dir: PathBuf,
    /// Created (or tightened) to 0700 before the daemon starts.
    pub runtime_dir: Option<PathBuf>,
}

impl Launcher {
    /// Starts the current executable as the default daemon of `paths`.
    pub fn for_paths(paths: &Paths) -> Result<Launcher, ClientError> {
        let exe = std::env::current_exe().map_err(|e| {
            ClientError::Transport(format!("failed to start daemon: cannot locate the executable: {e}"))
        })?;
        Ok(Launcher {
            exe,
            endpoint: paths.default_endpoint(),
            data_dir: paths.data_dir.clone(),
            runtime_dir: Some(paths.runtime_dir.clone()),
        })
    }

    /// Spawns the daemon in the background and returns its pid without waiting for it.
    pub fn spawn(&self) -> Result<u32, ClientError> {
        self.try_spawn()
            .map_err(|e| ClientError::Transport(format!("failed to start daemon: {e}")))
    }

    fn try_spawn(&self) -> io::Result<u32> {
        let data_dir = std::path::absolute(&self.data_dir)?;
        ensure_private_dir(&data_dir, LAYOUT_ENTRIES).map_err(io::Error::other)?;
        if let Some(runtime_dir) = &self.runtime_dir {
            ensure_private_dir(runtime_dir, LAYOUT_ENTRIES).map_err(io::Error::other)?;
        }
        let log = open_private_append(&data_dir.join(DAEMON_LOG))?;
        let listen = listen_arg(&self.endpoint)?;
        let daemon_exe = self.exe.with_file_name(DAEMON_EXE);
        if daemon_exe.is_file() {
            match self.spawn_program(&daemon_exe, None, &listen, &data_dir, &log) {
                Ok(pid) => return Ok(pid),
                Err(error) => {
                    tracing::warn!(%error, exe = %daemon_exe.display(), "cannot run the daemon executable; running `serve` instead");
                }
            }
        }
        self.spawn_program(&self.exe, Some("serve"), &listen, &data_dir, &log)
    }

    fn spawn_program(
        &self,
        program: &Path,
        subcommand: Option<&str>,
        listen: &OsString,
        data_dir: &Path,
        log: &std::fs::File,
    ) -> io::Result<u32> {
        let mut command = Command::new(program);
        command
            .args(subcommand)
            .arg("--listen")
            .arg(listen)
            .arg("--data-dir")
            .arg(data_dir)
            .args(["--lifecycle-owner", "memoree"])
            .current_dir(data_dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log.try_clone()?);
        crate::sys::spawn_in_new_session(&mut command);
        // The child is not waited for: it is meant to outlive this process.
        let child = command.spawn()?;
        tracing::info!(pid = child.id(), endpoint = %self.endpoint, program = %program.display(), "started the memoree daemon");
        Ok(child.id())
    }
}

/// `--listen` for the daemon: the endpoint with a Unix path made absolute, since the daemon
/// runs in the data directory.
fn listen_arg(endpoint: &Endpoint) -> io::Result<OsString> {
    Ok(match endpoint {
        Endpoint::Unix(path) => {
            let mut arg = OsString::from("unix://");
            arg.push(std::path::absolute(path)?);
            arg
        }
        Endpoint::Tcp(_) | Endpoint::Tls(_) => OsString::from(endpoint.to_string()),
    })
}

/// A transport to the default daemon that starts it when nothing answers.
#[derive(Clone, Debug)]
pub struct Autostart {
    client: SocketClient,
    launcher: Launcher,
}

impl Autostart {
    pub fn new(client: SocketClient, launcher: Launcher) -> Autostart {
        Autostart { client, launcher }
    }

    /// The default endpoint of `paths`, started from the current executable.
    pub fn for_paths(paths: &Paths) -> Result<Autostart, ClientError> {
        let launcher = Launcher::for_paths(paths)?;
        Ok(Autostart::new(SocketClient::new(launcher.endpoint.clone()), launcher))
    }

    pub fn client(&self) -> &SocketClient {
        &self.client
    }

    /// Reuses one connection across exchanges (see [`SocketClient::keep_alive`]), for a
    /// long-running caller; a daemon that went away is started again on the next exchange.
    pub fn keep_alive(self) -> Autostart {
        Autostart {
            client: self.client.keep_alive(),
            launcher: self.launcher,
        }
    }
}

impl Transport for Autostart {
    fn exchange_raw(&self, body: &[u8]) -> Result<Response, ClientError> {
        match self.client.exchange_raw(body) {
            Err(ClientError::Transport(reason)) => {
                tracing::info!(%reason, "no daemon answered; starting one");
                let pid = self.launcher.spawn()?;
                retry_started(pid, || self.client.exchange_raw(body))
            }
            answered => answered,
        }
    }

    fn exchange_pipelined(&self, bodies: &[Vec<u8>]) -> Result<Vec<Response>, ClientError> {
        match self.client.exchange_pipelined(bodies) {
            Err(ClientError::Transport(reason)) => {
                tracing::info!(%reason, "no daemon answered; starting one");
                let pid = self.launcher.spawn()?;
                retry_started(pid, || self.client.exchange_pipelined(bodies))
            }
            answered => answered,
        }
    }
}

/// Retries `attempt` while it fails with a transport error, after starting the daemon
/// `pid`: [`START_RETRIES`] times, then for as long as that daemon is still running (it is
/// opening its store), up to [`START_PATIENCE`]. A daemon that exited (it lost the race for
/// the data directory, or failed to start: its log says why) ends the wait at once.
pub fn retry_started<T>(pid: u32, mut attempt: impl FnMut() -> Result<T, ClientError>) -> Result<T, ClientError> {
    let started = std::time::Instant::now();
    let mut last = ClientError::Transport("the daemon did not start".to_owned());
    let mut said = false;
    for tries in 1.. {
        std::thread::sleep(START_RETRY_DELAY);
        match attempt() {
            Err(error @ ClientError::Transport(_)) => last = error,
            answered => return answered,
        }
        if tries >= START_RETRIES {
            if started.elapsed() >= START_PATIENCE || !still_running(pid) {
                break;
            }
            if !said {
                said = true;
                tracing::warn!(
                    pid,
                    "the daemon is still opening its store (a migration may be running); waiting"
                );
            }
        }
    }
    Err(last)
}

/// Whether our child `pid` has not exited yet (an exited one is reaped here).
fn still_running(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else {
        return false;
    };
    matches!(
        rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG),
        Ok(None)
    )
}

/// The data directory's daemon log.
pub fn log_path(data_dir: &Path) -> PathBuf {
    data_dir.join(DAEMON_LOG)
}
