//! Remote access over TLS (issue 18): a real `memoree serve --listen tls://…` with
//! certificates generated per test, driven by the real CLI and the library client.
//!
//! Every refusal is checked twice: the envelope (code, reason, hint, no foreign content),
//! and afterwards, through an unrestricted local connection (the same data directory served
//! on a Unix socket), that nothing was written.

use std::path::{Path, PathBuf};

use memoree::client::tls::{ENV_CA, ENV_CERT, ENV_KEY, ENV_SERVER_NAME};
use memoree::paths::Endpoint;
use serde_json::{Value, json};

use crate::support::daemon::{TestDaemon, request};
use crate::support::pki::{ClientCert, Pki, Signer};
use crate::support::{PROJECT, TempHome, WORKSPACE, run};

mod grants;

/// The workspace only the admin credential may reach.
const FOREIGN: &str = "wsp_foreign";
/// Text stored in the foreign workspace; it must never appear in a refusal.
const SECRET: &str = "the foreign launch code is zebra-4411";

struct Remote {
    dir: tempfile::TempDir,
    pki: Pki,
    /// Listed for [`WORKSPACE`] only.
    alpha: ClientCert,
    /// Listed for every workspace (`"*"`).
    admin: ClientCert,
    /// Listed for [`WORKSPACE`], but expired.
    expired: ClientCert,
    /// Issued by the client CA, never listed.
    unlisted: ClientCert,
    /// Issued by a CA the server does not trust, yet listed.
    rogue: ClientCert,
    endpoint: Endpoint,
    daemon: Option<TestDaemon>,
    home: TempHome,
}

