//! Read-only browsing: current artifacts, claim revisions and events visible at a horizon,
//! newest first by commit sequence, in pages with an exclusive `before_commit_seq` cursor.
//!
//! Every query filters by the owner columns through [`scope::visibility_sql`]; an event is
//! visible when the artifact, claim or relation it is about is. Filters are bound
//! parameters; no caller text is spliced into SQL. **Invariant:** nothing here writes.

use super::artifact::{self, ArtifactRow};
use super::claim::{self, ClaimRow, PRESENTED_STATUS};
use super::db::{Db, Param, Row, Value as SqlValue};
use super::error::StoreResult;
use super::scope::{self, Owner, owner_from_db_row};
use crate::protocol::Horizon;
use crate::protocol::artifact::ArtifactStatus;
use crate::protocol::browse::{EventEntityType, TemporalState};
use crate::protocol::claim::{ClaimStatus, ClaimType};
use crate::protocol::ids::{EventId, RevisionId};

/// The scope and page every listing shares.
#[derive(Clone, Copy, Debug)]
pub struct Page<'a> {
    pub ambient: &'a Owner,
    pub horizon: Horizon,
    pub before_commit_seq: Option<i64>,
    pub limit: usize,
}

/// `artifact.list` filters.
#[derive(Clone, Copy, Debug, Default)]
pub struct ArtifactFilter<'a> {
    pub kind: Option<&'a str>,
    pub status: Option<ArtifactStatus>,
}

/// `claim.list` filters. `temporal_state` is evaluated at `now_db`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClaimFilter<'a> {
    pub claim_type: Option<ClaimType>,
    pub status: Option<ClaimStatus>,
    pub temporal_state: Option<TemporalState>,
    pub now_db: &'a str,
    pub cites_artifact_id: Option<&'a str>,
    pub cites_revision_id: Option<&'a str>,
    /// Every matching revision instead of one current revision per claim.
    pub all_revisions: bool,
}

/// `event.list` filters.
#[derive(Clone, Copy, Debug, Default)]
pub struct EventFilter<'a> {
    pub entity_type: Option<EventEntityType>,
    pub entity_id: Option<&'a str>,
}

/// One event row with the owner of the entity it is about.
#[derive(Clone, Debug)]
pub struct EventRow {
    pub commit_seq: i64,
    pub event_id: EventId,
    pub event_type: String,
    pub entity_type: EventEntityType,
    pub entity_id: String,
    pub revision_id: Option<RevisionId>,
    pub actor: Option<String>,
    pub payload_json: String,
    pub created_at: String,
    pub owner: Owner,
}

/// A page of rows, whether more exist beyond it, and (for entity listings) the number of
/// matches over all pages.
#[derive(Debug)]
pub struct Listed<T> {
    pub rows: Vec<T>,
    pub more: bool,
    pub total: u64,
}

/// WHERE clauses and their positional parameters, built in order.
#[derive(Default)]
struct Clauses {
    sql: Vec<String>,
    params: Vec<SqlValue>,
}

impl Clauses {
    fn text(&mut self, clause: &str, value: &str) {
        self.sql.push(clause.to_owned());
        self.params.push(SqlValue::Text(value.to_owned()));
    }

    fn visible(&mut self, alias: &str, page: &Page<'_>) {
        let clause = scope::visibility_sql(alias, page.ambient, page.horizon, &mut self.params);
        self.sql.push(clause);
    }

    fn joined(&self) -> String {
        if self.sql.is_empty() {
            "TRUE".to_owned()
        } else {
            self.sql.join(" AND ")
        }
    }
}

/// Runs a page query (`LIMIT ?` last) and a count query over the same filters.
fn page_of<T>(
    db: Db<'_>,
    select: &str,
    count: Option<&str>,
    clauses: &Clauses,
    page: &Page<'_>,
    cursor_column: &str,
    map: impl FnMut(&Row<'_>) -> StoreResult<T>,
) -> StoreResult<Listed<T>> {
    let total = match count {
        Some(count) => {
            let sql = format!("{count} WHERE {}", clauses.joined());
            let params: Vec<&dyn Param> = clauses.params.iter().map(|p| p as &dyn Param).collect();
            let total: i64 = db.query_one(&sql, &params, |r| r.get(0))?;
            total as u64
        }
        None => 0,
    };
    let mut where_sql = clauses.joined();
    let mut params = clauses.params.clone();
    if let Some(before) = page.before_commit_seq {
        where_sql.push_str(&format!(" AND {cursor_column} < ?"));
        params.push(SqlValue::Integer(before));
    }
    params.push(SqlValue::Integer(page.limit as i64 + 1));
    let sql = format!("{select} WHERE {where_sql} ORDER BY {cursor_column} DESC LIMIT ?");
    let mut rows = db.query_values(&sql, &params, map)?;
    let more = rows.len() > page.limit;
    rows.truncate(page.limit);
    Ok(Listed { rows, more, total })
}

/// Current revisions of the artifacts visible at the page's horizon.
pub fn artifacts<'c>(
    db: impl Into<Db<'c>>,
    filter: &ArtifactFilter<'_>,
    page: &Page<'_>,
) -> StoreResult<Listed<ArtifactRow>> {
    let mut clauses = Clauses::default();
    clauses.visible("a", page);
    if let Some(kind) = filter.kind {
        clauses.text("a.kind = ?", kind);
    }
    if let Some(status) = filter.status {
        clauses.text("a.status = ?", status.as_str());
    }
    let select = format!(
        "SELECT {} FROM artifacts a JOIN artifact_revisions r ON r.id = a.current_revision_id",
        artifact::COLUMNS
    );
    page_of(
        db.into(),
        &select,
        Some("SELECT COUNT(*) FROM artifacts a"),
        &clauses,
        page,
        "r.commit_seq",
        artifact::db_row,
    )
}

