//! Full disk: the data directory fills up under a running daemon. A mutation that needs
//! space fails with `INTERNAL_ERROR`, `retryable: true`, `details.reason: "storage_full"`;
//! nothing acknowledged is lost, nothing of the failed request is stored, the daemon keeps
//! serving reads (and replays), `verify` stays clean, and once space is freed the same
//! request with the same key succeeds.
//!
//! Two ways to fill the disk:
//! - a real, size-limited tmpfs holding the data directory, filled with a filler file
//!   (needs root and the right to mount; the test says so and skips otherwise);
//! - the store's injected disk-full flag (`MEMOREE_FAULT_DISK_FULL_FLAG`, see
//!   `memoree::fault`), which always runs.

use std::ffi::CString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use memoree::fault::DISK_FULL_FLAG_ENV;
use memoree::paths::Endpoint;
use memoree::protocol::{ErrorCode, Response};
use serde_json::{Value, json};

use crate::support::daemon::TestDaemon;
use crate::support::torture::{
    Counts, Db, Op, Rng, call, check_replay, mutation_request, read_request, text, verify_issues,
};

/// How the test fills and frees the data directory's filesystem.
trait Disk {
    fn fill(&mut self);
    fn free(&mut self);
}

/// The injected fault: the flag file's existence is the "full disk".
struct Flag(PathBuf);

impl Disk for Flag {
    fn fill(&mut self) {
        std::fs::write(&self.0, b"").unwrap();
    }

    fn free(&mut self) {
        std::fs::remove_file(&self.0).unwrap();
    }
}

/// A tmpfs mounted for the test and unmounted when dropped.
struct Tmpfs {
    root: PathBuf,
    filler: PathBuf,
}

impl Tmpfs {
    fn mount(root: &Path, size: u64) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(root).unwrap();
        let options = CString::new(format!("size={size},mode=0700")).unwrap();
        let flags = rustix::mount::MountFlags::NOSUID | rustix::mount::MountFlags::NODEV;
        rustix::mount::mount("memoree-test", root, "tmpfs", flags, options.as_c_str())
            .map_err(|e| std::io::Error::from(e).to_string())?;
        Ok(Tmpfs {
            root: root.to_path_buf(),
            filler: root.join("filler"),
        })
    }
}

impl Disk for Tmpfs {
    /// Writes the filler until the filesystem refuses even a single page.
    fn fill(&mut self) {
        let mut file = std::fs::File::create(&self.filler).unwrap();
        for chunk in [1 << 20, 64 << 10, 4 << 10, 512] {
            let bytes = vec![0x55u8; chunk];
            loop {
                match file.write_all(&bytes) {
                    Ok(()) => {}
                    Err(e) if memoree::blob::is_storage_full(&e) => break,
                    Err(e) => panic!("filling the tmpfs: {e}"),
                }
            }
        }
        let _ = file.sync_all();
    }

    fn free(&mut self) {
        std::fs::remove_file(&self.filler).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // A lazy unmount also succeeds while busy.
        let _ = rustix::mount::unmount(&self.root, rustix::mount::UnmountFlags::DETACH);
    }
}

fn put(key: &str, content: &str) -> Value {
    mutation_request(
        "artifact.put",
        key,
        json!({"kind": "note", "title": key, "media_type": "text/plain", "content": {"type": "text", "data": content}}),
    )
}

fn assert_storage_full(response: &Response, what: &str) {
    let error = response
        .error
        .as_ref()
        .unwrap_or_else(|| panic!("{what} succeeded on a full disk: {response:?}"));
    assert_eq!(error.code, ErrorCode::InternalError, "{what}: {error:?}");
    assert!(error.retryable, "{what}: {error:?}");
    assert_eq!(error.details["reason"], "storage_full", "{what}: {error:?}");
    assert!(
        error.hint.as_deref().unwrap_or("").contains("free space"),
        "{what}: {error:?}"
    );
}

/// An acknowledged write, its operation and its original envelope.
struct Written {
    op: Op,
    request: Value,
    response: Response,
    content: Option<String>,
}

