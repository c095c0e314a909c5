//! The semantic projection (`semantic_vectors`, issue 27): the int8 unit vectors a model
//! wrote for the current revision of an artifact (title plus body windows) or a claim (its
//! statement), keyed by the revision `seq` and tagged with the projection key (the model's
//! digest plus the windowing's name).
//!
//! The store does not know the model: the service embeds ([`crate::semantic`]) and hands
//! the rows in as a [`Projection`], with the revision ([`write()`]) or later ([`missing`] then
//! [`replace`], the catch-up). Reads are by `seq` ([`load`]).
//!
//! **Invariants:** the projection is derived and disposable. Only a current, unpurged
//! revision keeps rows: a revise drops the previous head's ([`drop_revision`]), a purge drops
//! every revision's of the entity, and `verify` reports rows of a purged or unknown revision.
//! A row written by another model than the loaded one is never read.

use std::collections::HashMap;

use super::db::Db;
use super::error::StoreResult;
use crate::protocol::relation::EntityType;

/// One embedded window of a revision's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// The byte range of the body the window covers (`0..len` of a claim's statement).
    pub start: usize,
    pub end: usize,
    /// The unit vector, each component scaled to -127..=127 by the largest.
    pub vector: Vec<i8>,
}

/// What a model wrote for one revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Projection {
    /// The projection key: the digest of the model that embedded it plus the windowing's
    /// name, so a change of either makes the rows stale.
    pub model: String,
    pub windows: Vec<Window>,
}

/// How many current revisions hold vectors of a model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    pub covered: u64,
    pub total: u64,
}

/// Replaces whatever rows revision `seq` holds (another model's, say) with `projection`:
/// the catch-up's write.
pub fn replace(db: Db<'_>, entity: EntityType, seq: i64, projection: &Projection) -> StoreResult<()> {
    drop_revision(db, entity, seq)?;
    write(db, entity, seq, projection)
}

/// Writes the projection of revision `seq`, which holds no rows yet: a new revision's, in
/// its own transaction.
pub fn write(db: Db<'_>, entity: EntityType, seq: i64, projection: &Projection) -> StoreResult<()> {
    for (part, window) in projection.windows.iter().enumerate() {
        let bytes: Vec<u8> = window.vector.iter().map(|&v| v as u8).collect();
        db.execute(
            "INSERT INTO semantic_vectors (entity, seq, part, model, start_byte, end_byte, vector)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            &[
                &entity.as_str(),
                &seq,
                &(part as i64),
                &projection.model,
                &(window.start as i64),
                &(window.end as i64),
                &bytes,
            ],
        )?;
    }
    Ok(())
}

/// Drops the rows of revision `seq`; returns how many there were.
pub fn drop_revision(db: Db<'_>, entity: EntityType, seq: i64) -> StoreResult<u64> {
    db.execute(
        "DELETE FROM semantic_vectors WHERE entity = ?1 AND seq = ?2",
        &[&entity.as_str(), &seq],
    )
}

/// Drops the rows of every revision of one entity (a purge); returns how many there were.
pub fn drop_entity(db: Db<'_>, entity: EntityType, entity_id: &str) -> StoreResult<u64> {
    let table = entity.revisions_table();
    let owner = entity.owner_column();
    db.execute(
        &format!(
            "DELETE FROM semantic_vectors WHERE entity = ?1 AND seq IN (SELECT seq FROM {table} WHERE {owner} = ?2)"
        ),
        &[&entity.as_str(), &entity_id],
    )
}

/// Drops every row (a rebuild), or every row not written by `keep` (a model change).
pub fn drop_all(db: Db<'_>, keep: Option<&str>) -> StoreResult<u64> {
    match keep {
        Some(model) => db.execute("DELETE FROM semantic_vectors WHERE model <> ?1", &[&model]),
        None => db.execute("DELETE FROM semantic_vectors", &[]),
    }
}

/// The vectors `model` wrote for the given revisions, by `seq`, windows in order.
pub fn load(db: Db<'_>, entity: EntityType, model: &str, seqs: &[i64]) -> StoreResult<HashMap<i64, Vec<Vec<i8>>>> {
    let mut found: HashMap<i64, Vec<Vec<i8>>> = HashMap::new();
    if seqs.is_empty() {
        return Ok(found);
    }
    // One statement text for every list (a JSON array parameter), so it is prepared once.
    let list = serde_json::Value::from(seqs.to_vec()).to_string();
    db.for_each(
        db.pick(
            "SELECT seq, vector FROM semantic_vectors
             WHERE entity = ?1 AND model = ?2 AND seq IN (SELECT value FROM json_each(?3))
             ORDER BY seq, part",
            "SELECT seq, vector FROM semantic_vectors
             WHERE entity = ?1 AND model = ?2
               AND seq IN (SELECT CAST(value AS bigint) FROM jsonb_array_elements_text(CAST(CAST(?3 AS text) AS jsonb)))
             ORDER BY seq, part",
        ),
        &[&entity.as_str(), &model, &list],
        |row| {
            let seq: i64 = row.get(0)?;
            let bytes: Vec<u8> = row.get(1)?;
            found
                .entry(seq)
                .or_default()
                .push(bytes.into_iter().map(|b| b as i8).collect());
            Ok(())
        },
    )?;
    Ok(found)
}

