//! The English inflection stemmer: Snowball English (Porter2) from `rust-stemmers`.

use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

/// The Porter2 stem of a folded word (`logging` → `log`, `caching` → `cach`).
pub fn stem(word: &str) -> String {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER
        .get_or_init(|| Stemmer::create(Algorithm::English))
        .stem(word)
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::stem;

    #[test]
    fn inflections_share_a_stem() {
        for group in [
            &["log", "logs", "logged", "logging"][..],
            &["cache", "caching", "cached"],
            &["disable", "disabled", "disabling"],
            &["rotate", "rotated", "rotation"],
            &["deployment", "deployments"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(stems.windows(2).all(|w| w[0] == w[1]), "{group:?} → {stems:?}");
        }
        assert_ne!(stem("router"), stem("route"));
    }
}