/// Claim revisions visible at the page's horizon: one current revision per claim, or every
/// matching revision.
pub fn claims<'c>(db: impl Into<Db<'c>>, filter: &ClaimFilter<'_>, page: &Page<'_>) -> StoreResult<Listed<ClaimRow>> {
    let db = db.into();
    let mut clauses = Clauses::default();
    clauses.visible("c", page);
    if let Some(claim_type) = filter.claim_type {
        clauses.text("c.claim_type = ?", claim_type.as_str());
    }
    if let Some(status) = filter.status {
        clauses.text(&format!("({PRESENTED_STATUS}) = ?"), status.as_str());
    }
    match filter.temporal_state {
        Some(TemporalState::Future) => clauses.text("(c.valid_from IS NOT NULL AND c.valid_from > ?)", filter.now_db),
        Some(TemporalState::Expired) => {
            clauses.text("(c.valid_from IS NULL OR c.valid_from <= ?)", filter.now_db);
            clauses.text("(c.valid_until IS NOT NULL AND c.valid_until <= ?)", filter.now_db);
        }
        Some(TemporalState::Current) => {
            clauses.text("(c.valid_from IS NULL OR c.valid_from <= ?)", filter.now_db);
            clauses.text("(c.valid_until IS NULL OR c.valid_until > ?)", filter.now_db);
        }
        None => {}
    }
    let mut cites = Vec::new();
    let mut cite_params = Vec::new();
    if let Some(artifact_id) = filter.cites_artifact_id {
        cites.push(db.pick(
            "json_extract(e.value, '$.artifact_id') = ?",
            "e.value ->> 'artifact_id' = ?",
        ));
        cite_params.push(SqlValue::Text(artifact_id.to_owned()));
    }
    if let Some(revision_id) = filter.cites_revision_id {
        cites.push(db.pick(
            "json_extract(e.value, '$.revision_id') = ?",
            "e.value ->> 'revision_id' = ?",
        ));
        cite_params.push(SqlValue::Text(revision_id.to_owned()));
    }
    if !cites.is_empty() {
        clauses.sql.push(format!(
            "EXISTS (SELECT 1 FROM {} WHERE {})",
            db.pick(
                "json_each(r.evidence_json) e",
                "jsonb_array_elements(CAST(r.evidence_json AS jsonb)) e(value)"
            ),
            cites.join(" AND ")
        ));
        clauses.params.extend(cite_params);
    }
    let join = if filter.all_revisions {
        "r.claim_id = c.id"
    } else {
        "r.id = c.current_revision_id"
    };
    let from = format!("FROM claims c JOIN claim_revisions r ON {join}");
    let select = format!("SELECT {} {from}", claim::columns());
    let count = format!("SELECT COUNT(*) {from}");
    page_of(db, &select, Some(&count), &clauses, page, "r.commit_seq", claim::db_row)
}

/// Events about entities visible at the page's horizon.
pub fn events<'c>(db: impl Into<Db<'c>>, filter: &EventFilter<'_>, page: &Page<'_>) -> StoreResult<Listed<EventRow>> {
    let mut clauses = Clauses::default();
    clauses.visible("o", page);
    if let Some(entity_type) = filter.entity_type {
        clauses.text("o.entity_type = ?", entity_type.as_str());
    }
    if let Some(entity_id) = filter.entity_id {
        clauses.text("o.entity_id = ?", entity_id);
    }
    let select = "SELECT o.commit_seq, o.event_id, o.event_type, o.entity_type, o.entity_id, o.revision_id, o.actor, \
         o.payload_json, o.created_at, o.workspace_id, o.project_id, o.task_id, o.component FROM (
            SELECT e.*,
                COALESCE(a.workspace_id, c.workspace_id, l.workspace_id, '') AS workspace_id,
                COALESCE(a.project_id, c.project_id, l.project_id, '') AS project_id,
                CASE e.entity_type WHEN 'artifact' THEN a.task_id WHEN 'claim' THEN c.task_id ELSE l.task_id END AS task_id,
                CASE e.entity_type WHEN 'artifact' THEN a.component WHEN 'claim' THEN c.component ELSE l.component END
                    AS component
            FROM events e
            LEFT JOIN artifacts a ON e.entity_type = 'artifact' AND a.id = e.entity_id
            LEFT JOIN claims c ON e.entity_type = 'claim' AND c.id = e.entity_id
            LEFT JOIN relations l ON e.entity_type = 'relation' AND l.id = e.entity_id
         ) o";
    page_of(db.into(), select, None, &clauses, page, "o.commit_seq", |r| {
        Ok(EventRow {
            commit_seq: r.get(0)?,
            event_id: r.get(1)?,
            event_type: r.get(2)?,
            entity_type: r.get(3)?,
            entity_id: r.get(4)?,
            revision_id: r.get(5)?,
            actor: r.get(6)?,
            payload_json: r.get(7)?,
            created_at: r.get(8)?,
            owner: owner_from_db_row(r, 9)?,
        })
    })
}
