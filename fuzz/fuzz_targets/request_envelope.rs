//! Arbitrary bytes as a request document: the service always answers with exactly one
//! well-formed envelope (never a panic), and a failure always carries a stable code.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use memoree::protocol::{TRANSPORT_REQUEST_ID, schema};
use memoree::service::Service;

struct Fixture {
    _dir: tempfile::TempDir,
    service: Service,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let service = Service::open(&dir.path().join("data")).expect("open store");
        Fixture { _dir: dir, service }
    })
}

fuzz_target!(|data: &[u8]| {
    let response = fixture().service.handle_json(data, TRANSPORT_REQUEST_ID);
    let envelope = serde_json::to_value(&response).expect("envelopes serialize");
    schema::validate_response(&envelope).expect("every response matches the response schema");
    assert!(response.ok || response.error.is_some());
});