struct Scenario<'a> {
    daemon: &'a mut TestDaemon,
    acked: Vec<Written>,
    rng: Rng,
}

impl Scenario<'_> {
    fn write(&mut self, op: Op, request: Value, content: Option<String>) -> Response {
        let response = call(&mut self.daemon.client().session(), &request);
        if response.ok {
            self.acked.push(Written {
                op,
                request,
                response: response.clone(),
                content,
            });
        }
        response
    }

    fn put(&mut self, key: &str, content: String) -> Response {
        self.write(Op::ArtifactPut, put(key, &content), Some(content))
    }

    /// Everything acknowledged is stored once, reads back and replays as acknowledged; the
    /// store holds nothing else; `verify` is clean.
    fn check(&mut self) {
        let mut session = self.daemon.client().session();
        for written in &self.acked {
            let key = written.request["idempotency_key"].as_str().unwrap();
            let result = written.response.result.as_ref().unwrap();
            if let Some(content) = &written.content {
                let got = call(
                    &mut session,
                    &read_request(
                        "artifact.get",
                        json!({"artifact_id": result["artifact_id"], "revision_id": result["revision_id"]}),
                    ),
                );
                assert!(got.ok, "{key}: {got:?}");
                assert_eq!(got.result.unwrap()["content"]["data"], content.as_str(), "{key}");
            }
            let replay = call(&mut session, &written.request);
            check_replay(&written.response, &replay, key).unwrap();
        }
        let mut ops = std::collections::HashMap::new();
        for written in &self.acked {
            *ops.entry(written.op).or_insert(0) += 1;
        }
        let db = Db::open(self.daemon.data_dir());
        assert_eq!(
            db.counts(),
            Counts::expected(&ops),
            "the store holds exactly what was acknowledged"
        );
        drop(db);
        let search = call(&mut session, &read_request("search", json!({"query": "ledger"})));
        assert!(search.ok, "search: {search:?}");
        assert!(!search.result.unwrap()["hits"].as_array().unwrap().is_empty());
        assert_eq!(verify_issues(&mut session), Vec::<String>::new());
    }

    fn run(&mut self, disk: &mut dyn Disk) {
        // Acknowledged before the disk fills: inline and external content, a claim, a relation.
        let first = text(&mut self.rng, "first ledger", 2000, 2000);
        let a = self.put("before-inline", first);
        assert!(a.ok, "{a:?}");
        let external = text(&mut self.rng, "external ledger", 40_000, 40_000);
        assert!(self.put("before-external", external).ok);
        let artifact = a.result.unwrap();
        let claim = self.write(
            Op::ClaimAssert,
            mutation_request(
                "claim.assert",
                "before-claim",
                json!({"claim_type": "fact", "statement": "the ledger survives a full disk",
                       "evidence": [{"artifact_id": artifact["artifact_id"], "revision_id": artifact["revision_id"],
                                     "start_byte": 0, "end_byte": 5}]}),
            ),
            None,
        );
        assert!(claim.ok, "{claim:?}");
        let relation = self.write(
            Op::RelationPut,
            mutation_request(
                "relation.put",
                "before-relation",
                json!({"source_type": "claim", "source_id": claim.result.unwrap()["claim_id"], "relation": "supports",
                       "target_type": "artifact", "target_id": artifact["artifact_id"]}),
            ),
            None,
        );
        assert!(relation.ok, "{relation:?}");
        self.check();

        disk.fill();
        let mut session = self.daemon.client().session();

        // New CAS content cannot be written.
        let big = text(&mut self.rng, "refused ledger", 64_000, 64_000);
        let refused_external = put("full-external", &big);
        assert_storage_full(&call(&mut session, &refused_external), "an external put");

        // Inline writes go on until the database cannot grow; successes stay acknowledged.
        let mut refused_inline = None;
        for i in 0..400 {
            let content = text(&mut self.rng, &format!("full {i} ledger"), 12_000, 12_000);
            let key = format!("full-inline-{i}");
            let response = self.put(&key, content.clone());
            if !response.ok {
                assert_storage_full(&response, &key);
                refused_inline = Some(put(&key, &content));
                break;
            }
        }
        let refused_inline = refused_inline.expect("the database never filled up");

        // Several clients at once on a full disk, mixing new writes (which need space) with
        // replays of acknowledged ones (which do not) so they share group commits: each new
        // write is acknowledged or refused as storage_full, each replay returns the original
        // acknowledgement or, when a neighbour's full disk rolled the shared group back,
        // storage_full too; nothing else.
        let originals: Vec<(Value, Response)> = self
            .acked
            .iter()
            .map(|w| (w.request.clone(), w.response.clone()))
            .collect();
        let concurrent: Vec<(Value, Response)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    let client = self.daemon.client();
                    let mut rng = self.rng.fork();
                    let originals = &originals;
                    scope.spawn(move || {
                        let mut out = Vec::new();
                        for i in 0..6 {
                            let (original, acknowledged) = &originals[rng.below(originals.len())];
                            let replay = client.exchange_json(original).unwrap();
                            if replay.ok {
                                check_replay(acknowledged, &replay, "a replay on a full disk").unwrap();
                            } else {
                                assert_storage_full(&replay, "a replay on a full disk");
                            }
                            let request = put(
                                &format!("full-concurrent-{t}-{i}"),
                                &text(&mut rng, "concurrent ledger", 9_000, 15_000),
                            );
                            let response = client.exchange_json(&request).unwrap();
                            out.push((request, response));
                        }
                        out
                    })
                })
                .collect();
            handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let mut refused = vec![refused_external, refused_inline];
        for (request, response) in concurrent {
            let key = request["idempotency_key"].as_str().unwrap().to_owned();
            if response.ok {
                let content = request["input"]["content"]["data"].as_str().map(str::to_owned);
                self.acked.push(Written {
                    op: Op::ArtifactPut,
                    request,
                    response,
                    content,
                });
            } else {
                assert_storage_full(&response, &key);
                refused.push(request);
            }
        }

        // Still full: the daemon is alive and serves reads, replays and verify.
        assert!(
            self.daemon.is_running(),
            "the daemon died on a full disk\n{}",
            self.daemon.logs()
        );
        self.check();
        let doctor = call(&mut session, &read_request("doctor", json!({})));
        assert!(doctor.ok, "{doctor:?}");

        // Space is back: the very same requests, same keys, now apply once.
        disk.free();
        for request in refused {
            let response = call(&mut session, &request);
            let key = request["idempotency_key"].as_str().unwrap().to_owned();
            assert!(response.ok, "{key} after freeing space: {response:?}");
            assert_eq!(response.result.as_ref().unwrap()["created"], true, "{key}");
            let content = request["input"]["content"]["data"].as_str().map(str::to_owned);
            self.acked.push(Written {
                op: Op::ArtifactPut,
                request,
                response,
                content,
            });
        }
        self.check();

        // And all of it survives a restart.
        self.daemon.signal(rustix::process::Signal::TERM);
        assert!(self.daemon.wait_exit(Duration::from_secs(20)).success());
    }
}

