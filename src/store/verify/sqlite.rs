//! `verify` on the embedded (SQLite) store: the checks that need the `rusqlite` connection
//! or the filesystem CAS, around the backend-neutral ones of [`super`] (run through
//! [`Db::Sqlite`]), with the same issue kinds and report.
//!
//! What is SQLite's own: the schema version read from `PRAGMA user_version`,
//! `PRAGMA integrity_check` and `PRAGMA foreign_key_check`, the FTS5 projection
//! (`artifact_fts`/`claim_fts` keyed by `rowid`), the tombstone checks against the CAS, and
//! the CAS itself: every external blob a live revision cites is read and re-hashed against
//! its BLAKE3 digest and size, the objects no revision cites are checked too and reported as
//! a warning, and anything in `blobs/` that is not a well-placed object (other than the
//! writers' scratch directory) is an issue.
//!
//! **Invariant:** nothing here writes, not even the CAS's scratch directory. The caller
//! passes a read-only (`query_only`) connection, ideally inside one read transaction; the
//! CAS is only listed and read.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::Path;

use rusqlite::Connection;

use super::{
    Findings, Referenced, VerifyReport, check_records, check_revision_blob, check_schema_version, kind,
    report_blob_error,
};
use crate::blob::{self, Digest};
use crate::paths::BLOBS_TMP_DIR;
use crate::progress::Progress;
use crate::store::db::Db;
use crate::store::error::StoreResult;
use crate::store::sqlite::migrate::{SCHEMA_VERSION, schema_version};

/// Verifies the store behind `conn` (a read-only connection, ideally inside one read
/// transaction) and the CAS rooted at `blobs_root`. Never writes, not even the CAS's
/// scratch directory.
pub fn verify(conn: &Connection, blobs_root: &Path) -> StoreResult<VerifyReport> {
    let mut findings = Findings::new();
    findings.check("schema version", |f| check_schema(conn, f));
    findings.check("integrity_check", |f| check_sqlite(conn, f));
    check_records(Db::Sqlite(conn), &mut findings, ("artifact_fts", "claim_fts", "rowid"));
    findings.check("blobs", |f| check_blobs(conn, blobs_root, f));
    findings.check("tombstones", |f| {
        let (found, warnings) = crate::store::tombstone::check(conn, blobs_root)?;
        for (kind, entity, detail) in found {
            f.about(kind, entity, detail);
        }
        f.report.warnings.extend(warnings);
        Ok(())
    });
    Ok(findings.finish())
}

fn check_schema(conn: &Connection, f: &mut Findings) -> StoreResult<()> {
    check_schema_version(Db::Sqlite(conn), schema_version(conn)?, SCHEMA_VERSION, f)
}

fn check_sqlite(conn: &Connection, f: &mut Findings) -> StoreResult<()> {
    // FTS5's integrity check trusts the table structure the connection cached at its last
    // query and reports false corruption when another connection has since merged or
    // rebuilt segments (SQLite 3.54). Reading one row refreshes that cache first.
    for fts in ["artifact_fts", "claim_fts"] {
        conn.prepare(&format!("SELECT rowid FROM {fts} LIMIT 1"))?
            .query([])?
            .next()?;
    }
    let mut stmt = conn.prepare("PRAGMA integrity_check")?;
    let lines = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for line in lines.into_iter().filter(|line| line != "ok") {
        f.issue(kind::DATABASE_INTEGRITY, None, line);
    }
    let mut stmt = conn.prepare("PRAGMA foreign_key_check")?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for (table, rowid, parent) in rows {
        let entity = format!("{table} rowid {}", rowid.map_or("?".to_owned(), |id| id.to_string()));
        f.about(kind::FOREIGN_KEY, entity, format!("references a missing {parent} row"));
    }
    Ok(())
}

