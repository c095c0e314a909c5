//! The in-memory vocabulary of the FTS projection (see `retrieval::vocabulary`), built once
//! from FTS5's own `fts5vocab` view of both tables and then kept current incrementally: a
//! read that finds revisions newer than the vocabulary tokenizes just those (title and
//! indexed body, or statement) the way the index does. Nothing is persisted and the write
//! path is untouched.
//!
//! **Invariants:** the vocabulary is never behind the snapshot a read uses it from (it may be
//! ahead of it, which only adds candidate terms that find nothing); a failed refresh leaves
//! the previous vocabulary in place; nothing here writes to the database.

use std::sync::{Mutex, RwLock};

use rusqlite::{Connection, OpenFlags};

use super::db::{Db, Dialect};

use super::Store;
use super::artifact::{self, is_indexable_media_type};
use super::error::StoreResult;
use crate::blob::Digest;
use crate::retrieval::corpus::CorpusStats;
use crate::retrieval::text::words;
use crate::retrieval::vocabulary::{DocumentFrequencies, Vocabulary};
use crate::store::StoreError;

/// Past this many new revisions a refresh rebuilds from `fts5vocab` instead.
const MAX_INCREMENTAL: i64 = 5000;

struct Loaded {
    vocabulary: Vocabulary,
    artifact_seq: i64,
    claim_seq: i64,
    /// The newest purge tombstone's `commit_seq` when it was built (0 for none): a purge (on
    /// any front end of a PostgreSQL store) moves it, and the vocabulary is rebuilt without
    /// the erased terms. (`commit_seq` is unique and indexed, so this costs no scan.)
    purges: i64,
}

/// The shared vocabulary of one store.
#[derive(Default)]
pub struct VocabularyCache {
    loaded: RwLock<Option<Loaded>>,
    refreshing: Mutex<()>,
}

impl std::fmt::Debug for VocabularyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VocabularyCache").finish_non_exhaustive()
    }
}

