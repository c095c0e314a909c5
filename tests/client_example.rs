//! The typed-client example of the docs (`src/client/mod.rs`) and the README, compiled here
//! so it stays true; it is type-checked, not run (it would start a daemon).

use memoree::client::{Exchange, autostart::Autostart};
use memoree::paths::Paths;
use memoree::protocol::meta::CapabilitiesInput;
use memoree::protocol::retrieval::RecallInput;
use memoree::protocol::{AmbientContext, ContextSource, Request, RequestId};

fn capabilities_example() -> Result<(), Box<dyn std::error::Error>> {
    let client = Autostart::for_paths(&Paths::from_env()?)?.keep_alive();
    let response = client.exchange(&Request::new(RequestId::generate(), CapabilitiesInput {}))?;
    let _max_frame_bytes = response.result.unwrap().max_frame_bytes;
    Ok(())
}

fn recall_example() -> Result<(), Box<dyn std::error::Error>> {
    let client = Autostart::for_paths(&memoree::paths::Paths::from_env()?)?.keep_alive();
    let request = Request::new(RequestId::generate(), RecallInput::new("how are requests framed?"))
        .with_context(AmbientContext::project("wsp_1", "prj_1"), ContextSource::Explicit);
    let _recall = client.exchange(&request)?; // Response<RecallResult>
    Ok(())
}

/// One documented example.
type Example = fn() -> Result<(), Box<dyn std::error::Error>>;

#[test]
fn the_documented_client_examples_compile() {
    let examples: [Example; 2] = [capabilities_example, recall_example];
    assert_eq!(examples.len(), 2);
}
