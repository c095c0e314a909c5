//! The `ARTIFACT_ID@REVISION_ID[#START-END]` parser never panics, and whatever it accepts
//! has non-empty ids and, when a span is present, `start < end`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memoree::cli::evidence::parse_locator;

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
});
