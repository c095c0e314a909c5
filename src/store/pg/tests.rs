//! Tests of the PostgreSQL foundations against a real, throw-away cluster.

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier};

use serde_json::json;

use super::*;
use crate::protocol::Operation;
use crate::store::{Event, EventEntity};
use crate::testkit::postgres::TestCluster;

/// A fresh cluster with one migrated, empty store.
/// `None` after reporting the test skipped when PostgreSQL is missing.
pub(crate) fn fresh_store() -> Option<(TestCluster, PgStore)> {
    let cluster = TestCluster::start()?;
    let store = PgStore::open(&cluster.create_database()).unwrap();
    Some((cluster, store))
}

/// One logical mutation as the service performs it: replay check, commit sequence, event and
/// replay record, all in the writer's transaction. Returns the commit sequence and whether it
/// was a replay.
fn keyed_mutation(tx: &Tx<'_>, key: &str) -> StoreResult<(i64, bool)> {
    let db = tx.db();
    if let Some(seq) = db.query_opt(
        "SELECT commit_seq FROM idempotency WHERE scoped_key = ?1",
        &[&key],
        |r| r.get(0),
    )? {
        return Ok((seq, true));
    }
    let commit_seq = tx.next_commit_seq()?;
    tx.append_event(&Event {
        commit_seq,
        operation: Operation::ArtifactPut,
        entity: EventEntity::Artifact,
        entity_id: key,
        revision_id: None,
        actor: None,
        payload: json!({}),
    })?;
    db.execute(
        "INSERT INTO idempotency (scoped_key, request_hash, operation, replay_json, commit_seq, created_at)
         VALUES (?1, 'h', 'artifact.put', '{}', ?2, ?3)",
        &[&key, &commit_seq, &tx.now_db()],
    )?;
    Ok((commit_seq, false))
}

#[test]
fn a_new_database_is_migrated_once_and_reopening_changes_nothing() {
    let Some(cluster) = TestCluster::start() else { return };
    let url = cluster.create_database();
    let first = PgStore::open(&url).unwrap();
    let version = first.read(schema_version).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(first.last_commit_seq().unwrap(), 0);
    drop(first);
    let again = PgStore::open(&url).unwrap();
    assert_eq!(again.read(schema_version).unwrap(), SCHEMA_VERSION);
    let applied: i64 = again
        .read(|c| Ok(c.query_one("SELECT count(*) FROM memoree_schema", &[])?.get(0)))
        .unwrap();
    assert_eq!(applied, SCHEMA_VERSION);
}

#[test]
fn front_ends_starting_together_on_an_empty_database_migrate_it_exactly_once() {
    let Some(cluster) = TestCluster::start() else { return };
    let url = cluster.create_database();
    let barrier = Arc::new(Barrier::new(4));
    let opened: Vec<_> = (0..4)
        .map(|_| {
            let (url, barrier) = (url.clone(), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                PgStore::open(&url)
            })
        })
        .collect();
    for handle in opened {
        handle.join().unwrap().unwrap();
    }
    let store = PgStore::open(&url).unwrap();
    assert_eq!(store.read(schema_version).unwrap(), SCHEMA_VERSION);
}

#[test]
fn a_foreign_database_or_a_newer_schema_is_refused_untouched() {
    let Some(cluster) = TestCluster::start() else { return };
    let url = cluster.create_database();
    let name = url.split('/').nth(3).unwrap().split('?').next().unwrap().to_owned();
    cluster.psql(&format!("ALTER DATABASE {name} OWNER TO memoree"));
    {
        let config: Config = url.parse().unwrap();
        let conn = PgConn::connect(&config, SESSION_TIMEOUT).unwrap();
        conn.batch("CREATE TABLE someone_elses (x int)").unwrap();
    }
    let refused = PgStore::open(&url).unwrap_err();
    assert!(matches!(refused, StoreError::Config(_)), "{refused}");

    let url = cluster.create_database();
    let store = PgStore::open(&url).unwrap();
    store
        .connection()
        .unwrap()
        .batch("INSERT INTO memoree_schema (version, name) VALUES (99, 'future')")
        .unwrap();
    let refused = PgStore::open(&url).unwrap_err();
    assert!(refused.to_string().contains("newer"), "{refused}");
}

