//! What the model reads of a revision and how its vectors are kept: the windows of an
//! artifact (its title, then consecutive pieces of its body) or a claim's statement, each
//! embedded and quantized to int8 ([`quantize`]).
//!
//! The same function serves the write path (the stored projection, `store::vectors`) and a
//! query that meets a revision with no stored rows (a historical revision, or a store still
//! catching up): both compute [`artifact_windows`] and [`quantize`] the same way, so a
//! similarity never depends on whether the rows were there ([`similarity`] is the maximum
//! over the windows).

use super::Embedder;
use crate::store::vectors::{Projection, Window};

/// Bytes of body per window: 384 and 1024 measure alike on LoCoMo and the golden corpora
/// (BENCHMARKS.md), and the larger one stores a third of the rows and embeds a put in fewer
/// calls. About 256 tokens: within the model's 512.
pub const WINDOW_BYTES: usize = 1024;
/// Windows per artifact revision: the first `WINDOW_BYTES * MAX_WINDOWS` bytes of a body
/// have vectors (lexical retrieval still reads all of it).
pub const MAX_WINDOWS: usize = 32;
/// The windowing's name, part of the projection key.
pub const WINDOWING: &str = "windows_1024x32_v1";
/// A window ends at the last whitespace within this many bytes of its nominal end.
const SNAP_BYTES: usize = 48;

/// The byte ranges of `body` that get a vector: the whole body when it fits one window,
/// else consecutive windows ending at whitespace where one is near.
pub fn body_windows(body: &str) -> Vec<(usize, usize)> {
    if body.len() <= WINDOW_BYTES {
        return vec![(0, body.len())];
    }
    let mut windows = Vec::new();
    let mut start = 0;
    while start < body.len() && windows.len() < MAX_WINDOWS {
        let mut end = (start + WINDOW_BYTES).min(body.len());
        while !body.is_char_boundary(end) {
            end -= 1;
        }
        if end < body.len()
            && let Some((space, ch)) = body[start..end].char_indices().rev().find(|(_, c)| c.is_whitespace())
            && space > 0
            && start + space + SNAP_BYTES >= end
        {
            end = start + space + ch.len_utf8();
        }
        if end <= start {
            // A window narrower than one character: take the character.
            end = start + body[start..].chars().next().map_or(1, char::len_utf8);
        }
        windows.push((start, end));
        start = end;
    }
    windows
}

/// The texts the model reads of an artifact revision, with the body range of each.
pub fn artifact_windows<'a>(title: &'a str, body: Option<&'a str>) -> Vec<(usize, usize, String)> {
    match body {
        None | Some("") => vec![(0, 0, title.to_owned())],
        Some(body) => body_windows(body)
            .into_iter()
            .map(|(start, end)| (start, end, format!("{title}\n{}", &body[start..end])))
            .collect(),
    }
}

/// The int8 form of a vector: each component scaled so the largest magnitude is 127.
pub fn quantize(vector: &[f32]) -> Vec<i8> {
    let largest = vector.iter().fold(0f32, |m, v| m.max(v.abs()));
    if largest == 0.0 || !largest.is_finite() {
        return vec![0; vector.len()];
    }
    vector
        .iter()
        .map(|v| (v / largest * 127.0).round().clamp(-127.0, 127.0) as i8)
        .collect()
}

/// The cosine of a query vector (a unit vector) and one stored window, three decimals.
pub fn cosine_i8(query: &[f32], stored: &[i8]) -> f64 {
    let (mut dot, mut norm) = (0f32, 0f32);
    for (q, &s) in query.iter().zip(stored) {
        let s = f32::from(s);
        dot += q * s;
        norm += s * s;
    }
    if norm == 0.0 || query.len() != stored.len() {
        return 0.0;
    }
    let cosine = f64::from((dot / norm.sqrt()).clamp(-1.0, 1.0));
    (cosine * 1000.0).round() / 1000.0
}

/// The similarity of a query to a revision: the best of its windows (0 when it has none).
pub fn similarity(query: &[f32], windows: &[Vec<i8>]) -> f64 {
    windows.iter().map(|w| cosine_i8(query, w)).fold(0.0, f64::max)
}

impl Embedder {
    /// The projection of an artifact revision (`body` is its indexed text, if any).
    pub fn project_artifact(&self, title: &str, body: Option<&str>) -> Projection {
        self.project(artifact_windows(title, body))
    }

    /// The projection of a claim revision.
    pub fn project_claim(&self, statement: &str) -> Projection {
        self.project(vec![(0, statement.len(), statement.to_owned())])
    }

    /// The quantized vectors of each window's text, without the ranges.
    pub fn window_vectors(&self, windows: &[(usize, usize, String)]) -> Vec<Vec<i8>> {
        windows.iter().map(|(_, _, text)| quantize(&self.embed(text))).collect()
    }

    /// What identifies the rows this model and this windowing write (`semantic_vectors.model`):
    /// a change of either makes them stale.
    pub fn projection_key(&self) -> &str {
        &self.projection_key
    }

    fn project(&self, windows: Vec<(usize, usize, String)>) -> Projection {
        let vectors = self.window_vectors(&windows);
        Projection {
            model: self.projection_key.clone(),
            windows: windows
                .into_iter()
                .zip(vectors)
                .map(|((start, end, _), vector)| Window { start, end, vector })
                .collect(),
        }
    }
}
