//! Checking and loading one Model2Vec model directory.

use std::fs;
use std::io::Read;
use std::path::Path;

use model2vec_rs::model::StaticModel;
use safetensors::SafeTensors;
use serde_json::Value;

use super::SemanticError;

/// The files of a model, in digest order, with the most bytes each may have.
pub const MODEL_FILES: [(&str, u64); 3] = [
    ("config.json", 1 << 20),
    ("model.safetensors", 1 << 30),
    ("tokenizer.json", 64 << 20),
];

/// The tensor names the format uses for the embedding matrix, in the order the crate tries.
const MATRIX_NAMES: [&str; 3] = ["embeddings", "0", "embedding.weight"];

/// A text the loader embeds to prove the model produces finite unit vectors.
const PROBE: &str = "memory keeps what was said";

/// A loaded model: the embedding function plus what identifies it.
#[derive(Debug)]
pub struct Embedder {
    model: StaticModel,
    digest: String,
    dimensions: usize,
    pub(super) projection_key: String,
}

impl Embedder {
    /// Checks and loads the model in `dir`; `expected_digest`, when given, must match.
    pub fn load(dir: &Path, expected_digest: Option<&str>) -> Result<Embedder, SemanticError> {
        let [config, matrix, tokenizer] = read_files(dir)?;
        let digest = digest_of(&[&config, &matrix, &tokenizer]);
        if let Some(expected) = expected_digest
            && expected != digest
        {
            return Err(SemanticError::DigestMismatch {
                expected: expected.to_owned(),
                actual: digest,
            });
        }
        let settings: Value = serde_json::from_slice(&config)
            .map_err(|e| SemanticError::bad(dir, format!("config.json is not JSON: {e}")))?;
        if !settings.is_object() {
            return Err(SemanticError::bad(dir, "config.json is not a JSON object"));
        }
        let (rows, columns) = matrix_shape(dir, &matrix)?;
        if let Some(hidden) = settings.get("hidden_dim").and_then(Value::as_u64)
            && hidden as usize != columns
        {
            return Err(SemanticError::bad(
                dir,
                format!("dimension mismatch: config.json says {hidden} dimensions, the matrix has {columns}"),
            ));
        }
        let highest = highest_token_id(dir, &tokenizer)?;
        if highest >= rows as u64 {
            return Err(SemanticError::bad(
                dir,
                format!("dimension mismatch: the tokenizer has token id {highest}, the matrix only {rows} rows"),
            ));
        }
        let model = StaticModel::from_bytes(&tokenizer, &matrix, &config, Some(true))
            .map_err(|e| SemanticError::bad(dir, format!("{e:#}")))?;
        drop(matrix);
        let embedder = Embedder {
            model: model.quantize_int8(),
            projection_key: format!("{digest}+{}", super::project::WINDOWING),
            digest,
            dimensions: columns,
        };
        let probe = embedder.embed(PROBE);
        let norm: f32 = probe.iter().map(|v| v * v).sum::<f32>().sqrt();
        if probe.len() != columns || !probe.iter().all(|v| v.is_finite()) || (norm - 1.0).abs() > 1e-3 {
            return Err(SemanticError::bad(
                dir,
                "the model does not produce finite unit vectors",
            ));
        }
        Ok(embedder)
    }

    /// `blake3:` and the hex digest of the model's files (see [`digest_dir`]).
    pub fn digest(&self) -> &str {
        &self.digest
    }

    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// The unit vector of `text` (the zero vector for text with no known token).
    pub fn embed(&self, text: &str) -> Vec<f32> {
        self.model.encode_single(text)
    }
}

/// The cosine similarity of two unit vectors (their dot product), in `[-1, 1]`.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>().clamp(-1.0, 1.0)
}

/// The digest of the model in `dir`, as recorded at install: BLAKE3 over each file of
/// [`MODEL_FILES`] in order, each preceded by its name and byte length.
pub fn digest_dir(dir: &Path) -> Result<String, SemanticError> {
    let [a, b, c] = read_files(dir)?;
    Ok(digest_of(&[&a, &b, &c]))
}