impl Remote {
    fn start() -> Remote {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::generate(&dir.path().join("pki"));
        let alpha = pki.client("alpha", Signer::ClientCa, false);
        let admin = pki.client("admin", Signer::ClientCa, false);
        let expired = pki.client("expired", Signer::ClientCa, true);
        let unlisted = pki.client("unlisted", Signer::ClientCa, false);
        let rogue = pki.client("rogue", Signer::Other, false);
        let config = dir.path().join("server-config.toml");
        let table = pki.remote_table(&[
            (&alpha, &[WORKSPACE]),
            (&admin, &["*"]),
            (&expired, &[WORKSPACE]),
            (&rogue, &[WORKSPACE]),
        ]);
        std::fs::write(&config, format!("schema = 1\n{table}")).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let endpoint = Endpoint::parse(&format!("tls://127.0.0.1:{port}")).unwrap();
        let connector = pki.credentials(&pki.server_ca, Some(&admin)).connector().unwrap();
        let daemon = TestDaemon::start_tls(dir.path(), &endpoint, &dir.path().join("data"), &config, connector);
        Remote {
            dir,
            pki,
            alpha,
            admin,
            expired,
            unlisted,
            rogue,
            endpoint,
            daemon: Some(daemon),
            home: TempHome::new(),
        }
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn daemon(&self) -> &TestDaemon {
        self.daemon.as_ref().unwrap()
    }

    /// `tls://localhost:PORT`: the name the server certificate carries.
    fn endpoint_by_name(&self) -> String {
        let Endpoint::Tls(addr) = &self.endpoint else {
            unreachable!()
        };
        format!("tls://localhost:{}", addr.port)
    }

    /// A request over TLS presenting `client` (trusting the right server CA).
    fn exchange(&self, client: &ClientCert, request: &Value) -> Value {
        let connector = self
            .pki
            .credentials(&self.pki.server_ca, Some(client))
            .connector()
            .unwrap();
        let response = self
            .daemon()
            .client()
            .with_tls(connector)
            .exchange_json(request)
            .unwrap_or_else(|e| panic!("{e}"));
        serde_json::to_value(response).unwrap()
    }

    /// `memoree ARGS` in the test project against the TLS endpoint, credentials in the
    /// environment (`ca`, and `client` when given).
    fn cli(&self, ca: &Path, client: Option<&ClientCert>, extra_env: &[(&str, &str)], args: &[&str]) -> (i32, Value) {
        let endpoint = self.endpoint_by_name();
        let mut command = self.home.cmd(&[&["--endpoint", endpoint.as_str()], args].concat());
        command.env(ENV_CA, ca);
        if let Some(client) = client {
            command.env(ENV_CERT, &client.cert).env(ENV_KEY, &client.key);
        }
        for (name, value) in extra_env {
            command.env(name, value);
        }
        run(command)
    }

    /// Seeds the foreign workspace through the admin credential and returns its ids and
    /// the commit sequence after it.
    fn seed_foreign(&self) -> Foreign {
        let put = self.exchange(
            &self.admin,
            &json!({
                "v": 1, "request_id": "req_seed_artifact", "op": "artifact.put", "idempotency_key": "seed-a",
                "context": {"workspace_id": FOREIGN, "project_id": "prj_foreign"},
                "input": {"kind": "note", "title": "foreign plans", "content": {"type": "text", "data": SECRET}},
            }),
        );
        assert_eq!(put["ok"], true, "{put}");
        let artifact = put["result"]["artifact_id"].as_str().unwrap().to_owned();
        let revision = put["result"]["revision_id"].as_str().unwrap().to_owned();
        let claim = self.exchange(
            &self.admin,
            &json!({
                "v": 1, "request_id": "req_seed_claim", "op": "claim.assert", "idempotency_key": "seed-c",
                "context": {"workspace_id": FOREIGN, "project_id": "prj_foreign"},
                "input": {"claim_type": "fact", "statement": SECRET,
                          "evidence": [{"artifact_id": artifact, "revision_id": revision, "start_byte": 4, "end_byte": 11}]},
            }),
        );
        assert_eq!(claim["ok"], true, "{claim}");
        Foreign {
            artifact,
            revision,
            claim: claim["result"]["claim_id"].as_str().unwrap().to_owned(),
            commit_seq: claim["commit_seq"].as_i64().unwrap(),
        }
    }

    /// Stops the TLS daemon, serves the same data on a Unix socket (unrestricted), and
    /// checks that the last commit is still `commit_seq` and that none of `needles` is
    /// stored anywhere.
    fn assert_nothing_written(mut self, commit_seq: i64, needles: &[&str]) {
        drop(self.daemon.take());
        let local = TestDaemon::start_in_with_data(self.dir.path(), &self.data_dir());
        let client = local.client();
        let doctor = client.exchange_json(&request("doctor", json!({}))).unwrap();
        assert_eq!(
            doctor.result.as_ref().unwrap()["last_commit_seq"],
            json!(commit_seq),
            "{doctor:?}"
        );
        for needle in needles {
            let search = client
                .exchange_json(&json!({
                    "v": 1, "request_id": "req_search", "op": "search",
                    "context": {"workspace_id": WORKSPACE, "project_id": PROJECT},
                    "input": {"query": needle, "horizon": "personal", "reason": "check nothing was written"},
                }))
                .unwrap();
            assert_eq!(
                search.result.as_ref().unwrap()["hits"],
                json!([]),
                "{needle}: {search:?}"
            );
        }
    }
}

struct Foreign {
    artifact: String,
    revision: String,
    claim: String,
    commit_seq: i64,
}

fn code(envelope: &Value) -> &str {
    envelope["error"]["code"].as_str().unwrap_or("<none>")
}

/// Checks a TLS refusal printed by the CLI: `TRANSPORT_ERROR`, exit 1, not retryable,
/// `details.reason`, and a hint containing `hint_part`.
fn assert_tls_refusal(outcome: &(i32, Value), reason: &str, hint_part: &str) {
    let (status, envelope) = outcome;
    assert_eq!((*status, code(envelope)), (1, "TRANSPORT_ERROR"), "{envelope}");
    assert_eq!(envelope["error"]["retryable"], false, "{envelope}");
    assert_eq!(envelope["error"]["details"]["reason"], reason, "{envelope}");
    let hint = envelope["error"]["hint"].as_str().unwrap_or_default();
    assert!(hint.contains(hint_part), "{hint_part:?} not in {envelope}");
}

/// Checks a refusal outside the credential's workspaces: `SCOPE_VIOLATION` with no byte of
/// the foreign entity.
fn assert_outside_grant(envelope: &Value) {
    assert_eq!(envelope["ok"], false, "{envelope}");
    assert_eq!(code(envelope), "SCOPE_VIOLATION", "{envelope}");
    assert_eq!(
        envelope["error"]["details"]["reason"], "outside_credential_workspaces",
        "{envelope}"
    );
    assert!(envelope.get("result").is_none_or(Value::is_null), "{envelope}");
    let text = envelope.to_string();
    for leak in [SECRET, "zebra", "foreign plans", "prj_foreign"] {
        assert!(!text.contains(leak), "{leak:?} leaked: {text}");
    }
}

#[test]
fn a_listed_client_runs_real_operations_through_the_cli_over_tls() {
    let remote = Remote::start();
    let ca = remote.pki.server_ca.clone();
    let alpha = Some(&remote.alpha);
    let source = remote.home.project.join("notes.md");
    std::fs::write(&source, "Requests are framed with a four byte length prefix.\n").unwrap();
    let (status, put) = remote.cli(
        &ca,
        alpha,
        &[],
        &["artifact", "put", source.to_str().unwrap(), "--kind", "design"],
    );
    assert_eq!(status, 0, "{put}");
    let artifact = put["result"]["artifact_id"].as_str().unwrap();
    let revision = put["result"]["revision_id"].as_str().unwrap();
    let evidence = format!("{artifact}@{revision}#0-26");
    let (status, claim) = remote.cli(
        &ca,
        alpha,
        &[],
        &[
            "claim",
            "assert",
            "fact",
            "Requests are framed with a length prefix",
            "--evidence",
            &evidence,
        ],
    );
    assert_eq!(status, 0, "{claim}");
    let claim_id = claim["result"]["claim_id"].as_str().unwrap();
    let (status, got) = remote.cli(&ca, alpha, &[], &["artifact", "get", artifact]);
    assert_eq!(status, 0, "{got}");
    assert!(got.to_string().contains("four byte length prefix"), "{got}");
    let (status, history) = remote.cli(&ca, alpha, &[], &["claim", "history", claim_id]);
    assert_eq!(
        (status, history["result"]["revisions"].as_array().map(Vec::len)),
        (0, Some(1)),
        "{history}"
    );
    let (status, recall) = remote.cli(&ca, alpha, &[], &["recall", "how", "are", "requests", "framed"]);
    assert_eq!(status, 0, "{recall}");
    assert!(recall.to_string().contains(claim_id), "{recall}");

    // The same credentials from the [tls] table of config.toml instead of the environment.
    std::fs::write(
        remote.home.home.join("config.toml"),
        format!(
            "schema = 1\n[tls]\nca = {:?}\ncert = {:?}\nkey = {:?}\n",
            ca, remote.alpha.cert, remote.alpha.key
        ),
    )
    .unwrap();
    let endpoint = remote.endpoint_by_name();
    let (status, search) = run(remote
        .home
        .cmd(&["--endpoint", &endpoint, "search", "length", "prefix"]));
    assert_eq!(status, 0, "{search}");
    assert!(search.to_string().contains(artifact), "{search}");
    // MEMOREE_ENDPOINT works like --endpoint, and a tls:// endpoint never autostarts.
    let mut command = remote.home.cmd(&["capabilities"]);
    command.env("MEMOREE_ENDPOINT", &endpoint);
    let (status, capabilities) = run(command);
    assert_eq!(status, 0, "{capabilities}");
    assert!(
        !remote.home.socket().exists(),
        "a tls:// endpoint never autostarts a daemon"
    );
}

#[test]
fn a_server_from_another_ca_or_under_another_name_is_refused_before_any_request() {
    let remote = Remote::start();
    let baseline = remote.seed_foreign().commit_seq;
    let alpha = Some(&remote.alpha);
    let other_ca = remote.pki.other_ca.clone();
    let outcome = remote.cli(&other_ca, alpha, &[], &["artifact", "put", "-"]);
    assert_tls_refusal(&outcome, "tls_server_untrusted", ENV_CA);
    // `daemon status` reports the refusal, not a stopped daemon.
    let outcome = remote.cli(&other_ca, alpha, &[], &["daemon", "status"]);
    assert_tls_refusal(&outcome, "tls_server_untrusted", ENV_CA);
    assert!(
        outcome.1["error"]["message"].as_str().unwrap().contains("other-ca.pem"),
        "{}",
        outcome.1
    );
    let ca = remote.pki.server_ca.clone();
    let outcome = remote.cli(
        &ca,
        alpha,
        &[(ENV_SERVER_NAME, "memoree.example")],
        &["artifact", "put", "-"],
    );
    assert_tls_refusal(&outcome, "tls_server_name_mismatch", ENV_SERVER_NAME);
    // No CA at all is a local configuration error naming the setting.
    let endpoint = remote.endpoint_by_name();
    let (status, envelope) = run(remote.home.cmd(&["--endpoint", &endpoint, "capabilities"]));
    assert_eq!((status, code(&envelope)), (2, "CONFIG_ERROR"), "{envelope}");
    assert!(
        envelope["error"]["message"].as_str().unwrap().contains(ENV_CA),
        "{envelope}"
    );
    remote.assert_nothing_written(baseline, &[]);
}

#[test]
fn missing_expired_untrusted_or_unlisted_client_certificates_are_refused_and_write_nothing() {
    let remote = Remote::start();
    let baseline = remote.seed_foreign().commit_seq;
    let ca = remote.pki.server_ca.clone();
    let note = "a note that must never be stored";
    let put = |client: Option<&ClientCert>| {
        let mut command = remote
            .home
            .cmd(&["--endpoint", &remote.endpoint_by_name(), "artifact", "put", "-"]);
        command.env(ENV_CA, &ca).write_stdin(note);
        if let Some(client) = client {
            command.env(ENV_CERT, &client.cert).env(ENV_KEY, &client.key);
        }
        run(command)
    };
    assert_tls_refusal(&put(None), "tls_client_certificate_missing", ENV_CERT);
    let outcome = put(Some(&remote.expired));
    assert_tls_refusal(&outcome, "tls_client_certificate_expired", "expired");
    assert!(
        outcome.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&remote.expired.fingerprint),
        "{}",
        outcome.1
    );
    assert_tls_refusal(
        &put(Some(&remote.rogue)),
        "tls_client_certificate_untrusted",
        "client_ca",
    );
    let outcome = put(Some(&remote.unlisted));
    assert_tls_refusal(&outcome, "tls_client_certificate_not_listed", "[[remote.clients]]");
    assert!(
        outcome.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&remote.unlisted.fingerprint),
        "{}",
        outcome.1
    );
    // The daemon still serves a listed client after the refusals.
    let ok = remote.exchange(&remote.alpha, &request("capabilities", json!({})));
    assert_eq!(ok["ok"], true, "{ok}");
    remote.assert_nothing_written(baseline, &[note]);
}