fn scenario(daemon: &mut TestDaemon, disk: &mut dyn Disk, seed: u64) -> Vec<Written> {
    let mut scenario = Scenario {
        daemon,
        acked: Vec::new(),
        rng: Rng::new(seed),
    };
    scenario.run(disk);
    scenario.acked
}

/// Restarts on the same directories and checks the acknowledged writes again.
fn after_restart(dir: &Path, endpoint: &Endpoint, data_dir: &Path, acked: Vec<Written>, seed: u64) {
    let mut daemon = TestDaemon::start_at_with_env(dir, endpoint, data_dir, &[]);
    let mut scenario = Scenario {
        daemon: &mut daemon,
        acked,
        rng: Rng::new(seed),
    };
    scenario.check();
}

#[test]
fn an_injected_full_disk_fails_writes_clearly_keeps_reads_and_recovers_with_the_same_keys() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = Endpoint::Unix(dir.path().join("s.sock"));
    let data_dir = dir.path().join("data");
    let flag = dir.path().join("disk-full");
    let mut daemon = TestDaemon::start_at_with_env(
        dir.path(),
        &endpoint,
        &data_dir,
        &[(DISK_FULL_FLAG_ENV, flag.as_path())],
    );
    let acked = scenario(&mut daemon, &mut Flag(flag), 11);
    after_restart(dir.path(), &endpoint, &data_dir, acked, 12);
}

