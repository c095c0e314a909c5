use std::fs;
use std::path::{Path, PathBuf};

use super::*;
use crate::testkit::parts;

/// The shared potion-base-8M model directory, or `None` after a visible skip.
fn potion(test: &str) -> Option<PathBuf> {
    parts::shared_file("models/potion-base-8M/model.safetensors", test).map(|p| p.parent().unwrap().to_path_buf())
}

/// A copy of the model in a temp dir, for tests that damage it.
fn copy_of(model: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, _) in MODEL_FILES {
        fs::copy(model.join(name), dir.path().join(name)).unwrap();
    }
    dir
}

fn bad_model_message(result: Result<Embedder, SemanticError>) -> String {
    match result {
        Err(error @ SemanticError::BadModel(..)) => {
            assert!(error.is_invalid_request());
            error.to_string()
        }
        other => panic!("expected a bad-model error, got {other:?}"),
    }
}

#[test]
fn potion_loads_deterministically_and_puts_a_paraphrase_closer_than_an_unrelated_text() {
    let Some(model) = potion(&parts::current_test()) else {
        return;
    };
    let embedder = Embedder::load(&model, None).unwrap();
    assert_eq!(embedder.dimensions(), 256);
    assert!(embedder.digest().starts_with("blake3:") && embedder.digest().len() == 7 + 64);
    assert_eq!(digest_dir(&model).unwrap(), embedder.digest());

    let question = embedder.embed("When did Melanie go to the museum?");
    let answer = embedder.embed("Yesterday I took the kids to the museum.");
    let unrelated = embedder.embed("The quarterly budget was approved by finance.");
    assert_eq!(
        question,
        embedder.embed("When did Melanie go to the museum?"),
        "deterministic"
    );
    let near = cosine(&question, &answer);
    let far = cosine(&question, &unrelated);
    assert!(near > far + 0.1, "paraphrase {near} vs unrelated {far}");
}

#[test]
fn install_status_and_remove_keep_one_checked_copy_in_the_data_directory() {
    let Some(model) = potion(&parts::current_test()) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let data_dir = home.path().join("data");
    assert!(status(&data_dir).unwrap().is_none());
    assert!(matches!(State::load(&data_dir), State::Off(OffReason::NotInstalled)));

    let report = install(&data_dir, &model, None).unwrap();
    assert_eq!(report.replaced, None);
    assert_eq!(report.manifest.dimensions, 256);
    assert_eq!(report.manifest.model_digest, digest_dir(&model).unwrap());
    assert_eq!(status(&data_dir).unwrap().unwrap(), report.manifest);
    let state = State::load(&data_dir);
    let embedder = state.embedder().expect("semantics is on after install");
    assert_eq!(embedder.digest(), report.manifest.model_digest);
    assert_eq!(
        state.describe().model_digest,
        Some(report.manifest.model_digest.clone())
    );

    // Installing again replaces the copy and names what it replaced; no staging is left.
    let again = install(&data_dir, &model, Some(&report.manifest.model_digest)).unwrap();
    assert_eq!(again.replaced.as_deref(), Some(report.manifest.model_digest.as_str()));
    let names: Vec<String> = fs::read_dir(&data_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [SEMANTIC_DIR]);

    assert_eq!(
        remove(&data_dir).unwrap(),
        Some(Some(report.manifest.model_digest.clone()))
    );
    assert!(!data_dir.join(SEMANTIC_DIR).exists());
    assert_eq!(remove(&data_dir).unwrap(), None);
    assert!(matches!(State::load(&data_dir), State::Off(OffReason::NotInstalled)));
}

#[test]
fn a_wrong_digest_or_a_damaged_model_is_refused_and_the_data_directory_stays_unchanged() {
    let Some(model) = potion(&parts::current_test()) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let data_dir = home.path().join("data");
    let unchanged = |data_dir: &Path| assert!(!data_dir.join(SEMANTIC_DIR).exists());

    let wrong = format!("blake3:{}", "0".repeat(64));
    match install(&data_dir, &model, Some(&wrong)) {
        Err(SemanticError::DigestMismatch { expected, actual }) => {
            assert_eq!(expected, wrong);
            assert_eq!(actual, digest_dir(&model).unwrap());
        }
        other => panic!("expected a digest mismatch, got {other:?}"),
    }
    unchanged(&data_dir);

    let missing_dir = bad_model_message(Embedder::load(&home.path().join("nowhere"), None));
    assert!(missing_dir.contains("cannot be read"), "{missing_dir}");

    let damaged = copy_of(&model);
    let path = damaged.path();
    // A truncated matrix.
    let bytes = fs::read(model.join("model.safetensors")).unwrap();
    fs::write(path.join("model.safetensors"), &bytes[..bytes.len() / 2]).unwrap();
    let message = bad_model_message(Embedder::load(path, None));
    assert!(message.contains("truncated or malformed"), "{message}");
    assert!(install(&data_dir, path, None).is_err());
    unchanged(&data_dir);
    fs::write(path.join("model.safetensors"), &bytes).unwrap();

    // A configuration that disagrees with the matrix.
    let config = fs::read_to_string(model.join("config.json")).unwrap();
    fs::write(
        path.join("config.json"),
        config.replace("\"hidden_dim\": 256", "\"hidden_dim\": 384"),
    )
    .unwrap();
    let message = bad_model_message(Embedder::load(path, None));
    assert!(message.contains("dimension mismatch"), "{message}");
    fs::write(path.join("config.json"), &config).unwrap();

    // A tokenizer with more tokens than the matrix has rows.
    let tokenizer = fs::read_to_string(model.join("tokenizer.json")).unwrap();
    let grown = tokenizer.replacen("\"[UNK]\":1,", "\"[UNK]\":1,\"zzzz-extra\":99999,", 1);
    assert_ne!(grown, tokenizer, "the fixture edit found its anchor");
    fs::write(path.join("tokenizer.json"), grown).unwrap();
    let message = bad_model_message(Embedder::load(path, None));
    assert!(message.contains("the matrix only 29528 rows"), "{message}");

    // Malformed JSON, then a missing file.
    fs::write(path.join("tokenizer.json"), &tokenizer[..tokenizer.len() / 3]).unwrap();
    let message = bad_model_message(Embedder::load(path, None));
    assert!(message.contains("tokenizer.json is not JSON"), "{message}");
    fs::remove_file(path.join("tokenizer.json")).unwrap();
    let message = bad_model_message(Embedder::load(path, None));
    assert!(message.contains("tokenizer.json is missing"), "{message}");
    assert!(install(&data_dir, path, None).is_err());
    unchanged(&data_dir);
}

