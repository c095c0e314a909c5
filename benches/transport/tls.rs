//! Section `tls` (issue 18): what TLS costs over loopback TCP, both served by a daemon in
//! this process on the same kind of store: the full handshake (TCP connect + TLS 1.3 with a
//! client certificate, verified against the client CA and the `[[remote.clients]]` list; a
//! fresh client configuration each time, as every CLI process has), a small read on a reused
//! connection, and a small read on a connection per request by a long-running client (whose
//! shared configuration resumes the TLS session from the tickets its earlier reads received). No target is
//! set by the issue; the numbers are reported against the loopback-TCP floor.

use std::time::Duration;

use criterion::Criterion;
use memoree::client::socket::SocketClient;
use memoree::daemon::remote::{RemoteClient, RemoteConfig};
use memoree::daemon::{self, DaemonConfig, DaemonHandle};
use memoree::paths::Endpoint;
use memoree::tls::Fingerprint;

use super::pki::{Pki, Signer};
use super::{full_run, get_request, median_per_call, note, put_request, targets};

/// A daemon on `listen` with its data on the target disk.
fn start(dir: &std::path::Path, listen: &str, remote: Option<RemoteConfig>) -> DaemonHandle {
    let mut config = DaemonConfig::new(Endpoint::parse(listen).unwrap(), dir.join("data"));
    config.remote = remote;
    daemon::start(config).unwrap()
}

pub fn bench_tls(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let pki = Pki::generate(&dir.path().join("pki"));
    let client_cert = pki.client("bench", Signer::ClientCa, false);
    let remote = RemoteConfig {
        cert: pki.server_cert.clone(),
        key: pki.server_key.clone(),
        client_ca: pki.client_ca.clone(),
        clients: vec![RemoteClient {
            name: "bench".to_owned(),
            fingerprint: Fingerprint::parse(&client_cert.fingerprint).unwrap(),
            workspaces: None,
        }],
    };
    let tcp_daemon = start(&dir.path().join("tcp"), "tcp://127.0.0.1:0", None);
    let tls_daemon = start(&dir.path().join("tls"), "tls://127.0.0.1:0", Some(remote));
    let credentials = pki.credentials(&pki.server_ca, Some(&client_cert));
    let connector = credentials.connector().unwrap();
    let tls_endpoint = tls_daemon.endpoint().clone();
    // A new client configuration (PEM files loaded, empty session cache) per connection.
    let fresh = || SocketClient::new(tls_endpoint.clone()).with_tls(credentials.connector().unwrap());
    let tcp = SocketClient::new(tcp_daemon.endpoint().clone());
    let tls = SocketClient::new(tls_daemon.endpoint().clone()).with_tls(connector);
    let put = put_request(200);
    let tcp_get = get_request(
        tcp.exchange_json(&put).unwrap().result.unwrap()["artifact_id"]
            .as_str()
            .unwrap(),
    );
    let tls_get = get_request(
        tls.exchange_json(&put).unwrap().result.unwrap()["artifact_id"]
            .as_str()
            .unwrap(),
    );
    let mut group = c.benchmark_group("round_trip_tls");
    group.bench_function("tcp_connect", |b| b.iter(|| drop(tcp.connect().unwrap())));
    group.bench_function("tls_connect_full_handshake", |b| {
        b.iter(|| drop(fresh().connect().unwrap()))
    });
    // Sessions open right before they are measured (the daemon closes a connection idle for
    // 5 s); after their first exchange a session reconnects transparently if that happens.
    let mut tcp_session = tcp.session();
    let mut tls_session = tls.session();
    assert!(tcp_session.exchange_json(&tcp_get).unwrap().ok);
    assert!(tls_session.exchange_json(&tls_get).unwrap().ok);
    group.bench_function("tcp_session_small_read", |b| {
        b.iter(|| tcp_session.exchange_json(&tcp_get).unwrap())
    });
    group.bench_function("tls_session_small_read", |b| {
        b.iter(|| tls_session.exchange_json(&tls_get).unwrap())
    });
    group.bench_function("tls_connection_per_request_small_read", |b| {
        b.iter(|| tls.exchange_json(&tls_get).unwrap())
    });
    group.finish();

    let (batches, per_batch) = if full_run() { (31, 50) } else { (3, 3) };
    let connect_tcp = median_per_call(batches, per_batch, || drop(tcp.connect().unwrap()));
    let connect_full = median_per_call(batches, per_batch, || drop(fresh().connect().unwrap()));
    let read_tcp = median_per_call(batches, per_batch, || {
        tcp_session.exchange_json(&tcp_get).unwrap();
    });
    let read_tls = median_per_call(batches, per_batch, || {
        tls_session.exchange_json(&tls_get).unwrap();
    });
    let one_shot_tcp = median_per_call(batches, per_batch, || {
        tcp.exchange_json(&tcp_get).unwrap();
    });
    let one_shot_tls = median_per_call(batches, per_batch, || {
        tls.exchange_json(&tls_get).unwrap();
    });
    let extra = |tls: Duration, tcp: Duration| tls.saturating_sub(tcp);
    note(format!(
        "TLS over loopback: full handshake {connect_full:?} (TCP connect {connect_tcp:?}); small read on a reused connection {read_tls:?} (TCP {read_tcp:?}, +{:?}); connection per request {one_shot_tls:?} (TCP {one_shot_tcp:?})",
        extra(read_tls, read_tcp)
    ));
    let rows = [
        (
            "TLS 1.3 full handshake with a client certificate (TCP connect and PEM loading included), median",
            connect_full,
            format!("loopback TCP connect {connect_tcp:.1?}"),
        ),
        (
            "small read (artifact.get, 200 B) on a reused TLS connection, median",
            read_tls,
            format!(
                "loopback TCP {read_tcp:.1?} (TLS adds {:.1?})",
                extra(read_tls, read_tcp)
            ),
        ),
        (
            "small read (artifact.get, 200 B), TLS connection per request (session resumed), median",
            one_shot_tls,
            format!("loopback TCP {one_shot_tcp:.1?}"),
        ),
    ];
    for (metric, measured, floor) in rows {
        targets::target(
            18,
            metric,
            &format!("{measured:.1?}"),
            &floor,
            "reported (no target)",
            None,
        );
    }
    drop((tcp_session, tls_session));
    tls_daemon.shutdown().unwrap();
    tcp_daemon.shutdown().unwrap();
}
