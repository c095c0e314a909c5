//! Picks the transport for daemon-backed commands.

use std::path::PathBuf;

use super::GlobalArgs;
use crate::client::{ClientError, InProcess, Transport};
use crate::service::Service;

/// The data directory from the environment (`MEMOREE_DATA_DIR`, `MEMOREE_HOME/data`, the
/// platform default).
fn data_dir() -> Result<PathBuf, ClientError> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = var("MEMOREE_DATA_DIR") {
        return Ok(dir);
    }
    if let Some(home) = var("MEMOREE_HOME") {
        return Ok(home.join("data"));
    }
    if let Some(xdg) = var("XDG_DATA_HOME") {
        return Ok(xdg.join("memoree"));
    }
    var("HOME")
        .map(|home| home.join(".local/share/memoree"))
        .ok_or_else(|| ClientError::Config("no home directory found; set MEMOREE_HOME".to_owned()))
}

/// The transport for this invocation.
pub(crate) fn select(_global: &GlobalArgs) -> Result<Box<dyn Transport>, ClientError> {
    let service = Service::open(&data_dir()?).map_err(|e| ClientError::Config(e.to_string()))?;
    Ok(Box::new(InProcess::new(service)))
}