/// The newest revision `seq` of each table in `conn`'s snapshot, and its newest purge
/// tombstone's `commit_seq`.
fn newest(conn: Db<'_>) -> StoreResult<(i64, i64, i64)> {
    conn.query_one(
        "SELECT (SELECT coalesce(max(seq), 0) FROM artifact_revisions), (SELECT coalesce(max(seq), 0) FROM claim_revisions),
                (SELECT coalesce(max(commit_seq), 0) FROM purges)",
        &[],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
}

impl VocabularyCache {
    pub fn new() -> VocabularyCache {
        VocabularyCache::default()
    }

    /// Runs `f` with a vocabulary at least as new as the snapshot `conn` reads.
    pub fn with_current<T>(&self, store: &Store, conn: Db<'_>, f: impl FnOnce(&Vocabulary) -> T) -> StoreResult<T> {
        let (artifact_seq, claim_seq, purges) = newest(conn)?;
        let current = |loaded: &Option<Loaded>| {
            loaded
                .as_ref()
                .is_some_and(|l| l.artifact_seq >= artifact_seq && l.claim_seq >= claim_seq && l.purges >= purges)
        };
        {
            let loaded = self.loaded.read().unwrap_or_else(|e| e.into_inner());
            if current(&loaded) {
                return Ok(f(loaded.as_ref().map(|l| &l.vocabulary).unwrap_or(&Vocabulary::new())));
            }
        }
        let _refreshing = self.refreshing.lock().unwrap_or_else(|e| e.into_inner());
        let behind = {
            let loaded = self.loaded.read().unwrap_or_else(|e| e.into_inner());
            if current(&loaded) {
                None
            } else {
                // After a purge the erased terms must go: rebuild rather than add.
                Some(
                    loaded
                        .as_ref()
                        .filter(|l| l.purges >= purges)
                        .map(|l| (l.artifact_seq, l.claim_seq)),
                )
            }
        };
        if let Some(from) = behind {
            let fresh = match from {
                Some((a, c)) if (artifact_seq - a) + (claim_seq - c) <= MAX_INCREMENTAL => {
                    let mut vocabulary = self
                        .loaded
                        .read()
                        .unwrap_or_else(|e| e.into_inner())
                        .as_ref()
                        .map(|l| l.vocabulary.clone())
                        .unwrap_or_default();
                    add_revisions(store, conn, &mut vocabulary, a, c)?;
                    Loaded {
                        vocabulary,
                        artifact_seq,
                        claim_seq,
                        purges,
                    }
                }
                _ => {
                    let built = match conn.dialect() {
                        Dialect::Sqlite => build(store)?,
                        Dialect::Postgres => build_pg(conn)?,
                    };
                    // The scan's private connection (page cache, FTS5 segment readers) and
                    // the terms it read were thousands of small blocks, now free but
                    // scattered through the heap: hand them back to the system.
                    crate::sys::release_free_memory();
                    built
                }
            };
            *self.loaded.write().unwrap_or_else(|e| e.into_inner()) = Some(fresh);
        }
        let loaded = self.loaded.read().unwrap_or_else(|e| e.into_inner());
        Ok(f(loaded.as_ref().map(|l| &l.vocabulary).unwrap_or(&Vocabulary::new())))
    }

    /// Forgets the vocabulary (after a purge or a reindex); the next read rebuilds it.
    pub fn invalidate(&self) {
        *self.loaded.write().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Builds the vocabulary from `fts5vocab` on a private read-only connection, in one snapshot.
fn build(store: &Store) -> StoreResult<Loaded> {
    let conn = Connection::open_with_flags(
        store.db_path(),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // One pass over the index: a reader's page cache is plenty (SQLite's default is 2000 KiB).
    conn.execute_batch(&format!("PRAGMA cache_size = -{};", super::sqlite::READER_CACHE_KIB))?;
    conn.execute_batch(
        "CREATE VIRTUAL TABLE temp.artifact_terms USING fts5vocab(main, artifact_fts, 'row');
         CREATE VIRTUAL TABLE temp.claim_terms USING fts5vocab(main, claim_fts, 'row');
         BEGIN DEFERRED;",
    )?;
    let result = (|| {
        let (artifact_seq, claim_seq, purges) = newest(Db::Sqlite(&conn))?;
        let mut vocabulary = Vocabulary::new();
        for table in ["temp.artifact_terms", "temp.claim_terms"] {
            let mut stmt = conn.prepare(&format!("SELECT term, doc FROM {table}"))?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let term: String = row.get(0)?;
                let doc: i64 = row.get(1)?;
                vocabulary.add_term(&term, u32::try_from(doc).unwrap_or(u32::MAX));
            }
        }
        loaded(Db::Sqlite(&conn), vocabulary, artifact_seq, claim_seq, purges)
    })();
    let _ = conn.execute_batch("COMMIT");
    result
}

/// Builds the vocabulary on PostgreSQL from `ts_stat` over both projections, in the
/// snapshot `conn` reads (the document frequencies are per revision, as in `fts5vocab`).
fn build_pg(conn: Db<'_>) -> StoreResult<Loaded> {
    let (artifact_seq, claim_seq, purges) = newest(conn)?;
    let mut vocabulary = Vocabulary::new();
    for statement in [
        "SELECT word, ndoc FROM ts_stat('SELECT document FROM artifact_search')",
        "SELECT word, ndoc FROM ts_stat('SELECT document FROM claim_search')",
    ] {
        for (term, doc) in conn.query_all(statement, &[], |r| Ok((r.get::<String>(0)?, r.get::<i64>(1)?)))? {
            vocabulary.add_term(&term, u32::try_from(doc).unwrap_or(u32::MAX));
        }
    }
    loaded(conn, vocabulary, artifact_seq, claim_seq, purges)
}

/// The built vocabulary with the revision count of `conn`'s snapshot (the number of rows the
/// document frequencies are relative to) and the position it was built at.
fn loaded(
    conn: Db<'_>,
    mut vocabulary: Vocabulary,
    artifact_seq: i64,
    claim_seq: i64,
    purges: i64,
) -> StoreResult<Loaded> {
    let rows: i64 = conn.query_one(
        "SELECT (SELECT count(*) FROM artifact_revisions) + (SELECT count(*) FROM claim_revisions)",
        &[],
        |r| r.get(0),
    )?;
    vocabulary.add_rows(rows.max(0) as u64);
    Ok(Loaded {
        vocabulary,
        artifact_seq,
        claim_seq,
        purges,
    })
}

/// Adds the revisions newer than `(artifact_seq, claim_seq)` in `conn`'s snapshot.
fn add_revisions(
    store: &Store,
    conn: Db<'_>,
    vocabulary: &mut Vocabulary,
    artifact_seq: i64,
    claim_seq: i64,
) -> StoreResult<()> {
    add_revisions_in(store, conn, vocabulary, artifact_seq, claim_seq, None).map(|_| ())
}

/// [`add_revisions`], limited to the entities of `workspaces` (a JSON array) when given.
/// Returns the number of indexed words added (each occurrence counts).
fn add_revisions_in(
    store: &Store,
    conn: Db<'_>,
    vocabulary: &mut Vocabulary,
    artifact_seq: i64,
    claim_seq: i64,
    workspaces: Option<&str>,
) -> StoreResult<u64> {
    let mut added = 0u64;
    let mut tokens = 0u64;
    let (artifact_scope, claim_scope) = match workspaces {
        None => (String::new(), String::new()),
        Some(_) => {
            let set = conn.pick(
                "SELECT value FROM json_each(?2)",
                "SELECT value FROM jsonb_array_elements_text(CAST(CAST(?2 AS text) AS jsonb))",
            );
            (
                format!(" AND artifact_id IN (SELECT id FROM artifacts WHERE workspace_id IN ({set}))"),
                format!(" AND claim_id IN (SELECT id FROM claims WHERE workspace_id IN ({set}))"),
            )
        }
    };
    let set = workspaces.unwrap_or_default().to_owned();
    let artifact_params: Vec<&dyn super::db::Param> = match workspaces {
        None => vec![&artifact_seq],
        Some(_) => vec![&artifact_seq, &set],
    };
    // Document frequencies of this pass, added to the vocabulary once at the end: a hash
    // lookup per distinct word of a revision instead of an ordered-map search, and each
    // revision's words folded into one buffer (`text::words`), never one string per word.
    let mut counts = DocumentFrequencies::default();
    conn.for_each(
        &format!(
            "SELECT seq, id, title, media_type, body_indexed, blob_hash, blob_size, inline_blob, inline_encoding
             FROM artifact_revisions WHERE seq > ?1{artifact_scope} ORDER BY seq"
        ),
        &artifact_params,
        |row| {
            let revision: String = row.get(1)?;
            let title: String = row.get(2)?;
            let media_type: String = row.get(3)?;
            let body = if row.get::<bool>(4)? && is_indexable_media_type(&media_type) {
                let hash: String = row.get(5)?;
                let size = row.get::<i64>(6)?.max(0) as u64;
                let digest = Digest::parse(&hash)
                    .ok_or_else(|| StoreError::Integrity(format!("invalid blob hash on revision {revision}")))?;
                let bytes = match row.get::<Option<Vec<u8>>>(7)? {
                    Some(stored) => artifact::read_inline(&digest, size, &stored, row.get(8)?)?,
                    None => store.blob_source().get_blob(&digest, size)?,
                };
                String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
            } else {
                String::new()
            };
            tokens += counts.add_document(&[&words(&title), &words(&body)]);
            added += 1;
            Ok(())
        },
    )?;
    let claim_params: Vec<&dyn super::db::Param> = match workspaces {
        None => vec![&claim_seq],
        Some(_) => vec![&claim_seq, &set],
    };
    conn.for_each(
        &format!("SELECT statement FROM claim_revisions WHERE seq > ?1{claim_scope} ORDER BY seq"),
        &claim_params,
        |row| {
            tokens += counts.add_document(&[&words(&row.get::<String>(0)?)]);
            added += 1;
            Ok(())
        },
    )?;
    counts.add_to(vocabulary);
    vocabulary.add_rows(added);
    Ok(tokens)
}

/// A vocabulary of some workspaces (see [`ScopedVocabularies`]) and where it was built.
struct Scoped {
    vocabulary: Vocabulary,
    tokens: u64,
    artifact_seq: i64,
    claim_seq: i64,
    purges: i64,
}

/// The vocabularies of the workspace sets restricted grants may read (issue 28, finding 2;
/// see `retrieval::corpus`): built by tokenizing only those workspaces' revisions (as
/// [`VocabularyCache`] does for new revisions), then kept current the same way, and rebuilt
/// after a purge. One entry per distinct set of workspaces (one per configured credential).
///
/// Each entry has its own lock: building one grant's vocabulary (seconds at 100k rows) or
/// planning against it never holds up another grant's requests.
///
/// **Invariant:** an entry holds nothing of a row outside its workspaces, so a plan and the
/// statistics made from it cannot depend on another workspace.
#[derive(Default)]
pub struct ScopedVocabularies {
    entries: Mutex<std::collections::HashMap<Vec<String>, ScopedEntry>>,
}

/// One workspace set's vocabulary, built on its first use.
type ScopedEntry = std::sync::Arc<Mutex<Option<Scoped>>>;

impl std::fmt::Debug for ScopedVocabularies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopedVocabularies").finish_non_exhaustive()
    }
}

impl ScopedVocabularies {
    /// Runs `f` with the vocabulary and corpus statistics of `workspaces`, at least as new
    /// as the snapshot `conn` reads.
    pub fn with_current<T>(
        &self,
        store: &Store,
        conn: Db<'_>,
        workspaces: &[String],
        f: impl FnOnce(&Vocabulary, CorpusStats) -> T,
    ) -> StoreResult<T> {
        let (artifact_seq, claim_seq, purges) = newest(conn)?;
        let set = serde_json::Value::from(workspaces.to_vec()).to_string();
        let entry = self.entry(workspaces);
        let mut slot = entry.lock().unwrap_or_else(|e| e.into_inner());
        let stale = slot.as_ref().is_none_or(|s| s.purges < purges);
        if stale {
            let mut vocabulary = Vocabulary::new();
            let tokens = add_revisions_in(store, conn, &mut vocabulary, 0, 0, Some(&set))?;
            *slot = Some(Scoped {
                vocabulary,
                tokens,
                artifact_seq,
                claim_seq,
                purges,
            });
        }
        let Some(scoped) = slot.as_mut() else {
            return Err(StoreError::Internal("a scoped vocabulary was not built".to_owned()));
        };
        if scoped.artifact_seq < artifact_seq || scoped.claim_seq < claim_seq {
            let tokens = add_revisions_in(
                store,
                conn,
                &mut scoped.vocabulary,
                scoped.artifact_seq,
                scoped.claim_seq,
                Some(&set),
            )?;
            scoped.tokens += tokens;
            scoped.artifact_seq = artifact_seq;
            scoped.claim_seq = claim_seq;
        }
        let stats = CorpusStats {
            rows: scoped.vocabulary.rows(),
            tokens: scoped.tokens,
        };
        Ok(f(&scoped.vocabulary, stats))
    }

    /// The entry of `workspaces`, made empty on first use; the map's lock is held only here.
    fn entry(&self, workspaces: &[String]) -> ScopedEntry {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.entry(workspaces.to_vec()).or_default().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_seed::TestStore;

    #[test]
    fn counting_revisions_gives_the_vocabulary_the_full_text_index_has() {
        let t = TestStore::new();
        let source = t.put(
            "Release keys",
            "The release key was rotated; keys rotate yearly.".as_bytes(),
        );
        t.put(
            "Café notes",
            "Résumé of the CAFÉ meeting: v0.2.0 ships, 東京 office. café!".as_bytes(),
        );
        t.put("Large", "rotation schedule ".repeat(400).as_bytes());
        t.put("", b"");
        t.assert_claim("The release key rotates yearly", &source, (0, 11));
        let indexed = build(&t.store).unwrap().vocabulary;
        let counted = t
            .store
            .read_db(|conn| {
                let mut vocabulary = Vocabulary::new();
                add_revisions(&t.store, conn, &mut vocabulary, 0, 0)?;
                Ok(vocabulary)
            })
            .unwrap();
        assert_eq!(counted, indexed);
        assert_eq!(counted.df("release"), 2, "{counted:?}"); // one artifact (title and body) and the claim
        assert_eq!(counted.df("cafe"), 1, "{counted:?}");
        assert_eq!(counted.rows(), 5);
    }

    #[test]
    fn one_grant_building_its_vocabulary_never_holds_up_another_grant() {
        let t = TestStore::new();
        t.put("Note", b"alpha beta");
        let scoped = ScopedVocabularies::default();
        let (other, own) = (["wsp_other".to_owned()], ["wsp_test".to_owned()]);
        let busy = scoped.entry(&other);
        let (sender, answers) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            // Another grant's vocabulary is being built: its entry stays locked throughout.
            let _building = busy.lock().unwrap();
            scope.spawn(|| {
                let read = t
                    .store
                    .read_db(|conn| scoped.with_current(&t.store, conn, &own, |v, stats| (v.df("alpha"), stats.rows)));
                sender.send(read.unwrap()).unwrap();
            });
            let answer = answers
                .recv_timeout(std::time::Duration::from_secs(30))
                .expect("a grant's request waited for another grant's vocabulary");
            assert_eq!(answer, (1, 1));
        });
    }
}
