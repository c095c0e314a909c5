//! Where memoree keeps things: the one resolver for the data dir, runtime dir, config file
//! and socket path (used by the CLI and the daemon alike) and the names of the data-dir and
//! runtime-dir layout. The endpoint syntax (`unix://`, `tcp://`, `tls://`) is in
//! `paths/endpoint.rs`, re-exported here.
//!
//! **Invariants:** resolution only reads the environment; it never creates a directory.
//! The environment is passed in as a lookup function so tests never mutate process state.
//! Every name in the data and runtime dirs (and the CAS's scratch dir) is defined once,
//! here: other modules use these constants (or re-export them, as `store`, `semantic` and
//! `caller::checkpoint` do) and product code spells none of them again; tests may, to check
//! the on-disk layout. The files inside `semantic/` and `pending-checkpoints/` are named by
//! those modules.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::protocol::ErrorCode;

/// The database file name, as a literal for `concat!` (SQLite names its WAL and
/// shared-memory files after it).
macro_rules! db_file {
    () => {
        "memoree.sqlite3"
    };
}

/// The socket file name, as a literal for `concat!` (its lock file is named after it).
macro_rules! socket_name {
    () => {
        "memoree.sock"
    };
}

/// The SQLite database inside the data dir.
pub const DB_FILE: &str = db_file!();
/// SQLite's write-ahead log of [`DB_FILE`].
pub const DB_WAL_FILE: &str = concat!(db_file!(), "-wal");
/// SQLite's shared-memory index of [`DB_WAL_FILE`].
pub const DB_SHM_FILE: &str = concat!(db_file!(), "-shm");
/// The daemon's exclusive data-dir lock.
pub const DAEMON_LOCK: &str = "memoreed.lock";
/// The autostarted daemon's log.
pub const DAEMON_LOG: &str = "memoreed.log";
/// The content-addressed blob store.
pub const BLOBS_DIR: &str = "blobs";
/// The blob writers' scratch directory inside [`BLOBS_DIR`] (and inside a backup's copy of
/// it); never part of the published objects.
pub const BLOBS_TMP_DIR: &str = ".tmp";
/// The private checkpoint quarantine.
pub const PENDING_DIR: &str = "pending-checkpoints";
/// The Unix socket inside the runtime dir.
pub const SOCKET_NAME: &str = socket_name!();
/// The lock file guarding [`SOCKET_NAME`] (see [`socket_lock_path`]).
pub const SOCKET_LOCK_NAME: &str = concat!(socket_name!(), ".lock");
/// The runtime dir below `MEMOREE_HOME` (and the Linux and macOS fallback).
pub const RUN_DIR: &str = "run";
/// The config file name.
pub const CONFIG_FILE: &str = "config.toml";
/// Memoree's own config tables (`[remember]`, `[store]`, `[remote]`, `[tls]`), beside
/// [`CONFIG_FILE`]: the reference implementation reads `config.toml` too and refuses any key
/// it does not know, so a shared config keeps these here (`ambient::read_config`).
pub const EXTENSIONS_FILE: &str = "extensions.toml";
/// The installed semantic model (`memoree semantic install`).
pub const SEMANTIC_DIR: &str = "semantic";

/// Entry names that may sit in an open-permission data or runtime dir without blocking
/// the tightening to 0700 (the private-directory rule). Pass this to
/// [`crate::fsutil::ensure_private_dir`].
pub const LAYOUT_ENTRIES: &[&str] = &[
    DB_FILE,
    DB_WAL_FILE,
    DB_SHM_FILE,
    DAEMON_LOCK,
    DAEMON_LOG,
    BLOBS_DIR,
    PENDING_DIR,
    RUN_DIR,
    CONFIG_FILE,
    EXTENSIONS_FILE,
    SEMANTIC_DIR,
    SOCKET_NAME,
    SOCKET_LOCK_NAME,
];

mod endpoint;

pub use endpoint::{Endpoint, EndpointError, TlsAddr};

/// The directory name used below the XDG base directories.
const XDG_APP_DIR: &str = "memoree";
/// The directory name used below `~/Library/Application Support` on macOS.
const MACOS_APP_DIR: &str = "dev.memoree.memoree";

/// Resolution failed because a default location needs a home directory and none is known.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathsError {
    #[error("cannot determine a home directory for the default memoree paths; set MEMOREE_HOME")]
    NoHome,
}

impl PathsError {
    /// The wire code the CLI reports for this error.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::ConfigError
    }
}

/// The resolved locations. Nothing here is guaranteed to exist.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paths {
    pub data_dir: PathBuf,
    pub runtime_dir: PathBuf,
    pub config_file: PathBuf,
    pub socket_path: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Platform {
    /// Linux and other Unix systems: XDG base directories.
    Xdg,
    /// macOS: one `Application Support` root for data, config and `run`.
    MacOs,
}

impl Platform {
    fn current() -> Platform {
        if cfg!(any(target_os = "macos", target_os = "ios")) {
            Platform::MacOs
        } else {
            Platform::Xdg
        }
    }
}

