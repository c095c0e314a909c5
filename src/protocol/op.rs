//! The 23 protocol v1 operations plus Memoree's extensions (`reindex`, `artifact.purge`,
//! `claim.purge`, `import`), their dotted wire names and their classes.
//!
//! Classes decide envelope rules in the service: mutations need an idempotency key and ambient
//! context, horizon operations parse their input early to read the horizon, and context-free
//! operations ignore a missing context.

use serde::{Deserialize, Serialize};

/// One typed protocol operation, named on the wire with its dotted name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Operation {
    #[serde(rename = "context.resolve")]
    ContextResolve,
    #[serde(rename = "capabilities")]
    Capabilities,
    #[serde(rename = "instructions")]
    Instructions,
    #[serde(rename = "schema")]
    Schema,
    #[serde(rename = "artifact.put")]
    ArtifactPut,
    #[serde(rename = "artifact.get")]
    ArtifactGet,
    #[serde(rename = "artifact.revise")]
    ArtifactRevise,
    #[serde(rename = "artifact.history")]
    ArtifactHistory,
    #[serde(rename = "artifact.forget")]
    ArtifactForget,
    #[serde(rename = "claim.assert")]
    ClaimAssert,
    #[serde(rename = "claim.get")]
    ClaimGet,
    #[serde(rename = "claim.history")]
    ClaimHistory,
    #[serde(rename = "claim.revise")]
    ClaimRevise,
    #[serde(rename = "claim.retract")]
    ClaimRetract,
    #[serde(rename = "relation.put")]
    RelationPut,
    #[serde(rename = "relation.list")]
    RelationList,
    #[serde(rename = "conflict.list")]
    ConflictList,
    #[serde(rename = "search")]
    Search,
    #[serde(rename = "memory.recall")]
    MemoryRecall,
    #[serde(rename = "context.build")]
    ContextBuild,
    #[serde(rename = "doctor")]
    Doctor,
    #[serde(rename = "verify")]
    Verify,
    #[serde(rename = "backup.create")]
    BackupCreate,
    /// Rebuilds the derived FTS projection from authoritative revisions. An extension to
    /// the reference's 23 operations (see `spec/v1/DIVERGENCES.md`).
    #[serde(rename = "reindex")]
    Reindex,
    /// Lists current artifacts visible at a horizon. A read-only browsing extension, like
    /// `claim.list` and `event.list` (see `spec/v1/DIVERGENCES.md`).
    #[serde(rename = "artifact.list")]
    ArtifactList,
    #[serde(rename = "claim.list")]
    ClaimList,
    #[serde(rename = "event.list")]
    EventList,
    /// Erases the content of every revision of an artifact, leaving a tombstone. An
    /// extension (see `spec/v1/DIVERGENCES.md`).
    #[serde(rename = "artifact.purge")]
    ArtifactPurge,
    /// Erases the statement of every revision of a claim, leaving a tombstone. An extension.
    #[serde(rename = "claim.purge")]
    ClaimPurge,
    /// Replays a portable export archive into the store. An extension.
    #[serde(rename = "import")]
    Import,
}

impl Operation {
    /// Every operation in the canonical order capabilities reports them.
    pub const ALL: [Operation; 30] = [
        Operation::ContextResolve,
        Operation::Capabilities,
        Operation::Instructions,
        Operation::Schema,
        Operation::ArtifactPut,
        Operation::ArtifactGet,
        Operation::ArtifactRevise,
        Operation::ArtifactHistory,
        Operation::ArtifactForget,
        Operation::ClaimAssert,
        Operation::ClaimGet,
        Operation::ClaimHistory,
        Operation::ClaimRevise,
        Operation::ClaimRetract,
        Operation::RelationPut,
        Operation::RelationList,
        Operation::ConflictList,
        Operation::Search,
        Operation::MemoryRecall,
        Operation::ContextBuild,
        Operation::Doctor,
        Operation::Verify,
        Operation::BackupCreate,
        Operation::Reindex,
        Operation::ArtifactList,
        Operation::ClaimList,
        Operation::EventList,
        Operation::ArtifactPurge,
        Operation::ClaimPurge,
        Operation::Import,
    ];