#[test]
fn serve_on_tls_without_a_remote_table_is_a_config_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "schema = 1\n").unwrap();
    let home = TempHome::new();
    let mut command = home.cmd(&["serve", "--listen", "tls://127.0.0.1:0", "--data-dir"]);
    command.arg(dir.path().join("data")).env("MEMOREE_CONFIG", &config);
    let (status, envelope) = run(command);
    assert_eq!((status, code(&envelope)), (2, "CONFIG_ERROR"), "{envelope}");
    assert!(
        envelope["error"]["message"].as_str().unwrap().contains("[remote]"),
        "{envelope}"
    );
    assert!(
        !dir.path().join("data").exists(),
        "nothing is created before the credentials load"
    );
}

/// A daemon in this process on `tls://0.0.0.0:0` (a non-loopback listener needs no
/// dangerous flag once it is TLS) with a short idle timeout, and a client for it over
/// loopback presenting `alpha`.
fn in_process_tls(
    dir: &Path,
    timeouts: memoree::daemon::ServerTimeouts,
) -> (memoree::daemon::DaemonHandle, memoree::client::socket::SocketClient) {
    use memoree::daemon::DaemonConfig;
    use memoree::daemon::remote::{RemoteClient, RemoteConfig};

    let pki = Pki::generate(&dir.join("pki"));
    let alpha = pki.client("alpha", Signer::ClientCa, false);
    let mut config = DaemonConfig::new(Endpoint::parse("tls://0.0.0.0:0").unwrap(), dir.join("data"));
    config.remote = Some(RemoteConfig {
        cert: pki.server_cert.clone(),
        key: pki.server_key.clone(),
        client_ca: pki.client_ca.clone(),
        clients: vec![RemoteClient {
            name: "alpha".to_owned(),
            fingerprint: memoree::tls::Fingerprint::parse(&alpha.fingerprint).unwrap(),
            workspaces: Some([WORKSPACE.to_owned()].into()),
        }],
    });
    config.timeouts = timeouts;
    let daemon = memoree::daemon::start(config).unwrap();
    let Endpoint::Tls(bound) = daemon.endpoint() else {
        unreachable!()
    };
    assert_eq!(bound.host, "0.0.0.0");
    let endpoint = Endpoint::parse(&format!("tls://127.0.0.1:{}", bound.port)).unwrap();
    let connector = pki.credentials(&pki.server_ca, Some(&alpha)).connector().unwrap();
    let client = memoree::client::socket::SocketClient::new(endpoint).with_tls(connector);
    (daemon, client)
}

