//! Results of the commands that answer locally, without a protocol operation: `init`,
//! `daemon status|stop`, `backup restore` and `demo`. They travel in an ordinary response
//! envelope, so they are wire types too.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AmbientContext, Label};

/// `memoree init`: the marker written and the context it declares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InitResult {
    pub marker: String,
    pub context: AmbientContext,
    pub created: bool,
}

/// `memoree daemon status` when nothing answers the endpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DaemonStopped {
    pub endpoint: String,
    pub running: bool,
    pub status: Label,
}

/// `memoree daemon stop`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DaemonStopResult {
    pub already_stopped: bool,
    pub endpoint: String,
    pub running: bool,
    pub status: Label,
    /// The pid that was signalled; `None` when nothing was running.
    pub stopped_pid: Option<u32>,
}

/// `memoree backup restore`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RestoreResult {
    pub source: String,
    pub data_dir: String,
    pub commit_seq: i64,
    pub artifact_revisions: u64,
    pub claim_revisions: u64,
    pub restored_external_blobs: u64,
}

/// `memoree demo`: every exchange of the session, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DemoResult {
    pub home: String,
    pub home_removed: bool,
    pub steps: Vec<DemoStep>,
}

/// One request of the demo and the envelope it got.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DemoStep {
    pub request: Value,
    pub response: Value,
}