#[test]
fn history_rows_cannot_be_updated_deleted_or_truncated() {
    let Some((_cluster, store)) = fresh_store() else { return };
    store.write(|tx| keyed_mutation(tx, "k")).unwrap();
    let conn = store.connection().unwrap();
    for sql in [
        "UPDATE events SET actor = 'mallory'",
        "DELETE FROM events",
        "TRUNCATE events CASCADE",
        "UPDATE idempotency SET request_hash = 'other'",
    ] {
        let refused = conn.batch(sql).unwrap_err();
        assert!(
            refused.to_string().contains("append-only")
                || refused.to_string().contains("immutable")
                || refused.to_string().contains("never truncated"),
            "{sql}: {refused}"
        );
    }
    assert_eq!(store.last_commit_seq().unwrap(), 1);
}

#[test]
fn commit_seq_has_no_gaps_across_front_ends_writing_concurrently() {
    let Some(cluster) = TestCluster::start() else { return };
    let url = cluster.create_database();
    let front_ends: Vec<PgStore> = (0..2).map(|_| PgStore::open(&url).unwrap()).collect();
    let writers: Vec<_> = (0..8)
        .map(|thread| {
            let store = front_ends[thread % 2].clone();
            std::thread::spawn(move || {
                (0..25)
                    .map(|i| {
                        let key = format!("t{thread}-{i}");
                        store.write(move |tx| keyed_mutation(tx, &key)).unwrap().0
                    })
                    .collect::<Vec<i64>>()
            })
        })
        .collect();
    let acknowledged: Vec<i64> = writers.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let distinct: BTreeSet<i64> = acknowledged.iter().copied().collect();
    assert_eq!(distinct.len(), 200, "every acknowledged commit_seq is distinct");
    assert_eq!(distinct, (1..=200).collect(), "and they are exactly 1..=200");
    let events: Vec<i64> = front_ends[0]
        .read(|c| {
            Ok(c.query("SELECT commit_seq FROM events ORDER BY commit_seq", &[])?
                .iter()
                .map(|r| r.get(0))
                .collect())
        })
        .unwrap();
    assert_eq!(events, (1..=200).collect::<Vec<_>>());
}

#[test]
fn the_same_idempotency_key_on_two_front_ends_at_once_is_applied_exactly_once() {
    let Some(cluster) = TestCluster::start() else { return };
    let url = cluster.create_database();
    let front_ends: Vec<PgStore> = (0..2).map(|_| PgStore::open(&url).unwrap()).collect();
    for round in 0..20 {
        let barrier = Arc::new(Barrier::new(4));
        let racers: Vec<_> = (0..4)
            .map(|racer| {
                let store = front_ends[racer % 2].clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    let key = format!("race-{round}");
                    store.write(move |tx| keyed_mutation(tx, &key)).unwrap()
                })
            })
            .collect();
        let outcomes: Vec<(i64, bool)> = racers.into_iter().map(|h| h.join().unwrap()).collect();
        let applied = outcomes.iter().filter(|(_, replay)| !replay).count();
        assert_eq!(applied, 1, "round {round}: {outcomes:?}");
        assert!(
            outcomes.iter().all(|(seq, _)| *seq == outcomes[0].0),
            "all see one commit_seq"
        );
    }
    let events: i64 = front_ends[1]
        .read(|c| Ok(c.query_one("SELECT count(*) FROM events", &[])?.get(0)))
        .unwrap();
    assert_eq!(events, 20);
}

#[test]
fn a_failed_mutation_leaves_nothing_and_takes_no_commit_seq() {
    let Some((_cluster, store)) = fresh_store() else { return };
    let failed = store.write(|tx| -> StoreResult<()> {
        keyed_mutation(tx, "doomed")?;
        Err(StoreError::Invalid("refused after writing".to_owned()))
    });
    assert!(matches!(failed, Err(StoreError::Invalid(_))));
    // A statement error inside a job rolls back only that job.
    let broken = store.write(|tx| tx.db().execute("SELECT * FROM no_such_table", &[]));
    assert!(matches!(broken, Err(StoreError::Postgres(_))));
    let (seq, replay) = store.write(|tx| keyed_mutation(tx, "kept")).unwrap();
    assert_eq!((seq, replay), (1, false));
    assert_eq!(store.last_commit_seq().unwrap(), 1);
}