/// Default locations, from `MEMOREE_HOME` or the platform conventions.
struct Defaults {
    data_dir: PathBuf,
    runtime_dir: PathBuf,
    config_file: PathBuf,
}

impl Paths {
    /// Resolves against the real process environment. When `HOME` is unset or empty the
    /// home directory is taken from the password database.
    pub fn from_env() -> Result<Paths, PathsError> {
        let lookup = |name: &str| {
            let value = std::env::var_os(name).filter(|v| !v.is_empty());
            if name == "HOME" {
                value.or_else(passwd_home)
            } else {
                value
            }
        };
        Paths::resolve(&lookup)
    }

    /// Resolves with `env` as the environment, using the defaults of the platform this
    /// binary was built for. Empty values count as unset.
    pub fn resolve(env: &dyn Fn(&str) -> Option<OsString>) -> Result<Paths, PathsError> {
        resolve_for(env, Platform::current())
    }

    /// `<data>/memoree.sqlite3`.
    pub fn db_file(&self) -> PathBuf {
        self.data_dir.join(DB_FILE)
    }

    /// `<data>/memoreed.lock`.
    pub fn daemon_lock(&self) -> PathBuf {
        self.data_dir.join(DAEMON_LOCK)
    }

    /// `<data>/memoreed.log`.
    pub fn daemon_log(&self) -> PathBuf {
        self.data_dir.join(DAEMON_LOG)
    }

    /// `<data>/blobs`.
    pub fn blobs_dir(&self) -> PathBuf {
        self.data_dir.join(BLOBS_DIR)
    }

    /// `<data>/pending-checkpoints`.
    pub fn pending_dir(&self) -> PathBuf {
        self.data_dir.join(PENDING_DIR)
    }

    /// The endpoint a client uses when none is given: `unix://<socket_path>`.
    pub fn default_endpoint(&self) -> Endpoint {
        Endpoint::Unix(self.socket_path.clone())
    }
}

/// The lock file that guards a Unix socket: `<socket>.lock`.
pub fn socket_lock_path(socket: &Path) -> PathBuf {
    let mut name = socket.as_os_str().to_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

fn var(env: &dyn Fn(&str) -> Option<OsString>, name: &str) -> Option<PathBuf> {
    env(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// An XDG base-directory variable; relative values are invalid and ignored.
fn xdg_var(env: &dyn Fn(&str) -> Option<OsString>, name: &str) -> Option<PathBuf> {
    var(env, name).filter(|p| p.is_absolute())
}

fn resolve_for(env: &dyn Fn(&str) -> Option<OsString>, platform: Platform) -> Result<Paths, PathsError> {
    let data = var(env, "MEMOREE_DATA_DIR");
    let runtime = var(env, "MEMOREE_RUNTIME_DIR");
    let config = var(env, "MEMOREE_CONFIG");
    let (data_dir, runtime_dir, config_file) = match (data, runtime, config) {
        (Some(data), Some(runtime), Some(config)) => (data, runtime, config),
        (data, runtime, config) => {
            let defaults = defaults(env, platform)?;
            (
                data.unwrap_or(defaults.data_dir),
                runtime.unwrap_or(defaults.runtime_dir),
                config.unwrap_or(defaults.config_file),
            )
        }
    };
    let socket_path = var(env, "MEMOREE_SOCKET").unwrap_or_else(|| runtime_dir.join(SOCKET_NAME));
    Ok(Paths {
        data_dir,
        runtime_dir,
        config_file,
        socket_path,
    })
}

/// The locations used for whatever the per-path overrides leave unset.
fn defaults(env: &dyn Fn(&str) -> Option<OsString>, platform: Platform) -> Result<Defaults, PathsError> {
    if let Some(home) = var(env, "MEMOREE_HOME") {
        return Ok(Defaults {
            data_dir: home.join("data"),
            runtime_dir: home.join(RUN_DIR),
            config_file: home.join(CONFIG_FILE),
        });
    }
    let home = var(env, "HOME").ok_or(PathsError::NoHome)?;
    Ok(match platform {
        Platform::Xdg => {
            let data_dir = xdg_var(env, "XDG_DATA_HOME")
                .unwrap_or_else(|| home.join(".local/share"))
                .join(XDG_APP_DIR);
            let config_file = xdg_var(env, "XDG_CONFIG_HOME")
                .unwrap_or_else(|| home.join(".config"))
                .join(XDG_APP_DIR)
                .join(CONFIG_FILE);
            let runtime_dir = xdg_var(env, "XDG_RUNTIME_DIR")
                .map(|dir| dir.join(XDG_APP_DIR))
                .unwrap_or_else(|| data_dir.join(RUN_DIR));
            Defaults {
                data_dir,
                runtime_dir,
                config_file,
            }
        }
        Platform::MacOs => {
            let root = home.join("Library/Application Support").join(MACOS_APP_DIR);
            Defaults {
                runtime_dir: root.join(RUN_DIR),
                config_file: root.join(CONFIG_FILE),
                data_dir: root,
            }
        }
    })
}

/// The current user's home directory from the password database.
fn passwd_home() -> Option<OsString> {
    crate::sys::passwd_home()
}

#[cfg(test)]
mod tests;
