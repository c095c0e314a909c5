//! One module per command family. Each turns parsed arguments into typed protocol requests
//! (or into local work, for the caller-side commands) and returns the one envelope to print.

pub(crate) mod admin;
pub(crate) mod artifact;
pub(crate) mod checkpoint;
pub(crate) mod citation;
pub(crate) mod claim;
pub(crate) mod context;
pub(crate) mod graph;
pub(crate) mod portable;
pub(crate) mod remember;
pub(crate) mod retrieval;
pub(crate) mod semantic;
pub(crate) mod setup;
pub(crate) mod switch;

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use clap::builder::PossibleValue;
use clap::{Args, ValueEnum};

use crate::import_tools::{Format, MarkdownClaims};
use crate::protocol::Horizon;
use crate::protocol::claim::ClaimType;
use crate::protocol::relation::{RelationDirection, RelationType};
use crate::setup::Host;

/// The command-line spelling of a wire name: kebab-case (`derived_from` → `derived-from`).
fn kebab(wire: &'static str) -> &'static str {
    if !wire.contains('_') {
        return wire;
    }
    static SPELLINGS: LazyLock<Mutex<HashMap<&'static str, &'static str>>> = LazyLock::new(Default::default);
    let mut spellings = SPELLINGS.lock().unwrap_or_else(|e| e.into_inner());
    // One small string per variant that has an underscore, made once and kept.
    spellings
        .entry(wire)
        .or_insert_with(|| Box::leak(wire.replace('_', "-").into_boxed_str()))
}

/// Protocol enums as flag values, spelled as on the wire but in kebab-case.
macro_rules! wire_value_enum {
    ($($name:ty),+) => {
        $(impl ValueEnum for $name {
            fn value_variants<'a>() -> &'a [$name] {
                &<$name>::ALL
            }

            fn to_possible_value(&self) -> Option<PossibleValue> {
                Some(PossibleValue::new(kebab(self.as_str())))
            }
        })+
    };
}

wire_value_enum!(
    Horizon,
    ClaimType,
    RelationType,
    RelationDirection,
    Format,
    MarkdownClaims,
    Host
);

/// `--horizon` and `--reason`, shared by every read that may broaden.
#[derive(Clone, Debug, Args)]
pub(crate) struct HorizonFlags {
    /// How far to look; `workspace` and `personal` need --reason.
    #[arg(long, value_enum, default_value_t = Horizon::Ambient)]
    horizon: Horizon,
    /// Why a broader horizon is needed (required for workspace and personal).
    #[arg(long)]
    reason: Option<String>,
}