fn digest_of(files: &[&[u8]; 3]) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"memoree model2vec v1\0");
    for ((name, _), bytes) in MODEL_FILES.iter().zip(files) {
        hasher.update(name.as_bytes());
        hasher.update(&[0]);
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    format!("blake3:{}", hasher.finalize().to_hex())
}

/// Reads the three files, each a regular file (never through a symbolic link) within its
/// size bound.
fn read_files(dir: &Path) -> Result<[Vec<u8>; 3], SemanticError> {
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(SemanticError::bad(dir, "not a directory")),
        Err(e) => return Err(SemanticError::bad(dir, format!("cannot be read: {e}"))),
    }
    let mut out: [Vec<u8>; 3] = Default::default();
    for ((name, limit), slot) in MODEL_FILES.iter().zip(out.iter_mut()) {
        let path = dir.join(name);
        let meta = fs::symlink_metadata(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SemanticError::bad(dir, format!("{name} is missing")),
            _ => SemanticError::bad(dir, format!("{name} cannot be read: {e}")),
        })?;
        if !meta.is_file() {
            return Err(SemanticError::bad(dir, format!("{name} is not a regular file")));
        }
        if meta.len() == 0 {
            return Err(SemanticError::bad(dir, format!("{name} is empty")));
        }
        if meta.len() > *limit {
            return Err(SemanticError::bad(
                dir,
                format!(
                    "{name} has {} bytes, more than the {limit} a model file may have",
                    meta.len()
                ),
            ));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        fs::File::open(&path)
            .and_then(|f| f.take(*limit + 1).read_to_end(&mut bytes))
            .map_err(|e| SemanticError::bad(dir, format!("{name} cannot be read: {e}")))?;
        *slot = bytes;
    }
    Ok(out)
}

/// The embedding matrix's `(rows, columns)`; a truncated or malformed file is named as such.
fn matrix_shape(dir: &Path, bytes: &[u8]) -> Result<(usize, usize), SemanticError> {
    let tensors = SafeTensors::deserialize(bytes)
        .map_err(|e| SemanticError::bad(dir, format!("model.safetensors is truncated or malformed: {e}")))?;
    let matrix = MATRIX_NAMES
        .iter()
        .find_map(|name| tensors.tensor(name).ok())
        .ok_or_else(|| SemanticError::bad(dir, "model.safetensors holds no embedding matrix (\"embeddings\")"))?;
    match *matrix.shape() {
        [rows, columns] if rows > 0 && columns > 0 => Ok((rows, columns)),
        ref shape => Err(SemanticError::bad(
            dir,
            format!("the embedding matrix has shape {shape:?}, not rows x dimensions"),
        )),
    }
}

/// The highest token id `tokenizer.json` can produce (its vocabulary and added tokens).
fn highest_token_id(dir: &Path, bytes: &[u8]) -> Result<u64, SemanticError> {
    let json: Value = serde_json::from_slice(bytes)
        .map_err(|e| SemanticError::bad(dir, format!("tokenizer.json is not JSON: {e}")))?;
    let vocab = json
        .pointer("/model/vocab")
        .ok_or_else(|| SemanticError::bad(dir, "tokenizer.json has no model.vocab"))?;
    let mut highest = match vocab {
        // WordPiece and BPE: token -> id.
        Value::Object(map) => map.values().filter_map(Value::as_u64).max(),
        // Unigram: [token, score] pairs, ids are positions.
        Value::Array(items) => items.len().checked_sub(1).map(|n| n as u64),
        _ => None,
    }
    .ok_or_else(|| SemanticError::bad(dir, "tokenizer.json has an empty or unreadable vocabulary"))?;
    if let Some(Value::Array(added)) = json.get("added_tokens") {
        for id in added.iter().filter_map(|t| t.get("id").and_then(Value::as_u64)) {
            highest = highest.max(id);
        }
    }
    Ok(highest)
}