    /// The dotted wire name, for example `artifact.put`.
    pub fn wire_name(self) -> &'static str {
        match self {
            Operation::ContextResolve => "context.resolve",
            Operation::Capabilities => "capabilities",
            Operation::Instructions => "instructions",
            Operation::Schema => "schema",
            Operation::ArtifactPut => "artifact.put",
            Operation::ArtifactGet => "artifact.get",
            Operation::ArtifactRevise => "artifact.revise",
            Operation::ArtifactHistory => "artifact.history",
            Operation::ArtifactForget => "artifact.forget",
            Operation::ClaimAssert => "claim.assert",
            Operation::ClaimGet => "claim.get",
            Operation::ClaimHistory => "claim.history",
            Operation::ClaimRevise => "claim.revise",
            Operation::ClaimRetract => "claim.retract",
            Operation::RelationPut => "relation.put",
            Operation::RelationList => "relation.list",
            Operation::ConflictList => "conflict.list",
            Operation::Search => "search",
            Operation::MemoryRecall => "memory.recall",
            Operation::ContextBuild => "context.build",
            Operation::Doctor => "doctor",
            Operation::Verify => "verify",
            Operation::BackupCreate => "backup.create",
            Operation::Reindex => "reindex",
            Operation::ArtifactList => "artifact.list",
            Operation::ClaimList => "claim.list",
            Operation::EventList => "event.list",
            Operation::ArtifactPurge => "artifact.purge",
            Operation::ClaimPurge => "claim.purge",
            Operation::Import => "import",
        }
    }

    /// Looks an operation up by its dotted wire name.
    pub fn from_wire_name(name: &str) -> Option<Operation> {
        Operation::ALL.into_iter().find(|op| op.wire_name() == name)
    }

    /// Whether this is one of the 23 operations of protocol v1 (not an extension).
    pub fn is_protocol_v1(self) -> bool {
        !matches!(
            self,
            Operation::Reindex
                | Operation::ArtifactList
                | Operation::ClaimList
                | Operation::EventList
                | Operation::ArtifactPurge
                | Operation::ClaimPurge
                | Operation::Import
        )
    }

    /// Logical memory mutations: they need an idempotency key and ambient context, and
    /// they advance `commit_seq`.
    pub fn is_mutating(self) -> bool {
        matches!(
            self,
            Operation::ArtifactPut
                | Operation::ArtifactRevise
                | Operation::ArtifactForget
                | Operation::ClaimAssert
                | Operation::ClaimRevise
                | Operation::ClaimRetract
                | Operation::RelationPut
                | Operation::ArtifactPurge
                | Operation::ClaimPurge
        )
    }

    /// Operations with a side effect outside logical memory (no idempotency record).
    pub fn is_side_effecting(self) -> bool {
        self.is_mutating() || matches!(self, Operation::BackupCreate | Operation::Reindex | Operation::Import)
    }

    /// Operations that require an ambient context.
    pub fn needs_context(self) -> bool {
        self.is_mutating()
            || matches!(
                self,
                Operation::ContextResolve
                    | Operation::RelationList
                    | Operation::ConflictList
                    | Operation::Search
                    | Operation::MemoryRecall
                    | Operation::ContextBuild
                    | Operation::ArtifactList
                    | Operation::ClaimList
                    | Operation::EventList
            )
    }

    /// Operations whose input carries an explicit `horizon` (and `reason`).
    pub fn supports_explicit_horizon(self) -> bool {
        matches!(
            self,
            Operation::RelationList
                | Operation::ConflictList
                | Operation::Search
                | Operation::MemoryRecall
                | Operation::ContextBuild
                | Operation::ArtifactList
                | Operation::ClaimList
                | Operation::EventList
        )
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.wire_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip_through_serde() {
        for op in Operation::ALL {
            let json = serde_json::to_value(op).unwrap();
            assert_eq!(json, serde_json::Value::String(op.wire_name().to_owned()));
            assert_eq!(Operation::from_wire_name(op.wire_name()), Some(op));
        }
    }

    #[test]
    fn exactly_seven_protocol_operations_mutate_and_the_purge_extensions_too() {
        let v1 = Operation::ALL.iter().filter(|op| op.is_protocol_v1());
        assert_eq!(v1.filter(|op| op.is_mutating()).count(), 7);
        assert!(Operation::ArtifactPurge.is_mutating() && Operation::ClaimPurge.is_mutating());
        assert!(!Operation::Import.is_mutating() && Operation::Import.is_side_effecting());
    }
}
