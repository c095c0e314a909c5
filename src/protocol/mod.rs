//! Wire types of protocol v1: envelopes, operations, error codes, limits and the typed
//! inputs and outputs of every operation. Nothing here performs I/O or touches storage;
//! this module is the only place that derives serde for the wire.

pub mod admin;
pub mod artifact;
pub mod browse;
pub mod claim;
mod envelope;
mod error_code;
pub mod limits;
pub mod meta;
mod op;
pub mod purge;
pub mod relation;
pub mod retrieval;
pub mod schema;

pub use envelope::{
    AmbientContext, CLI_REQUEST_ID, ContextSource, ErrorBody, Horizon, PROTOCOL_VERSION, Request, ResolvedContext,
    Response, TRANSPORT_REQUEST_ID, Warning,
};
pub use error_code::ErrorCode;
pub use op::Operation;
