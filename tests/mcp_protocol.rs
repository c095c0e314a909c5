//! MCP protocol conformance of `memoree mcp`, driven by raw JSON-RPC lines: version
//! negotiation, pagination, cancellation of a long call, malformed input, and a stdout
//! that never carries a byte that is not an MCP message.

use std::time::Duration;

use serde_json::{Value, json};

use crate::mcp_support::{RawServer, command};
use crate::support::TempHome;
use crate::support::daemon::TestDaemon;

fn call_params(tool: &str, arguments: Value) -> Value {
    json!({"name": tool, "arguments": arguments})
}

#[test]
fn initialize_negotiates_the_protocol_version() {
    let home = TempHome::new();
    for (requested, agreed) in [
        ("2025-06-18", "2025-06-18"),
        ("2024-11-05", "2024-11-05"),
        ("2025-11-25", "2025-11-25"),
        // Unknown, or a version without an initialize handshake: the newest that has one.
        ("1999-01-01", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
    ] {
        let mut server = RawServer::spawn(command(&home, &home.project, &[], &[]));
        let reply = server.initialize(requested);
        let result = &reply["result"];
        assert_eq!(result["protocolVersion"], agreed, "{requested}: {reply}");
        assert_eq!(result["serverInfo"]["name"], "memoree");
        assert!(result["instructions"].as_str().unwrap().contains("`recall`"));
        assert!(result["instructions"].as_str().unwrap().contains("`memory_retrieve`"));
        assert!(result["capabilities"]["tools"].is_object() && result["capabilities"]["resources"].is_object());
        let listed = server.request(1, "tools/list", json!({}));
        assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 21, "{requested}");
        let (_, _, status) = server.finish();
        assert!(status.success(), "{requested}: {status}");
    }
}

#[test]
fn tools_list_is_one_page_and_an_unknown_cursor_is_invalid_params() {
    let home = TempHome::new();
    let mut server = RawServer::spawn(command(&home, &home.project, &[], &[]));
    server.initialize("2025-06-18");
    let page = server.request(1, "tools/list", json!({}));
    assert!(page["result"].get("nextCursor").is_none(), "{page}");
    let bogus = server.request(2, "tools/list", json!({"cursor": "page-2"}));
    assert_eq!(bogus["error"]["code"], -32602, "{bogus}");
    let templates = server.request(3, "resources/templates/list", json!({}));
    let uris: Vec<&str> = templates["result"]["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert!(uris.iter().any(|u| u.starts_with("memoree://artifact/")), "{templates}");
}

#[test]
fn malformed_json_rpc_gets_json_rpc_errors_and_the_session_goes_on() {
    let home = TempHome::new();
    let mut server = RawServer::spawn(command(&home, &home.project, &[], &[]));
    server.initialize("2025-06-18");

    server.send_raw("this is not json {");
    let parse = server.reply_to(&Value::Null, Duration::from_secs(10));
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert_eq!(parse["jsonrpc"], "2.0");

    server.send_raw(r#"{"jsonrpc":"2.0","id":41,"params":{}}"#);
    let invalid = server.reply_to(&json!(41), Duration::from_secs(10));
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");

    let unknown_method = server.request(42, "memoree/unknown", json!({}));
    assert_eq!(unknown_method["error"]["code"], -32601, "{unknown_method}");
    let unknown_tool = server.request(43, "tools/call", call_params("no_such_tool", json!({})));
    assert_eq!(unknown_tool["error"]["code"], -32602, "{unknown_tool}");
    let bad_uri = server.request(44, "resources/read", json!({"uri": "https://example.com/x"}));
    assert_eq!(bad_uri["error"]["code"], -32602, "{bad_uri}");

    // An over-long line is dropped with an error instead of being buffered whole.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":45,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "p".repeat(26 << 20)
    );
    server.send_raw(&huge);
    let still = server.request(46, "tools/list", json!({}));
    assert_eq!(still["result"]["tools"].as_array().unwrap().len(), 21);
    let (lines, _, status) = server.finish();
    assert!(status.success());
    let oversize = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["id"].is_null() && m["error"]["code"] == -32600)
        .count();
    assert_eq!(oversize, 1, "{lines:?}");
}

