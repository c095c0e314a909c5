//! One module per command family. Each turns parsed arguments into protocol requests (or
//! into local work, for the caller-side commands) and returns the one envelope to print.

pub(crate) mod admin;
pub(crate) mod artifact;
pub(crate) mod checkpoint;
pub(crate) mod claim;
pub(crate) mod context;
pub(crate) mod graph;
pub(crate) mod portable;
pub(crate) mod remember;
pub(crate) mod retrieval;

use clap::{Args, ValueEnum};
use serde_json::{Map, Value};

use super::request::insert_opt;

/// A retrieval horizon as a flag value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum HorizonArg {
    #[default]
    Ambient,
    Workspace,
    Personal,
}

impl HorizonArg {
    fn wire_name(self) -> &'static str {
        match self {
            HorizonArg::Ambient => "ambient",
            HorizonArg::Workspace => "workspace",
            HorizonArg::Personal => "personal",
        }
    }
}

/// `--horizon` and `--reason`, shared by every read that may broaden.
#[derive(Clone, Debug, Args)]
pub(crate) struct HorizonFlags {
    /// How far to look; `workspace` and `personal` need --reason.
    #[arg(long, value_enum, default_value_t = HorizonArg::Ambient)]
    horizon: HorizonArg,
    /// Why a broader horizon is needed (required for workspace and personal).
    #[arg(long)]
    reason: Option<String>,
}

impl HorizonFlags {
    fn insert_into(&self, input: &mut Map<String, Value>) {
        input.insert("horizon".to_owned(), Value::from(self.horizon.wire_name()));
        insert_opt(input, "reason", self.reason.clone());
    }
}