#[test]
fn one_tls_connection_carries_many_requests_and_a_kept_alive_client_survives_the_idle_close() {
    let dir = tempfile::tempdir().unwrap();
    let idle = std::time::Duration::from_millis(200);
    let timeouts = memoree::daemon::ServerTimeouts {
        idle,
        ..Default::default()
    };
    let (daemon, client) = in_process_tls(dir.path(), timeouts);
    let context = json!({"workspace_id": WORKSPACE, "project_id": PROJECT});
    let put = |key: &str| {
        json!({"v": 1, "request_id": format!("req_{key}"), "op": "artifact.put", "idempotency_key": key, "context": context,
               "input": {"kind": "note", "title": key, "content": {"type": "text", "data": format!("body of {key}")}}})
    };
    let mut session = client.connect().unwrap();
    for key in ["s1", "s2", "s3"] {
        let response = session.exchange_json(&put(key)).unwrap();
        assert!(response.ok, "{response:?}");
    }
    drop(session);
    let kept = client.clone().keep_alive();
    assert!(kept.exchange_json(&put("k1")).unwrap().ok);
    // The daemon closes the idle connection with a close_notify; the next request is sent
    // again on a new connection, once, and applied once.
    std::thread::sleep(idle * 3);
    let again = kept.exchange_json(&put("k2")).unwrap();
    assert!(again.ok, "{again:?}");
    assert_eq!(again.commit_seq, Some(5));
    daemon.shutdown().unwrap();
}