#[test]
fn a_model_changed_after_install_is_not_loaded_and_the_state_says_why() {
    let Some(model) = potion(&parts::current_test()) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let data_dir = home.path().join("data");
    install(&data_dir, &model, None).unwrap();
    let config = data_dir.join(SEMANTIC_DIR).join("config.json");
    let mut text = fs::read_to_string(&config).unwrap();
    text.push('\n');
    fs::write(&config, text).unwrap();
    match State::load(&data_dir) {
        State::Off(OffReason::Unusable(detail)) => assert!(detail.contains("not the expected"), "{detail}"),
        other => panic!("expected semantics off, got {other:?}"),
    }
    let described = State::load(&data_dir).describe();
    assert!(!described.enabled);
    assert!(described.reason.unwrap().contains("cannot be used"));
}

#[test]
fn body_windows_tile_the_body_in_order_on_char_boundaries_ending_at_whitespace_where_near() {
    use super::project::{MAX_WINDOWS, WINDOW_BYTES, body_windows};
    assert_eq!(body_windows("short"), [(0, 5)]);
    assert_eq!(body_windows(""), [(0, 0)]);
    let words = "Le café près du quai ouvre à sept heures — 東京 ".repeat(60);
    let windows = body_windows(&words);
    assert!(windows.len() > 1);
    assert_eq!(windows[0].0, 0);
    for pair in windows.windows(2) {
        assert_eq!(pair[0].1, pair[1].0, "windows are contiguous");
    }
    for &(start, end) in &windows {
        assert!(words.is_char_boundary(start) && words.is_char_boundary(end));
        assert!(end > start && end - start <= WINDOW_BYTES);
        if end < words.len() {
            assert!(words[..end].ends_with(char::is_whitespace), "{:?}", &words[start..end]);
        }
    }
    assert_eq!(windows.last().unwrap().1, words.len());
    // A body without whitespace is still cut, on character boundaries.
    let solid = "é".repeat(1000);
    let cut = body_windows(&solid);
    assert!(
        cut.iter()
            .all(|&(s, e)| solid.is_char_boundary(s) && solid.is_char_boundary(e) && e > s)
    );
    // Past MAX_WINDOWS windows the body has no vectors (lexical retrieval still reads it).
    let huge = "word ".repeat(20_000);
    let capped = body_windows(&huge);
    assert_eq!(capped.len(), MAX_WINDOWS);
    assert!(capped.last().unwrap().1 < huge.len());
}

#[test]
fn quantized_vectors_keep_the_cosine_to_within_a_hundredth() {
    use super::project::{cosine_i8, quantize, similarity};
    let Some(dir) = potion(&parts::current_test()) else {
        return;
    };
    let embedder = Embedder::load(&dir, None).unwrap();
    let query = embedder.embed("When did Melanie go to the museum?");
    for text in [
        "Yesterday I took the kids to the museum.",
        "The quarterly budget review is on Friday.",
    ] {
        let exact = f64::from(cosine(&query, &embedder.embed(text)));
        let stored = quantize(&embedder.embed(text));
        assert!((cosine_i8(&query, &stored) - exact).abs() < 0.01, "{text}");
    }
    assert_eq!(quantize(&[0.0, 0.0]), [0, 0]);
    assert_eq!(cosine_i8(&query, &vec![0; query.len()]), 0.0);
    assert_eq!(similarity(&query, &[]), 0.0);
    // A projection is the same whenever it is computed.
    let a = embedder.project_artifact("Harbor logbook", Some(&"tides and cargo ".repeat(100)));
    let b = embedder.project_artifact("Harbor logbook", Some(&"tides and cargo ".repeat(100)));
    assert_eq!(a, b);
    assert!(a.model.starts_with(embedder.digest()));
    assert!(a.windows.len() > 1);
}