#[test]
fn a_mutation_acknowledged_before_an_immediate_restart_survives_it_and_writing_resumes() {
    let Some(cluster) = TestCluster::start() else { return };
    let store = PgStore::open(&cluster.create_database()).unwrap();
    let (seq, _) = store.write(|tx| keyed_mutation(tx, "before")).unwrap();
    cluster.restart_immediate();
    // The writer's and the pool's connections died with the server. The first write may be
    // refused (transient, nothing acknowledged); a retry with the same key applies once.
    let mut after = store.write(|tx| keyed_mutation(tx, "after"));
    for _ in 0..20 {
        match &after {
            Err(e) if e.is_transient_postgres() => {
                std::thread::sleep(Duration::from_millis(100));
                after = store.write(|tx| keyed_mutation(tx, "after"));
            }
            _ => break,
        }
    }
    assert_eq!(after.unwrap(), (seq + 1, false));
    let keys: Vec<String> = (0..20)
        .find_map(|_| {
            let read = store.read(|c| {
                Ok(c.query("SELECT scoped_key FROM idempotency ORDER BY commit_seq", &[])?
                    .iter()
                    .map(|r| r.get(0))
                    .collect())
            });
            if read.is_err() {
                std::thread::sleep(Duration::from_millis(100));
            }
            read.ok()
        })
        .unwrap();
    assert_eq!(keys, ["before", "after"]);
}

/// Four clients write through two front ends while the server is restarted without a clean
/// shutdown, twice. Clients retry a refused write with the same key (as the protocol tells
/// them to). Afterwards every acknowledged key is stored exactly once, with the commit
/// sequence it was acknowledged with, and the sequence has no gaps.
#[test]
fn an_immediate_restart_under_four_client_load_loses_and_duplicates_nothing_acknowledged() {
    use std::sync::atomic::{AtomicBool, Ordering};

    let Some(cluster) = TestCluster::start() else { return };
    let url = cluster.create_database();
    let front_ends: Vec<PgStore> = (0..2).map(|_| PgStore::open(&url).unwrap()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|client| {
            let store = front_ends[client % 2].clone();
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut acknowledged: Vec<(String, i64)> = Vec::new();
                let mut refused = 0usize;
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("c{client}-{i}");
                    // Retry the same key until it is acknowledged (a replay counts).
                    loop {
                        let attempt = key.clone();
                        match store.write(move |tx| keyed_mutation(tx, &attempt)) {
                            Ok((seq, _)) => {
                                acknowledged.push((key.clone(), seq));
                                break;
                            }
                            Err(e) if e.is_transient_postgres() => {
                                refused += 1;
                                std::thread::sleep(Duration::from_millis(20));
                            }
                            Err(e) => panic!("client {client}: {e}"),
                        }
                    }
                    i += 1;
                }
                (acknowledged, refused)
            })
        })
        .collect();
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(400));
        cluster.restart_immediate();
    }
    std::thread::sleep(Duration::from_millis(400));
    stop.store(true, Ordering::Relaxed);
    let mut acknowledged = Vec::new();
    let mut refused = 0;
    for client in clients {
        let (acks, r) = client.join().unwrap();
        acknowledged.extend(acks);
        refused += r;
    }
    assert!(refused > 0, "the restarts interrupted some writes");
    let stored: Vec<(String, i64)> = front_ends[0]
        .read(|c| {
            Ok(c.query(
                "SELECT scoped_key, commit_seq FROM idempotency ORDER BY commit_seq",
                &[],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
        })
        .unwrap();
    let stored_map: std::collections::HashMap<&str, i64> = stored.iter().map(|(k, s)| (k.as_str(), *s)).collect();
    assert_eq!(stored_map.len(), stored.len(), "no key is stored twice");
    for (key, seq) in &acknowledged {
        assert_eq!(stored_map.get(key.as_str()), Some(seq), "acknowledged {key} at {seq}");
    }
    let seqs: Vec<i64> = stored.iter().map(|(_, s)| *s).collect();
    assert_eq!(seqs, (1..=stored.len() as i64).collect::<Vec<_>>(), "no gaps");
    let events: i64 = front_ends[1]
        .read(|c| Ok(c.query_one("SELECT count(*) FROM events", &[])?.get(0)))
        .unwrap();
    assert_eq!(events, stored.len() as i64, "one event per applied key");
}

#[test]
fn a_logged_url_never_shows_the_password() {
    let url = PgUrl("postgres://alice:s3cret@db:5432/mem?sslmode=disable&password=other".to_owned());
    assert_eq!(
        url.to_string(),
        "postgres://alice:***@db:5432/mem?sslmode=disable&password=***"
    );
    assert!(!format!("{url:?}").contains("s3cret"));
    let plain = PgUrl("postgresql://memoree@/db?host=/tmp/x".to_owned());
    assert_eq!(plain.to_string(), "postgresql://memoree@/db?host=/tmp/x");
}