#[test]
fn sixty_four_idle_unauthenticated_sockets_neither_lock_out_an_authenticated_client_nor_outlive_the_handshake_timeout()
{
    use std::io::Read;
    use std::net::TcpStream;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let handshake = Duration::from_secs(2);
    let timeouts = memoree::daemon::ServerTimeouts {
        handshake,
        ..Default::default()
    };
    let (daemon, client) = in_process_tls(dir.path(), timeouts);
    let Endpoint::Tls(addr) = client.endpoint() else {
        unreachable!()
    };
    let port = addr.port;
    // Sockets that connect and never say a word, from the same address as the client.
    let idle: Vec<TcpStream> = (0..64)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let capabilities = json!({"v": 1, "request_id": "req_caps", "op": "capabilities", "input": {}});
    let started = Instant::now();
    let response = client.exchange_json(&capabilities).unwrap();
    let took = started.elapsed();
    assert!(response.ok, "{response:?}");
    assert!(took < Duration::from_secs(1), "the authenticated request took {took:?}");
    // And none of the idle sockets lives past the handshake timeout (plus slack).
    let deadline = Instant::now() + handshake + Duration::from_secs(3);
    for mut socket in idle {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        socket.set_read_timeout(Some(left)).unwrap();
        let mut byte = [0u8; 1];
        // A signal meant for another test of this binary may interrupt the read: read again.
        let read = loop {
            match socket.read(&mut byte) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                read => break read,
            }
        };
        match read {
            Ok(0) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            other => panic!("an idle unauthenticated socket was still open after {handshake:?}: {other:?}"),
        }
    }
    daemon.shutdown().unwrap();
}

