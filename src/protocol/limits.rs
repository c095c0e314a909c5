//! Resource limits of protocol v1. `capabilities` reports the public ones; the rest are
//! internal bounds on individual fields.

/// Raw artifact content bytes (8 MiB).
pub const MAX_ARTIFACT_BYTES: usize = 8 * 1024 * 1024;
/// Encoded (JSON string or base64) content bytes (12 MiB).
pub const MAX_ENCODED_CONTENT_BYTES: usize = 12 * 1024 * 1024;
/// One length-prefixed frame (24 MiB); a frame of exactly this size is allowed.
pub const MAX_FRAME_BYTES: usize = 24 * 1024 * 1024;
/// Concurrent daemon connections.
pub const MAX_CONCURRENT_CONNECTIONS: usize = 4;
/// Search query bytes.
pub const MAX_QUERY_BYTES: usize = 8 * 1024;
/// Query words or identifiers after tokenization.
pub const MAX_QUERY_TOKENS: usize = 48;
/// Artifact title bytes.
pub const MAX_TITLE_BYTES: usize = 4 * 1024;
/// Claim statement bytes.
pub const MAX_CLAIM_STATEMENT_BYTES: usize = 128 * 1024;
/// Provenance or relation metadata, as encoded JSON.
pub const MAX_METADATA_BYTES: usize = 64 * 1024;
/// Evidence locators per claim revision.
pub const MAX_EVIDENCE_ITEMS: usize = 128;
/// Search hits per request.
pub const MAX_SEARCH_ITEMS: usize = 100;
/// Claims per recall.
pub const MAX_RECALL_CLAIMS: usize = 10;
/// Artifact references per recall.
pub const MAX_RECALL_ARTIFACT_REFS: usize = 20;
/// Unqualified candidates of each kind per recall (`max_candidate_claims`,
/// `max_candidate_artifact_refs`; 0, the default, shows none).
pub const MAX_RECALL_CANDIDATES: usize = 16;
/// Excerpt bytes per recall item.
pub const MAX_RECALL_EXCERPT_BYTES: usize = 1024;
/// Evidence previews attached per recalled claim.
pub const MAX_RECALL_EVIDENCE_EXCERPTS_PER_CLAIM: usize = 4;
/// History items per page.
pub const MAX_HISTORY_ITEMS: usize = 100;
/// Relation rows per page.
pub const MAX_RELATION_LIST_ITEMS: usize = 100;
/// Conflict cases per page.
pub const MAX_CONFLICT_LIST_ITEMS: usize = 100;
/// Items per page of the browsing extensions (`artifact.list`, `claim.list`, `event.list`).
pub const MAX_BROWSE_ITEMS: usize = 100;
/// Artifact kind bytes.
pub const MAX_KIND_BYTES: usize = 128;
/// Media type bytes.
pub const MAX_MEDIA_TYPE_BYTES: usize = 512;
/// Actor bytes.
pub const MAX_ACTOR_BYTES: usize = 1024;
/// Forget/retract reason and horizon reason bytes.
pub const MAX_REASON_BYTES: usize = 64 * 1024;
/// Entity identifiers (artifact, revision, claim, relation ids) in inputs.
pub const MAX_ID_BYTES: usize = 256;
/// `request_id` bytes.
pub const MAX_REQUEST_ID_BYTES: usize = 256;
/// `idempotency_key` bytes.
pub const MAX_IDEMPOTENCY_KEY_BYTES: usize = 512;
/// Workspace, project, task and component identifiers.
pub const MAX_CONTEXT_ID_BYTES: usize = 256;
/// Pins per context.
pub const MAX_PINS: usize = 128;
/// Bytes per pin.
pub const MAX_PIN_BYTES: usize = 512;
/// Content up to this many bytes is stored inline in SQLite rather than as a CAS file.
pub const INLINE_BLOB_MAX_BYTES: usize = 16 * 1024;
/// Default `context.build` byte budget.
pub const DEFAULT_CONTEXT_MAX_BYTES: usize = 16 * 1024;

// The frame must carry the largest encoded content plus envelope overhead.
const _: () = assert!(MAX_ENCODED_CONTENT_BYTES * 3 / 2 <= MAX_FRAME_BYTES);
const _: () = assert!(MAX_ARTIFACT_BYTES * 4 / 3 + 4 <= MAX_ENCODED_CONTENT_BYTES);
