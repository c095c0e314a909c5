//! Crash durability: a daemon under a mixed mutation load from several clients is killed
//! with SIGKILL at random moments and restarted on the same data directory and socket,
//! again and again. After every restart, every acknowledged mutation is present exactly
//! once, every request that was in flight is either completely applied or absent (and its
//! replay says which), `verify` is clean and the conflict-case invariants hold.
//!
//! Knobs for longer local runs: `MEMOREE_TORTURE_CYCLES` (default 50),
//! `MEMOREE_TORTURE_CLIENTS` (4), `MEMOREE_TORTURE_MAX_KILL_MS` (120) and
//! `MEMOREE_TORTURE_SEED` (printed on every run; the workload, not the kill timing, is
//! reproducible from it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memoree::paths::Endpoint;
use serde_json::Value;

use crate::support::daemon::TestDaemon;
use crate::support::torture::{
    Ack, Anchors, Client, Counts, Db, LoadOutcome, Mutation, Op, Record, Rng, call, check_replay, conflict_list, drive,
    env_number, read_back, seed_from_env, verify_issues,
};

/// Older acknowledgements replayed and read back after each restart, besides the newest.
const SAMPLE: usize = 12;
/// Every how many cycles the daemon is also killed while it starts.
const STARTUP_KILL_EVERY: usize = 5;

#[derive(Debug, Default)]
struct Stats {
    cycles: usize,
    startup_kills: usize,
    /// Mutations acknowledged with an ok envelope during the load.
    acknowledged: usize,
    /// In flight at a kill, found applied by the database and replayed as such.
    unknown_applied: usize,
    /// In flight at a kill, found absent and applied once by the re-send.
    unknown_absent: usize,
    /// Ledger entries found intact by the final check.
    found: usize,
    /// Ledger entries missing or altered in any check.
    lost: usize,
    /// Entity rows beyond what the ledger accounts for, in any check.
    duplicated: i64,
    replays: usize,
    reads: usize,
}

struct Run {
    socket_dir: PathBuf,
    endpoint: Endpoint,
    data_dir: PathBuf,
    rng: Rng,
    clients: Vec<(Client, Rng)>,
    anchors: Anchors,
    /// Every acknowledged mutation (including resolved unknown ones), in order.
    ledger: Vec<Ack>,
    /// Where the acknowledgements of the latest load begin in the ledger.
    fresh: usize,
    /// Requests in flight at the last kill, by client.
    pending: Vec<(usize, Mutation)>,
    stats: Stats,
}

fn op_of(wire: &str) -> Op {
    *Op::ALL
        .iter()
        .find(|op| op.wire() == wire)
        .unwrap_or_else(|| panic!("unexpected operation {wire} in the idempotency table"))
}

fn ops_of<'a>(ops: impl Iterator<Item = Op> + 'a) -> HashMap<Op, i64> {
    let mut counts = HashMap::new();
    for op in ops {
        *counts.entry(op).or_insert(0) += 1;
    }
    counts
}

impl Run {
    fn new(dir: &Path, seed: u64, clients: usize) -> Run {
        let mut rng = Rng::new(seed);
        let clients = (0..clients).map(|i| (Client::new(i), rng.fork())).collect();
        Run {
            socket_dir: dir.to_path_buf(),
            endpoint: Endpoint::Unix(dir.join("s.sock")),
            data_dir: dir.join("data"),
            rng,
            clients,
            anchors: Anchors::default(),
            ledger: Vec::new(),
            fresh: 0,
            pending: Vec::new(),
            stats: Stats::default(),
        }
    }

    /// Starts the daemon on the same socket and data directory; every few cycles a first
    /// attempt is killed a few milliseconds into its startup.
    fn start(&mut self, cycle: usize) -> TestDaemon {
        if cycle % STARTUP_KILL_EVERY == STARTUP_KILL_EVERY - 1 {
            let mut doomed = TestDaemon::spawn_at(&self.socket_dir, &self.endpoint, &self.data_dir);
            std::thread::sleep(Duration::from_millis(self.rng.between(0, 25) as u64));
            doomed.kill9();
            self.stats.startup_kills += 1;
        }
        let mut daemon = TestDaemon::spawn_at(&self.socket_dir, &self.endpoint, &self.data_dir);
        daemon.wait_ready();
        daemon
    }