impl Remote {
    /// Writes the test home's `config.toml` with a `[tls]` table presenting `client`.
    fn client_config(&self, client: &ClientCert) {
        std::fs::write(
            self.home.home.join("config.toml"),
            format!(
                "schema = 1\n[tls]\nca = {:?}\ncert = {:?}\nkey = {:?}\n",
                self.pki.server_ca, client.cert, client.key
            ),
        )
        .unwrap();
    }
}

#[tokio::test]
async fn memoree_mcp_reaches_a_tls_daemon_with_the_configured_credentials_and_its_limits() {
    use crate::mcp_support::{TestClient, connect_with, failed, ok, put_args};

    let remote = Remote::start();
    let foreign = remote.seed_foreign();
    remote.client_config(&remote.alpha);
    let endpoint = remote.endpoint_by_name();
    let mcp = connect_with(
        &remote.home,
        &remote.home.project,
        &["--endpoint", &endpoint],
        &[],
        TestClient::default(),
    )
    .await;
    let put = ok(
        &mcp,
        "artifact_put",
        put_args("over tls", "the mcp server wrote this over tls"),
    )
    .await;
    assert!(put.to_string().contains("art_"), "{put}");
    let refused = failed(&mcp, "artifact_get", json!({"artifact_id": foreign.artifact})).await;
    assert_outside_grant(&refused);
    mcp.cancel().await.unwrap();
    assert!(
        !remote.home.socket().exists(),
        "a tls:// endpoint never autostarts a daemon"
    );
}

/// `GET path` on the inspector at `addr` with its access cookie: the status and the body.
fn http_get(addr: &str, path: &str, cookie: &str) -> (u16, String) {
    use std::io::{Read, Write};

    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let status = reply.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    (status, reply)
}

#[test]
fn memoree_inspect_serves_a_tls_daemon_within_the_credential_workspaces() {
    let remote = Remote::start();
    let foreign = remote.seed_foreign();
    let own = remote.exchange(
        &remote.alpha,
        &json!({
            "v": 1, "request_id": "req_own", "op": "artifact.put", "idempotency_key": "own-1",
            "context": {"workspace_id": WORKSPACE, "project_id": PROJECT},
            "input": {"kind": "note", "title": "remote inspector note", "content": {"type": "text", "data": "seen through tls"}},
        }),
    );
    assert_eq!(own["ok"], true, "{own}");
    remote.client_config(&remote.alpha);
    let mut command = std::process::Command::new(crate::support::BIN);
    for name in crate::support::SCRUBBED_ENV {
        command.env_remove(name);
    }
    let mut child = command
        .args(["--endpoint", &remote.endpoint_by_name(), "inspect"])
        .env("MEMOREE_HOME", &remote.home.home)
        .current_dir(&remote.home.project)
        .env(
            "MEMOREE_CONTEXT",
            json!({"workspace_id": WORKSPACE, "project_id": PROJECT}).to_string(),
        )
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    let envelope: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("no start envelope ({e}): {line:?}"));
    assert_eq!(envelope["ok"], true, "{envelope}");
    let listen = envelope["result"]["listen"].as_str().unwrap().to_owned();
    let url = envelope["result"]["url"].as_str().unwrap();
    let token = url.rsplit_once("token=").unwrap().1;
    let (name, value) = memoree::inspect::guard::session_cookie(token);
    let cookie = format!("{name}={value}");
    let (status, page) = http_get(&listen, "/artifacts", &cookie);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("remote inspector note"), "{page}");
    let (_, page) = http_get(&listen, &format!("/artifacts/{}", foreign.artifact), &cookie);
    assert!(!page.contains("zebra") && !page.contains("foreign plans"), "{page}");
    let _ = child.kill();
    let _ = child.wait();
}