#[test]
fn a_full_tmpfs_data_dir_fails_writes_clearly_keeps_reads_and_recovers_with_the_same_keys() {
    let dir = tempfile::tempdir().unwrap();
    let mut tmpfs = match Tmpfs::mount(&dir.path().join("mnt"), 16 << 20) {
        Ok(tmpfs) => tmpfs,
        Err(error) => {
            memoree::testkit::parts::notice(
                &memoree::testkit::parts::current_test(),
                &format!("cannot mount a tmpfs here ({error}); the real full-disk test needs root"),
            );
            return;
        }
    };
    let endpoint = Endpoint::Unix(dir.path().join("s.sock"));
    let data_dir = tmpfs.root.join("data");
    let mut daemon = TestDaemon::start_at_with_env(dir.path(), &endpoint, &data_dir, &[]);
    let acked = scenario(&mut daemon, &mut tmpfs, 21);
    drop(daemon);
    after_restart(dir.path(), &endpoint, &data_dir, acked, 22);
}

#[test]
fn a_daemon_killed_on_a_full_tmpfs_restarts_serves_reads_and_refuses_writes_until_space_is_freed() {
    let dir = tempfile::tempdir().unwrap();
    let mut tmpfs = match Tmpfs::mount(&dir.path().join("mnt"), 16 << 20) {
        Ok(tmpfs) => tmpfs,
        Err(error) => {
            memoree::testkit::parts::notice(
                &memoree::testkit::parts::current_test(),
                &format!("cannot mount a tmpfs here ({error}); the real restart-when-full test needs root"),
            );
            return;
        }
    };
    let endpoint = Endpoint::Unix(dir.path().join("s.sock"));
    let data_dir = tmpfs.root.join("data");
    let mut daemon = TestDaemon::start_at_with_env(dir.path(), &endpoint, &data_dir, &[]);
    let mut rng = Rng::new(31);
    let mut acked = Vec::new();
    for i in 0..5 {
        let content = text(&mut rng, "restart ledger", 6_000, 30_000);
        let request = put(&format!("restart-{i}"), &content);
        let response = call(&mut daemon.client().session(), &request);
        assert!(response.ok, "{response:?}");
        acked.push(Written {
            op: Op::ArtifactPut,
            request,
            response,
            content: Some(content),
        });
    }
    tmpfs.fill();
    let refused = put("restart-refused", &text(&mut rng, "refused ledger", 8_000, 8_000));
    assert_storage_full(&call(&mut daemon.client().session(), &refused), "a put on a full disk");
    daemon.kill9();

    // Restarted on the still-full disk: it comes up, serves reads and replays, and refuses
    // new writes with the same clear error.
    let mut daemon = TestDaemon::start_at_with_env(dir.path(), &endpoint, &data_dir, &[]);
    let mut scenario = Scenario {
        daemon: &mut daemon,
        acked,
        rng,
    };
    scenario.check();
    let response = call(&mut scenario.daemon.client().session(), &refused);
    assert_storage_full(&response, "a put after restarting on a full disk");

    tmpfs.free();
    let response = scenario.write(
        Op::ArtifactPut,
        refused.clone(),
        refused["input"]["content"]["data"].as_str().map(str::to_owned),
    );
    assert!(response.ok, "{response:?}");
    assert_eq!(response.result.unwrap()["created"], true);
    scenario.check();
}