fn check_blobs(conn: &Connection, root: &Path, f: &mut Findings) -> StoreResult<()> {
    let total: i64 = conn.query_row("SELECT count(*) FROM artifact_revisions WHERE purged = 0", [], |r| {
        r.get(0)
    })?;
    let mut progress = Progress::new("verify: artifact revisions", total.max(0) as u64);
    let mut external: HashMap<Digest, Referenced> = HashMap::new();
    let mut stmt = conn.prepare(
        "SELECT id, blob_hash, blob_size, inline_blob, inline_encoding FROM artifact_revisions WHERE purged = 0 ORDER BY seq",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        progress.inc(1);
        let inline = match row.get::<_, Option<Vec<u8>>>(3)? {
            Some(stored) => Some((stored, row.get(4)?)),
            None => None,
        };
        check_revision_blob(f, &mut external, row.get(0)?, row.get(1)?, row.get(2)?, inline);
    }
    drop(progress);
    check_cas(root, f, &external)
}

/// Checks the referenced external blobs against the CAS, and reports what else it holds.
fn check_cas(root: &Path, f: &mut Findings, external: &HashMap<Digest, Referenced>) -> StoreResult<()> {
    let found = walk_cas(root, f)?;
    let mut progress = Progress::new("verify: external blobs", found.len().max(external.len()) as u64);
    let mut referenced_digests: Vec<(&Digest, &Referenced)> = external.iter().collect();
    referenced_digests.sort_by_key(|(digest, _)| digest.to_hex());
    for (digest, referenced) in referenced_digests {
        progress.inc(1);
        f.report.checked_external_blobs += 1;
        if !found.contains(digest) {
            f.about(
                kind::BLOB_MISSING,
                digest.to_hex(),
                format!("missing CAS object cited by revision {}", referenced.revision),
            );
            continue;
        }
        if let Err(error) = blob::check_object_file(&root.join(digest.relative_path()), digest, Some(referenced.size)) {
            report_blob_error(f, digest, &referenced.revision, error);
        }
    }
    let mut unreferenced: Vec<&Digest> = found.iter().filter(|digest| !external.contains_key(digest)).collect();
    unreferenced.sort_by_key(|digest| digest.to_hex());
    for digest in &unreferenced {
        progress.inc(1);
        if let Err(error) = blob::check_object_file(&root.join(digest.relative_path()), digest, None) {
            report_blob_error(f, digest, "no revision", error);
        }
    }
    if !unreferenced.is_empty() {
        f.report.warnings.push(format!(
            "{} CAS objects are not referenced by any revision (left by interrupted writes; harmless)",
            unreferenced.len()
        ));
    }
    Ok(())
}

/// Lists the well-placed objects of the CAS (`<h0h1>/<h2h3>/<hex>`) and reports anything
/// else, except the writers' scratch directory `.tmp`.
fn walk_cas(root: &Path, f: &mut Findings) -> StoreResult<HashSet<Digest>> {
    let mut found = HashSet::new();
    let unexpected = |f: &mut Findings, path: &Path, what: &str| {
        let relative = path.strip_prefix(root).unwrap_or(path);
        f.about(
            kind::CAS_UNEXPECTED,
            format!("blobs/{}", relative.display()),
            what.to_owned(),
        );
    };
    let entries = match sorted_entries(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(e.into()),
    };
    for (first, first_type) in entries {
        let first_name = file_name(&first);
        if first_name == BLOBS_TMP_DIR && first_type.is_dir() {
            continue;
        }
        if !first_type.is_dir() || !is_hex_pair(&first_name) {
            unexpected(f, &first, "not a fan-out directory");
            continue;
        }
        for (second, second_type) in sorted_entries(&first)? {
            let second_name = file_name(&second);
            if !second_type.is_dir() || !is_hex_pair(&second_name) {
                unexpected(f, &second, "not a fan-out directory");
                continue;
            }
            for (object, object_type) in sorted_entries(&second)? {
                let name = file_name(&object);
                let digest = Digest::parse(&name)
                    .filter(|_| name.starts_with(&first_name) && name[2..].starts_with(&second_name));
                match digest {
                    Some(digest) if object_type.is_file() => {
                        found.insert(digest);
                    }
                    Some(_) => unexpected(f, &object, "not a regular file"),
                    None => unexpected(f, &object, "not a CAS object name for this directory"),
                }
            }
        }
    }
    Ok(found)
}

fn sorted_entries(dir: &Path) -> io::Result<Vec<(std::path::PathBuf, fs::FileType)>> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        entries.push((entry.path(), entry.file_type()?));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn is_hex_pair(name: &str) -> bool {
    name.len() == 2 && name.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
