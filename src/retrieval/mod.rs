//! Pure retrieval logic: query analysis, the vocabulary and its expansions, qualification,
//! FTS5 expressions, `bounded_recency_v1` ranking, excerpt windows, diversity, risk signals
//! and the `context.build` renderer. Nothing here touches SQLite (except in tests), the
//! clock or the wire types; callers pass plain values in.

pub mod analyze;
pub mod corpus;
pub mod diversity;
pub mod lexicon;
pub mod passage;
pub mod plan;
pub mod profile;
pub mod qualify;
pub mod query;
pub mod rank;
pub mod render;
pub mod risk;
pub mod snippet;
pub mod stem;
pub mod text;
pub mod vocabulary;

pub use analyze::{Analysis, Unit, UnitKind, analyze};
pub use plan::{Plan, TextMatch};
pub use qualify::{POLICY_VERSION as QUALIFICATION_POLICY, Qualification, qualify};
pub use query::{FtsQuery, QueryError, build_fts_query};
pub use rank::{
    DecayClass, EffectiveBasis, RankInput, RankedPosition, decay_class_for_artifact, decay_class_for_claim,
    lexical_score_from_bm25, recency_bonus, rerank,
};
pub use render::{EntityKind, RenderConflict, RenderHit, Rendered, RenderedItem, render_context};
pub use risk::risk_signals;
pub use snippet::{Excerpt, lossy_span, snippet, truncate_to_char_boundary};
pub use vocabulary::{MatchKind, Vocabulary};