/// The isolation sweep of issue 28 (`memoree::testkit::isolation`) over `tls://`: an admin
/// (`"*"`) plants both workspaces, and a credential for `wsp_a` runs every operation of the
/// catalogue with the canary words, foreign ids, pins and spans as inputs; no response
/// carries a byte of `wsp_b` it was not sent.
#[test]
fn a_credential_for_one_workspace_gets_no_byte_of_another_over_tls_in_any_operation() {
    use memoree::daemon::DaemonConfig;
    use memoree::daemon::remote::{RemoteClient, RemoteConfig};
    use memoree::testkit::isolation;

    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::generate(&dir.path().join("pki"));
    let alice = pki.client("alice", Signer::ClientCa, false);
    let admin = pki.client("admin", Signer::ClientCa, false);
    let listed = |name: &str, cert: &ClientCert, workspaces: Option<&str>| RemoteClient {
        name: name.to_owned(),
        fingerprint: memoree::tls::Fingerprint::parse(&cert.fingerprint).unwrap(),
        workspaces: workspaces.map(|w| [w.to_owned()].into()),
    };
    let mut config = DaemonConfig::new(Endpoint::parse("tls://127.0.0.1:0").unwrap(), dir.path().join("data"));
    config.remote = Some(RemoteConfig {
        cert: pki.server_cert.clone(),
        key: pki.server_key.clone(),
        client_ca: pki.client_ca.clone(),
        clients: vec![
            listed("alice", &alice, Some(isolation::OWN_WORKSPACE)),
            listed("admin", &admin, None),
        ],
    });
    let daemon = memoree::daemon::start(config).unwrap();
    let endpoint = daemon.endpoint().clone();
    let client = |cert: &ClientCert| {
        let connector = pki.credentials(&pki.server_ca, Some(cert)).connector().unwrap();
        memoree::client::socket::SocketClient::new(endpoint.clone()).with_tls(connector)
    };
    let (as_admin, as_alice) = (client(&admin), client(&alice));
    let exchange = |client: &memoree::client::socket::SocketClient, request: &Value| {
        serde_json::to_value(client.exchange_json(request).unwrap_or_else(|e| panic!("{e}"))).unwrap()
    };
    let planted = isolation::plant(&|request: &Value| exchange(&as_admin, request));
    let ran = isolation::sweep(&|request: &Value| exchange(&as_alice, request), &planted);
    assert!(ran > 100, "{ran}");

    // The inspector reading through alice's credential: every page, and Ask with the queries.
    let memory = memoree::inspect::memory::Memory::new(
        std::sync::Arc::new(as_alice.clone()),
        memoree::protocol::AmbientContext::project(isolation::OWN_WORKSPACE, "prj_a"),
        memoree::protocol::ContextSource::Explicit,
    );
    let inspector = memoree::inspect::spawn("127.0.0.1:0".parse().unwrap(), memory).unwrap();
    let addr = inspector.ready.addr.to_string();
    let entry = inspector.ready.url.split_once(&addr).unwrap().1.to_owned();
    let (_, exchanged) = http_get(&addr, &entry, "");
    let cookie = exchanged
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("set-cookie")
                .then(|| value.trim().split(';').next().unwrap().to_owned())
        })
        .unwrap_or_else(|| panic!("no cookie: {exchanged}"));
    let mut paths = vec![
        "/".to_owned(),
        "/claims".to_owned(),
        format!("/claims/{}", planted.citing_claim),
        format!("/claims/{}", planted.foreign_claim),
        "/artifacts".to_owned(),
        format!("/artifacts/{}", planted.cited_artifact),
        format!("/artifacts/{}", planted.purged_artifact),
        format!("/artifacts/{}/diff", planted.cited_artifact),
        "/conflicts".to_owned(),
        "/relations".to_owned(),
    ];
    paths.extend(
        isolation::queries(&planted)
            .iter()
            .map(|q| format!("/ask?q={}", q.replace(' ', "+"))),
    );
    for path in paths {
        let (status, page) = http_get(&addr, &path, &cookie);
        assert_ne!(status, 0, "{path}");
        isolation::check_text(&path, &page, &planted);
        if path == "/artifacts" {
            assert!(
                page.contains("Billing exporter runbook"),
                "the pages are served: {page}"
            );
        }
        if path == format!("/claims/{}", planted.citing_claim) {
            assert!(page.contains("credentials are in the vault"), "{page}");
        }
    }
    drop(inspector);
    daemon.shutdown().unwrap();
}
