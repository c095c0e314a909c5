//! Raw request bytes as a transport hands them over: malformed JSON, invalid UTF-8, lone
//! surrogates, pathological nesting and numbers, repeated keys. Each is `INVALID_REQUEST` (or, when the
//! document is still a valid request, whatever the request earns), never a crash.

use super::{Expect, Sweep};
use crate::protocol::ErrorCode;

const INVALID: Expect = Expect::Fail(ErrorCode::InvalidRequest);

fn deep(open: &str, close: &str, depth: usize, inner: &str) -> Vec<u8> {
    format!("{}{inner}{}", open.repeat(depth), close.repeat(depth)).into_bytes()
}

pub(super) fn sweep(sweep: &mut Sweep) {
    let ok_prefix = r#"{"request_id":"raw","op":"capabilities","input":"#;
    let with_input = |input: &[u8]| {
        let mut bytes = ok_prefix.as_bytes().to_vec();
        bytes.extend_from_slice(input);
        bytes.push(b'}');
        bytes
    };
    let put = |key: &str, title: &[u8]| {
        let mut bytes = format!(
            r#"{{"request_id":"raw","op":"artifact.put","idempotency_key":"{key}","context":{{"workspace_id":"w","project_id":"p"}},"input":{{"kind":"k","content":{{"type":"text","data":"x"}},"title":""#
        )
        .into_bytes();
        bytes.extend_from_slice(title);
        bytes.extend_from_slice(b"\"}}");
        bytes
    };
    let cases: Vec<(&str, Vec<u8>, Expect)> = vec![
        ("empty", Vec::new(), INVALID),
        ("whitespace", b" \n\t ".to_vec(), INVALID),
        ("NUL byte", vec![0], INVALID),
        (
            "truncated object",
            br#"{"request_id":"raw","op":"capab"#.to_vec(),
            INVALID,
        ),
        (
            "trailing garbage",
            br#"{"request_id":"raw","op":"capabilities","input":{}} x"#.to_vec(),
            INVALID,
        ),
        (
            "two documents",
            br#"{"request_id":"a","op":"schema","input":{}}{"request_id":"b"}"#.to_vec(),
            INVALID,
        ),
        (
            "byte order mark",
            [
                b"\xef\xbb\xbf".as_slice(),
                br#"{"request_id":"raw","op":"schema","input":{}}"#,
            ]
            .concat(),
            INVALID,
        ),
        ("single quotes", br"{'request_id':'raw'}".to_vec(), INVALID),
        (
            "comment",
            br#"{"request_id":"raw" /* c */,"op":"schema","input":{}}"#.to_vec(),
            INVALID,
        ),
        (
            "trailing comma",
            br#"{"request_id":"raw","op":"schema","input":{},}"#.to_vec(),
            INVALID,
        ),
        ("NaN literal", with_input(b"NaN"), INVALID),
        ("Infinity literal", with_input(b"Infinity"), INVALID),
        ("number out of range", with_input(b"1e999"), INVALID),
        ("leading zeros", with_input(b"007"), INVALID),
        ("hex number", with_input(b"0x10"), INVALID),
        ("invalid UTF-8 in a string", put("k", b"caf\xe9"), INVALID),
        ("overlong UTF-8 in a string", put("k", b"\xc0\xaf"), INVALID),
        ("UTF-8 surrogate bytes", put("k", b"\xed\xa0\x80"), INVALID),
        ("lone leading surrogate escape", put("k", br"\ud800"), INVALID),
        ("lone trailing surrogate escape", put("k", br"\udc00"), INVALID),
        ("reversed surrogate pair", put("k", br"\udc00\ud800"), INVALID),
        ("bad escape", put("k", br"\x41"), INVALID),
        ("raw control character in a string", put("k", b"a\x01b"), INVALID),
        ("escaped NUL in a title", put("nul", br"a\u0000b"), Expect::Success),
        ("valid surrogate pair", put("pair", br"\ud835\udd18"), Expect::Success),
        (
            "input nested 10000 arrays deep",
            with_input(&deep("[", "]", 10_000, "")),
            INVALID,
        ),
        (
            "input nested 10000 objects deep",
            with_input(&deep("{\"a\":", "}", 10_000, "1")),
            INVALID,
        ),
        (
            "input nested 127 arrays deep",
            with_input(&deep("[", "]", 127, "")),
            INVALID,
        ),
        ("envelope nested 100000 deep", deep("[", "]", 100_000, ""), INVALID),
        (
            "duplicate request_id keys",
            br#"{"request_id":"a","request_id":"b","op":"schema","input":{}}"#.to_vec(),
            INVALID,
        ),
        (
            "duplicate op keys",
            br#"{"request_id":"raw","op":"schema","op":"verify","input":{}}"#.to_vec(),
            INVALID,
        ),
        (
            "duplicate keys deep in the input",
            br#"{"request_id":"raw","op":"search","context":{"workspace_id":"w","project_id":"p"},"input":{"query":"q","recency":{"enabled":true,"enabled":false}}}"#.to_vec(),
            INVALID,
        ),
        ("huge exponent integer", with_input(b"1e308"), INVALID),
        ("negative zero input", with_input(b"-0"), INVALID),
        (
            "a megabyte of whitespace",
            [
                vec![b' '; 1 << 20],
                br#"{"request_id":"raw","op":"schema","input":{}}"#.to_vec(),
            ]
            .concat(),
            Expect::Success,
        ),
    ];
    for (label, bytes, expect) in cases {
        sweep.check_bytes("raw bytes", label, &bytes, expect);
    }
}
