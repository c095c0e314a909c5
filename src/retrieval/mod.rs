//! Pure retrieval logic: FTS5 query construction, `bounded_recency_v1` ranking,
//! excerpts, risk signals and the `context.build` renderer. Nothing here touches SQLite
//! (except in tests), the clock or the wire types; callers pass plain values in.

pub mod query;
pub mod rank;
pub mod render;
pub mod risk;
pub mod snippet;

pub use query::{FtsQuery, QueryError, build_fts_query};
pub use rank::{
    DecayClass, EffectiveBasis, RankInput, RankedPosition, decay_class_for_artifact, decay_class_for_claim,
    lexical_score_from_bm25, recency_bonus, rerank,
};
pub use render::{EntityKind, RenderConflict, RenderHit, Rendered, RenderedItem, render_context};
pub use risk::risk_signals;
pub use snippet::{lossy_span, snippet, truncate_to_char_boundary};
