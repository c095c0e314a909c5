//! The FTS query builder never panics and never lets user text become FTS syntax: every
//! term it emits is a quoted run of letters, digits or `_`, joined with ` OR `.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memoree::retrieval::build_fts_query;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(query) = build_fts_query(text) {
        for term in query.match_expr.split(" OR ") {
            let inner = term.strip_prefix('"').and_then(|t| t.strip_suffix('"')).expect("every term is quoted");
            assert!(!inner.is_empty());
            assert!(inner.chars().all(|c| c.is_alphanumeric() || c == '_'), "unsafe term {term:?}");
        }
    }
});
