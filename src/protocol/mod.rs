//! Wire types of protocol v1, for both directions: envelopes, operations, error codes,
//! limits, identifiers and the typed inputs and outputs of every operation. Every type
//! here is `Serialize + Deserialize`: the service decodes inputs and encodes outputs with
//! them, and every in-crate client (CLI wrappers, `demo`, `eval`, daemon control) builds
//! its requests from them and may decode results into them.
//!
//! Nothing here performs I/O or touches storage; this module is the only place that
//! derives serde for the wire.

pub mod admin;
pub mod agent;
pub mod artifact;
pub mod browse;
pub mod candidates;
pub mod citation;
pub mod claim;
pub mod document;
mod envelope;
mod error_code;
pub mod ids;
pub mod limits;
pub mod local;
pub mod meta;
mod op;
pub mod purge;
pub mod relation;
pub mod retrieval;
pub mod schema;
pub mod status;
mod wire_enum;

pub use envelope::{
    AmbientContext, CLI_REQUEST_ID, CONNECTION_LIMIT_REASON, ContextSource, ErrorBody, Horizon, Input,
    PROTOCOL_VERSION, Request, ResolvedContext, Response, TRANSPORT_REQUEST_ID, Warning,
};
pub use error_code::{ErrorCode, TlsFailure};
pub use ids::RequestId;
pub use op::Operation;
pub use wire_enum::UnknownVariant;

/// A short wire label, usually a constant (`"fts5_bm25"`, `"sqlite_wal"`), owned when it
/// was decoded from a response.
pub type Label = std::borrow::Cow<'static, str>;