    /// Compares every ledger entry with its idempotency record; returns the problems.
    fn missing(&self, records: &HashMap<String, Record>) -> Vec<String> {
        let mut problems = Vec::new();
        for ack in &self.ledger {
            let key = &ack.mutation.key;
            match records.get(key) {
                None => problems.push(format!("{key}: acknowledged but has no idempotency record")),
                Some(record) => {
                    if record.operation != ack.mutation.op.wire()
                        || record.commit_seq != ack.commit_seq()
                        || record.produced.as_deref() != Some(ack.produced_id())
                    {
                        problems.push(format!(
                            "{key}: record {record:?} does not match the acknowledgement (commit_seq {}, {})",
                            ack.commit_seq(),
                            ack.produced_id()
                        ));
                    }
                }
            }
        }
        problems
    }

    /// Checks rows, events and records of a few acknowledgements in the database itself.
    fn check_rows(&self, db: &Db, acks: &[&Ack]) -> Vec<String> {
        let mut problems = Vec::new();
        for ack in acks {
            let key = &ack.mutation.key;
            if !db.holds(ack.mutation.op, ack.entity_id(), ack.produced_id()) {
                problems.push(format!("{key}: {} is not stored", ack.produced_id()));
            }
            match db.event(ack.commit_seq()) {
                Some((entity, _)) if entity == ack.entity_id() => {}
                other => problems.push(format!(
                    "{key}: the event at commit_seq {} is {other:?}",
                    ack.commit_seq()
                )),
            }
        }
        problems
    }

    /// The newest acknowledgements plus a random sample of older ones.
    fn sample(&mut self) -> Vec<usize> {
        let mut picked: Vec<usize> = (self.fresh..self.ledger.len()).collect();
        if self.fresh > 0 {
            for _ in 0..SAMPLE {
                picked.push(self.rng.below(self.fresh));
            }
        }
        picked
    }

    /// After a restart: inspect the store at rest, resolve the unknown requests, and check
    /// the store against the ledger.
    fn recover(&mut self, daemon: &TestDaemon) {
        let mut session = daemon.client().session();

        // 1. Before anything is re-sent: no acknowledged mutation is missing, and the rows
        //    match the idempotency records exactly, so nothing in flight was half-applied.
        let db = Db::open(&self.data_dir);
        let records = db.records();
        let counts = db.counts();
        let implied = Counts::expected(&ops_of(records.values().map(|r| op_of(&r.operation))));
        self.stats.duplicated += counts.excess_over(&implied);
        assert_eq!(
            counts, implied,
            "after the kill, the rows do not match the idempotency records (half-applied or duplicated mutation)"
        );
        let missing = self.missing(&records);
        self.stats.lost += missing.len();
        assert!(
            missing.is_empty(),
            "acknowledged mutations lost:\n{}",
            missing.join("\n")
        );
        let in_flight: HashMap<&str, bool> = self
            .pending
            .iter()
            .map(|(_, m)| (m.key.as_str(), records.contains_key(&m.key)))
            .collect();
        let known = self.ledger.len() + in_flight.values().filter(|applied| **applied).count();
        assert_eq!(
            records.len(),
            known,
            "the store holds idempotency records for mutations nobody sent"
        );
        let applied: HashMap<String, bool> = in_flight.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        drop(db);

        // 2. Re-send each unknown request with its key: the replay must agree with the store.
        for (index, mutation) in std::mem::take(&mut self.pending) {
            let response = call(&mut session, &mutation.request);
            assert!(
                response.ok,
                "re-sending the in-flight {} failed: {response:?}",
                mutation.key
            );
            let result = response.result.clone().unwrap();
            let was_applied = applied[&mutation.key];
            assert_eq!(
                result["created"],
                Value::Bool(!was_applied),
                "{}: the store says applied={was_applied}, the replay says {result}",
                mutation.key
            );
            if was_applied {
                self.stats.unknown_applied += 1;
            } else {
                self.stats.unknown_absent += 1;
            }
            self.clients[index].0.apply(&mutation, &result, &self.anchors);
            self.ledger.push(Ack { mutation, response });
        }

        // 3. The store now matches the ledger exactly: everything once, nothing more.
        let db = Db::open(&self.data_dir);
        let records = db.records();
        let counts = db.counts();
        let expected = Counts::expected(&ops_of(self.ledger.iter().map(|a| a.mutation.op)));
        self.stats.duplicated += counts.excess_over(&expected);
        assert_eq!(counts, expected, "the store does not hold the ledger exactly once");
        let mut problems = self.missing(&records);
        self.stats.lost += problems.len();
        let picked = self.sample();
        let acks: Vec<&Ack> = picked.iter().map(|&i| &self.ledger[i]).collect();
        problems.extend(self.check_rows(&db, &acks));
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        let violations = db.conflict_violations();
        assert!(violations.is_empty(), "conflict invariants: {violations:?}");
        let cases = db.listed_cases();
        drop(db);
        assert_eq!(
            conflict_list(&mut session),
            cases,
            "conflict.list disagrees with the store"
        );
        let issues = verify_issues(&mut session);
        assert!(issues.is_empty(), "verify: {issues:?}");

        // 4. Replays return the original acknowledgement; reads return what was written.
        for i in picked {
            let ack = &self.ledger[i];
            let replay = call(&mut session, &ack.mutation.request);
            check_replay(&ack.response, &replay, &ack.mutation.key).unwrap();
            read_back(&mut session, ack).unwrap();
            self.stats.replays += 1;
            self.stats.reads += 1;
        }
    }