#[test]
fn a_cancelled_long_call_gets_no_response_and_the_server_keeps_serving() {
    let home = TempHome::new();
    let daemon = TestDaemon::start();
    let endpoint = daemon.endpoint_arg();
    let mut server = RawServer::spawn(command(&home, &home.project, &["--endpoint", &endpoint], &[]));
    server.initialize("2025-06-18");
    let warm = server.request(1, "tools/call", call_params("doctor", json!({})));
    assert_eq!(warm["result"]["isError"], false, "{warm}");

    // A stopped daemon makes the next call hang until it is cancelled.
    daemon.signal(rustix::process::Signal::STOP);
    server.send(&json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": call_params("recall", json!({"query": "slow"}))}));
    std::thread::sleep(Duration::from_millis(300));
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 10, "reason": "user stopped it"}}));
    let pong = server.request(11, "ping", json!({}));
    assert!(pong["result"].is_object(), "{pong}");
    let listed = server.request(12, "tools/list", json!({}));
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 21);

    daemon.signal(rustix::process::Signal::CONT);
    let after = server.request(13, "tools/call", call_params("doctor", json!({})));
    assert_eq!(after["result"]["isError"], false, "{after}");
    // The cancelled call finished in the background; its reply was dropped.
    assert_eq!(server.try_reply_to(&json!(10), Duration::from_secs(2)), None);
    let (_, _, status) = server.finish();
    assert!(status.success());
}

#[test]
fn stdout_carries_only_json_rpc_messages_even_while_logging_warnings() {
    let home = TempHome::new();
    let mut server = RawServer::spawn(command(&home, &home.project, &[], &[("RUST_LOG", "trace")]));
    server.initialize("2025-11-25");
    server.request(1, "tools/list", json!({}));
    // Starts the daemon (logged), then an error result, a JSON-RPC error (a warning), bad input.
    server.request(
        2,
        "tools/call",
        call_params(
            "artifact_put",
            json!({"kind": "note", "title": "t", "content": {"type": "text", "data": "x"}}),
        ),
    );
    server.request(
        3,
        "tools/call",
        call_params("artifact_get", json!({"artifact_id": "art_missing"})),
    );
    server.request(4, "tools/call", call_params("no_such_tool", json!({})));
    server.send_raw("{{{ not json");
    server.request(5, "resources/read", json!({"uri": "memoree://artifact/art_missing"}));
    let (lines, stderr, status) = server.finish();
    assert!(status.success(), "{status}");

    assert!(lines.len() >= 7, "{lines:?}");
    for line in &lines {
        let message: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        assert!(
            message.get("result").is_some() || message.get("error").is_some() || message.get("method").is_some(),
            "{line}"
        );
    }
    assert!(stderr.contains("WARN"), "no warning was logged: {stderr}");
    assert!(stderr.contains("TRACE") || stderr.contains("DEBUG"), "{stderr}");
}

