//! The 23 protocol v1 operations plus Memoree's extensions (`reindex`, `artifact.purge`,
//! `claim.purge`, `import`), their dotted wire names and their classes.
//!
//! Classes decide envelope rules in the service: mutations need an idempotency key and ambient
//! context, horizon operations parse their input early to read the horizon, and context-free
//! operations ignore a missing context.

crate::wire_enum! {
    /// One typed protocol operation, named on the wire with its dotted name. Declaration
    /// order is the canonical order capabilities reports them in.
    pub enum Operation {
        ContextResolve = "context.resolve",
        Capabilities = "capabilities",
        Instructions = "instructions",
        Schema = "schema",
        ArtifactPut = "artifact.put",
        ArtifactGet = "artifact.get",
        /// Exact bytes of a cited range (the reference's v0.7 operation, an extension to
        /// the 23 of v0.2.0; see `spec/v1/DIVERGENCES.md`).
        CitationGet = "citation.get",
        ArtifactRevise = "artifact.revise",
        ArtifactHistory = "artifact.history",
        ArtifactForget = "artifact.forget",
        ClaimAssert = "claim.assert",
        ClaimGet = "claim.get",
        ClaimHistory = "claim.history",
        ClaimRevise = "claim.revise",
        ClaimRetract = "claim.retract",
        RelationPut = "relation.put",
        RelationList = "relation.list",
        ConflictList = "conflict.list",
        Search = "search",
        MemoryRecall = "memory.recall",
        /// One bounded candidate-routing step after a weak recall (the reference's v0.7
        /// operation, an extension; see `spec/v1/DIVERGENCES.md`).
        MemoryProbe = "memory.probe",
        /// Recall, plus one bounded packet of exact unqualified evidence when no claim
        /// qualified (the reference's v0.7 agent path, an extension).
        MemoryRetrieve = "memory.retrieve",
        ContextBuild = "context.build",
        Doctor = "doctor",
        Verify = "verify",
        BackupCreate = "backup.create",
        /// Rebuilds the derived FTS projection from authoritative revisions. An extension to
        /// the reference's 23 operations (see `spec/v1/DIVERGENCES.md`).
        Reindex = "reindex",
        /// Lists current artifacts visible at a horizon. A read-only browsing extension, like
        /// `claim.list` and `event.list` (see `spec/v1/DIVERGENCES.md`).
        ArtifactList = "artifact.list",
        ClaimList = "claim.list",
        EventList = "event.list",
        /// Erases the content of every revision of an artifact, leaving a tombstone. An
        /// extension (see `spec/v1/DIVERGENCES.md`).
        ArtifactPurge = "artifact.purge",
        /// Erases the statement of every revision of a claim, leaving a tombstone. An extension.
        ClaimPurge = "claim.purge",
        /// Replays a portable export archive into the store. An extension.
        Import = "import",
    }
}

impl Operation {
    /// The dotted wire name, for example `artifact.put`.
    pub const fn wire_name(self) -> &'static str {
        self.as_str()
    }

    /// Looks an operation up by its dotted wire name.
    pub fn from_wire_name(name: &str) -> Option<Operation> {
        Operation::parse(name)
    }

    /// Whether this is one of the 23 operations of protocol v1 (not an extension).
    pub fn is_protocol_v1(self) -> bool {
        !matches!(
            self,
            Operation::Reindex
                | Operation::CitationGet
                | Operation::MemoryProbe
                | Operation::MemoryRetrieve
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
                    | Operation::MemoryProbe
                    | Operation::MemoryRetrieve
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
                | Operation::MemoryProbe
                | Operation::MemoryRetrieve
                | Operation::ContextBuild
                | Operation::ArtifactList
                | Operation::ClaimList
                | Operation::EventList
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip_through_serde() {
        assert_eq!(Operation::ALL.len(), 33);
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