    /// Runs the clients until a random moment, then kills the daemon with SIGKILL.
    fn load(&mut self, daemon: &mut TestDaemon, max_kill_ms: usize) {
        let delay = Duration::from_millis(self.rng.between(2, max_kill_ms) as u64);
        let handles: Vec<_> = std::mem::take(&mut self.clients)
            .into_iter()
            .map(|(client, rng)| {
                let endpoint = self.endpoint.clone();
                let anchors = self.anchors.clone();
                std::thread::spawn(move || drive(client, rng, endpoint, anchors))
            })
            .collect();
        std::thread::sleep(delay);
        daemon.kill9();
        self.fresh = self.ledger.len();
        for handle in handles {
            let LoadOutcome {
                client,
                rng,
                acks,
                unknown,
            } = handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            self.stats.acknowledged += acks.len();
            self.ledger.extend(acks);
            if let Some(mutation) = unknown {
                self.pending.push((client.index, mutation));
            }
            self.clients.push((client, rng));
        }
        self.stats.cycles += 1;
    }

    /// Replays and reads back the whole ledger, on four connections.
    fn final_pass(&mut self, daemon: &TestDaemon) {
        let db = Db::open(&self.data_dir);
        let all: Vec<&Ack> = self.ledger.iter().collect();
        let problems = self.check_rows(&db, &all);
        drop(db);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        let chunk = self.ledger.len().div_ceil(4).max(1);
        let failures: Vec<String> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .ledger
                .chunks(chunk)
                .map(|acks| {
                    scope.spawn(move || {
                        let mut session = daemon.client().session();
                        let mut failures = Vec::new();
                        for ack in acks {
                            let replay = call(&mut session, &ack.mutation.request);
                            failures.extend(check_replay(&ack.response, &replay, &ack.mutation.key).err());
                            failures.extend(read_back(&mut session, ack).err());
                        }
                        failures
                    })
                })
                .collect();
            handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        self.stats.lost += failures.len();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        self.stats.replays += self.ledger.len();
        self.stats.reads += self.ledger.len();
        self.stats.found = self.ledger.len();
    }
}

#[test]
#[allow(clippy::print_stderr)]
fn acknowledged_mutations_survive_sigkill_at_random_moments_exactly_once() {
    let cycles = env_number("MEMOREE_TORTURE_CYCLES", 50) as usize;
    let clients = env_number("MEMOREE_TORTURE_CLIENTS", 4) as usize;
    let max_kill_ms = env_number("MEMOREE_TORTURE_MAX_KILL_MS", 120) as usize;
    let seed = seed_from_env("MEMOREE_TORTURE_SEED");
    eprintln!("crash torture: MEMOREE_TORTURE_SEED={seed} cycles={cycles} clients={clients}");
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let mut run = Run::new(dir.path(), seed, clients.max(1));
    for cycle in 0..cycles {
        let mut daemon = run.start(cycle);
        run.recover(&daemon);
        run.load(&mut daemon, max_kill_ms.max(2));
    }
    let mut daemon = run.start(0);
    run.recover(&daemon);
    run.final_pass(&daemon);
    daemon.signal(rustix::process::Signal::TERM);
    assert!(daemon.wait_exit(Duration::from_secs(20)).success());

    // Informational: scratch files of CAS writes interrupted by a kill (garbage, not data).
    let tmp_leftovers = std::fs::read_dir(run.data_dir.join("blobs").join(".tmp")).map_or(0, |d| d.count());
    let s = &run.stats;
    eprintln!(
        "crash torture: seed={seed} cycles={} startup_kills={} clients={clients} acknowledged={} found={} lost={} \
         duplicated={} unknown_applied={} unknown_absent={} replays={} reads={} cas_tmp_leftovers={tmp_leftovers} elapsed={:.1}s",
        s.cycles,
        s.startup_kills,
        s.acknowledged,
        s.found,
        s.lost,
        s.duplicated,
        s.unknown_applied,
        s.unknown_absent,
        s.replays,
        s.reads,
        started.elapsed().as_secs_f64()
    );
    assert_eq!((s.lost, s.duplicated), (0, 0));
    assert_eq!(s.found, s.acknowledged + s.unknown_applied + s.unknown_absent);
}