#[test]
fn mcp_help_shows_the_host_setup_on_stdout() {
    let home = TempHome::new();
    let (code, stdout) = {
        let output = command(&home, &home.project, &["--help"], &[]).output().unwrap();
        (output.status.code(), String::from_utf8(output.stdout).unwrap())
    };
    assert_eq!(code, Some(0));
    for line in [
        "claude mcp add memoree -- memoree mcp",
        r#"{"mcpServers": {"memoree": {"command": "memoree", "args": ["mcp"]}}}"#,
        r#"{"servers": {"memoree": {"type": "stdio", "command": "memoree", "args": ["mcp"]}}}"#,
        "[mcp_servers.memoree]",
        "--retry-window <SECONDS>",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
}

#[test]
fn unreadable_citations_are_json_rpc_errors_carrying_the_v1_envelope() {
    let home = TempHome::new();
    let mut server = RawServer::spawn(command(&home, &home.project, &[], &[]));
    server.initialize("2025-06-18");
    let put = server.request(
        1,
        "tools/call",
        call_params(
            "artifact_put",
            json!({"kind": "note", "title": "t", "content": {"type": "text", "data": "twelve bytes"}}),
        ),
    );
    let result = &put["result"]["structuredContent"];
    let (art, rev) = (
        result["artifact_id"].as_str().unwrap(),
        result["revision_id"].as_str().unwrap(),
    );

    let whole = server.request(2, "resources/read", json!({"uri": format!("memoree://artifact/{art}")}));
    assert_eq!(whole["result"]["contents"][0]["text"], "twelve bytes", "{whole}");
    let span = server.request(
        3,
        "resources/read",
        json!({"uri": format!("memoree://artifact/{art}@{rev}#7-12")}),
    );
    assert_eq!(span["result"]["contents"][0]["text"], "bytes", "{span}");
    assert!(
        span["result"]["contents"][0]["mimeType"]
            .as_str()
            .unwrap()
            .starts_with("text/plain"),
        "{span}"
    );

    let missing = server.request(4, "resources/read", json!({"uri": "memoree://artifact/art_missing"}));
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    assert_eq!(missing["error"]["data"]["error"]["code"], "NOT_FOUND", "{missing}");
    let past = server.request(
        5,
        "resources/read",
        json!({"uri": format!("memoree://artifact/{art}@{rev}#7-99")}),
    );
    assert_eq!(past["error"]["code"], -32602, "{past}");
    assert_eq!(past["error"]["data"]["error"]["code"], "INVALID_REQUEST", "{past}");
    let malformed = server.request(
        6,
        "resources/read",
        json!({"uri": format!("memoree://artifact/{art}@{rev}#9-3")}),
    );
    assert_eq!(malformed["error"]["code"], -32602, "{malformed}");
}

#[test]
fn the_server_exits_promptly_when_the_host_leaves_during_a_hung_call() {
    let home = TempHome::new();
    let daemon = TestDaemon::start();
    let endpoint = daemon.endpoint_arg();
    let mut server = RawServer::spawn(command(&home, &home.project, &["--endpoint", &endpoint], &[]));
    server.initialize("2025-06-18");
    daemon.signal(rustix::process::Signal::STOP);
    server
        .send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": call_params("doctor", json!({}))}));
    std::thread::sleep(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let (_, _, status) = server.finish();
    let took = started.elapsed();
    daemon.signal(rustix::process::Signal::CONT);
    assert!(status.success(), "{status}");
    // rmcp drains in-flight responses for 5 s after EOF; the blocked call is then abandoned
    // after a 1 s grace instead of holding the process for the client's 30 s read timeout.
    assert!(took < Duration::from_secs(9), "exit took {took:?}");
}

#[test]
fn at_debug_level_the_mcp_server_and_its_daemon_log_tools_ids_and_sizes_never_content() {
    let home = TempHome::new();
    let canary = "zebra-canary-7781";
    let mut server = RawServer::spawn(command(&home, &home.project, &[], &[("RUST_LOG", "debug")]));
    server.initialize("2025-11-25");
    let put = server.request(
        1,
        "tools/call",
        call_params(
            "artifact_put",
            json!({"kind": "note", "title": format!("title {canary}"), "content": {"type": "text", "data": format!("the secret is {canary}")}}),
        ),
    );
    let put = put["result"]["structuredContent"].clone();
    let artifact_id = put["artifact_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{put}"))
        .to_owned();
    let got = server.request(
        2,
        "tools/call",
        call_params("artifact_get", json!({"artifact_id": artifact_id})),
    );
    assert!(
        got.to_string().contains(canary),
        "the tool result carries the content: {got}"
    );
    server.request(3, "tools/call", call_params("search", json!({"query": canary})));
    let (_, stderr, status) = server.finish();
    assert!(status.success(), "{status}");
    assert!(
        stderr.contains("tool call") && stderr.contains("artifact_get") && stderr.contains("result_bytes"),
        "each tool call is logged with its name and sizes: {stderr}"
    );
    assert!(
        !stderr.contains(canary),
        "content reached the MCP server's log: {stderr}"
    );
    let daemon_log = std::fs::read_to_string(home.home.join("data").join("memoreed.log")).unwrap();
    assert!(daemon_log.contains("response_bytes"), "{daemon_log}");
    assert!(
        !daemon_log.contains(canary),
        "content reached the daemon's log: {daemon_log}"
    );
}
