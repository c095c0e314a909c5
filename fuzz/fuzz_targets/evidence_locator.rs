//! The two locator parsers never panic: `ARTIFACT_ID@REVISION_ID[#START-END]` (the CLI's
//! evidence syntax) and `memoree://artifact/A@R[#START-END]` (`citation.get`). Whatever
//! either accepts has non-empty ids and, when a span is present, `start < end`; a citation
//! also round-trips through its formatter.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memoree::cli::evidence::parse_locator;
use memoree::protocol::citation::{ArtifactCitation, MAX_CITATION_BYTES};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(locator) = parse_locator(text) {
        assert!(!locator.artifact_id.is_empty() && !locator.revision_id.is_empty());
        match (locator.start_byte, locator.end_byte) {
            (Some(start), Some(end)) => assert!(start < end),
            (None, None) => {}
            _ => panic!("half a span accepted from {text:?}"),
        }
    }
    let as_citation = format!("memoree://artifact/{text}");
    for candidate in [text, as_citation.as_str()] {
        if let Ok(citation) = ArtifactCitation::parse(candidate) {
            assert!(candidate.len() <= MAX_CITATION_BYTES);
            assert!(!citation.artifact_id.is_empty() && !citation.revision_id.is_empty());
            let formatted = match citation.range {
                Some((start, end)) => {
                    assert!(start < end);
                    citation.with_range(start, end)
                }
                None => citation.revision_form(),
            };
            assert_eq!(ArtifactCitation::parse(&formatted), Ok(citation), "{candidate:?}");
        }
    }
});