/// One step of the catch-up's walk ([`missing`]).
pub struct Missing {
    /// `(seq, revision id)` of revisions that need vectors.
    pub revisions: Vec<(i64, String)>,
    /// The last `seq` examined: where the next step starts.
    pub next: i64,
    /// Whether the walk reached the end of the table.
    pub exhausted: bool,
}

/// Up to `limit` current, unpurged revisions after `after` (a revision `seq`) with no rows of
/// `model`, in `seq` order (the catch-up's work list, walked forward so every batch costs
/// what it covers).
pub fn missing(db: Db<'_>, entity: EntityType, model: &str, after: i64, limit: usize) -> StoreResult<Missing> {
    let (entities, table) = (entity.entities_table(), entity.revisions_table());
    let owner = entity.owner_column();
    // A window of revisions in seq order, then the ones among them that need vectors.
    let window = (limit * 16) as i64;
    let rows: Vec<(i64, String, bool, bool)> = db.query_all(
        &format!(
            "SELECT r.seq, r.id, CASE WHEN r.purged = 0 AND e.current_revision_id = r.id THEN 1 ELSE 0 END,
                    CASE WHEN EXISTS (SELECT 1 FROM semantic_vectors v WHERE v.entity = ?1 AND v.seq = r.seq AND v.model = ?2)
                         THEN 1 ELSE 0 END
             FROM {table} r JOIN {entities} e ON e.id = r.{owner}
             WHERE r.seq > ?3 ORDER BY r.seq LIMIT ?4"
        ),
        &[&entity.as_str(), &model, &after, &window],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
    )?;
    let exhausted = (rows.len() as i64) < window;
    let mut found = Vec::new();
    let mut last = after;
    for (seq, id, current, covered) in rows {
        if found.len() == limit {
            return Ok(Missing {
                revisions: found,
                next: last,
                exhausted: false,
            });
        }
        last = seq;
        if current && !covered {
            found.push((seq, id));
        }
    }
    Ok(Missing {
        revisions: found,
        next: last,
        exhausted,
    })
}

/// How many current, unpurged revisions (of both kinds) hold rows of `model`. Cheap enough
/// for every `doctor`: entities less purged ones, and the projections' first windows (only
/// current, unpurged revisions keep rows; `verify` reports any that do not).
pub fn coverage(db: Db<'_>, model: &str) -> StoreResult<Coverage> {
    let mut coverage = Coverage::default();
    for entity in [EntityType::Artifact, EntityType::Claim] {
        let entities = entity.entities_table();
        let (covered, total): (i64, i64) = db.query_one(
            &format!(
                "SELECT (SELECT count(*) FROM semantic_vectors WHERE entity = ?1 AND part = 0 AND model = ?2),
                        (SELECT count(*) FROM {entities}) - (SELECT count(*) FROM purges WHERE entity_type = ?1)"
            ),
            &[&entity.as_str(), &model],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        coverage.covered += covered.max(0) as u64;
        coverage.total += total.max(0) as u64;
    }
    Ok(coverage)
}

/// Rows of a revision that is purged, unknown or no longer current: `(entity, seq, why)`.
pub fn strays(db: Db<'_>) -> StoreResult<Vec<(String, i64, &'static str)>> {
    let mut found = Vec::new();
    for entity in [EntityType::Artifact, EntityType::Claim] {
        let (entities, table) = (entity.entities_table(), entity.revisions_table());
        let owner = entity.owner_column();
        let rows: Vec<(i64, Option<i64>, Option<String>)> = db.query_all(
            &format!(
                "SELECT DISTINCT v.seq, r.purged, e.id FROM semantic_vectors v
                 LEFT JOIN {table} r ON r.seq = v.seq
                 LEFT JOIN {entities} e ON e.id = r.{owner} AND e.current_revision_id = r.id
                 WHERE v.entity = ?1 AND (r.seq IS NULL OR r.purged <> 0 OR e.id IS NULL)
                 ORDER BY v.seq"
            ),
            &[&entity.as_str()],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )?;
        for (seq, purged, head) in rows {
            let why = match (purged, head) {
                (None, _) => "no revision has this seq",
                (Some(p), _) if p != 0 => "the revision was purged",
                _ => "the revision is not its entity's current one",
            };
            found.push((entity.as_str().to_owned(), seq, why));
        }
    }
    Ok(found)
}

/// Whether revision `seq` is its entity's current, unpurged revision (a catch-up writes
/// only then: a revise or purge may have run since it read the revision).
pub fn is_current(db: Db<'_>, entity: EntityType, seq: i64) -> StoreResult<bool> {
    let (entities, table) = (entity.entities_table(), entity.revisions_table());
    let owner = entity.owner_column();
    Ok(db
        .query_opt(
            &format!(
                "SELECT 1 FROM {table} r JOIN {entities} e ON e.id = r.{owner}
                 WHERE r.seq = ?1 AND r.purged = 0 AND e.current_revision_id = r.id"
            ),
            &[&seq],
            |row| row.get::<i64>(0),
        )?
        .is_some())
}
