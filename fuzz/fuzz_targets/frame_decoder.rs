//! The frame decoder never panics, never allocates for a declared length over the limit, and
//! a decoded body is exactly the declared length. A small limit stands in for the 24 MiB
//! frame limit so oversize declarations are common.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use memoree::frame::{FrameError, blocking};

const LIMIT: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let mut reader = Cursor::new(data);
    loop {
        match blocking::read(&mut reader, LIMIT) {
            Ok(None) => break,
            Ok(Some(body)) => assert!(body.len() <= LIMIT),
            Err(FrameError::TooLarge { len, max }) => {
                assert!(len > max as u64, "refused a declared length of {len} within the limit {max}");
                break;
            }
            Err(_) => break,
        }
    }
});
