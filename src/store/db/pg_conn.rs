//! [`PgConn`]: one PostgreSQL connection with its prepared-statement cache, the connection
//! a [`Db::Postgres`](super::Db::Postgres) wraps (the `r2d2` pool of the PostgreSQL backend
//! lives in `store::pg`).
//!
//! Statements are written with SQLite's numbered placeholders (`?1`, `?2`, …) so the SQL the
//! two backends share reads the same; [`pg_sql`] rewrites them to `$1`, `$2`, … once, when a
//! statement is first prepared on a connection. Transactions are plain `BEGIN`/`COMMIT`
//! batches, so a caller holding `&PgConn` (not `&mut`) can run statements inside one.
//!
//! **Invariant:** no caller text is ever spliced into SQL here; values travel as parameters.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::Duration;

use postgres::types::ToSql;
use postgres::{Client, Config, NoTls, Row, Statement};

use crate::store::error::StoreResult;

/// Parameters of one statement.
pub type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// Rows a cursor of [`PgConn::for_each`] fetches per round trip.
const FETCH_ROWS: usize = 64;

/// A pooled connection: the client and the statements prepared on it.
pub struct PgConn {
    client: RefCell<Client>,
    statements: RefCell<HashMap<String, Statement>>,
    /// Cursors of [`PgConn::for_each`] open now (they nest): the next one's name.
    cursors: Cell<u32>,
}

impl std::fmt::Debug for PgConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConn").finish_non_exhaustive()
    }
}

impl PgConn {
    /// Connects with `config`; every session uses UTC and gives up on a lock or an idle
    /// transaction after `timeout`, so a front end that stalls mid-transaction cannot hold
    /// the database's write lock forever.
    pub fn connect(config: &Config, timeout: Duration) -> StoreResult<PgConn> {
        let mut client = config.connect(NoTls)?;
        let millis = timeout.as_millis();
        client.batch_execute(&format!(
            "SET TIME ZONE 'UTC'; SET lock_timeout = {millis}; SET idle_in_transaction_session_timeout = {millis};"
        ))?;
        Ok(PgConn {
            client: RefCell::new(client),
            statements: RefCell::new(HashMap::new()),
            cursors: Cell::new(0),
        })
    }

    fn statement(&self, sql: &str) -> StoreResult<Statement> {
        if let Some(statement) = self.statements.borrow().get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.borrow_mut().prepare(&pg_sql(sql))?;
        self.statements.borrow_mut().insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// Runs a statement and returns every row.
    pub fn query(&self, sql: &str, params: Params<'_>) -> StoreResult<Vec<Row>> {
        let statement = self.statement(sql)?;
        Ok(self.client.borrow_mut().query(&statement, params)?)
    }

    /// Runs a statement expected to return at most one row.
    pub fn query_opt(&self, sql: &str, params: Params<'_>) -> StoreResult<Option<Row>> {
        let statement = self.statement(sql)?;
        Ok(self.client.borrow_mut().query_opt(&statement, params)?)
    }

    /// Runs a statement that returns exactly one row.
    pub fn query_one(&self, sql: &str, params: Params<'_>) -> StoreResult<Row> {
        let statement = self.statement(sql)?;
        Ok(self.client.borrow_mut().query_one(&statement, params)?)
    }

    /// Runs a query (`SELECT` or `VALUES`) through a cursor of the current transaction and
    /// hands every row to `each`, `FETCH_ROWS` (64) rows fetched at a time: memory holds one
    /// batch, not the result. The cursor reads the snapshot it was opened in and stays open
    /// while `each` runs other statements on this connection. Only inside a transaction (every
    /// `Db` the store hands out is in one: a read snapshot or a mutation).
    pub fn for_each(
        &self,
        sql: &str,
        params: Params<'_>,
        mut each: impl FnMut(&Row) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let depth = self.cursors.get();
        let cursor = format!("memoree_rows_{depth}");
        self.execute(&format!("DECLARE {cursor} NO SCROLL CURSOR FOR {sql}"), params)?;
        self.cursors.set(depth + 1);
        // Not prepared once: what a FETCH returns is described by the cursor it names.
        let fetch = format!("FETCH FORWARD {FETCH_ROWS} FROM {cursor}");
        let walked = (|| loop {
            let rows = self.client.borrow_mut().query(fetch.as_str(), &[])?;
            for row in &rows {
                each(row)?;
            }
            if rows.len() < FETCH_ROWS {
                return Ok(());
            }
        })();
        self.cursors.set(depth);
        // After a failure the transaction may be aborted, and the CLOSE with it: the failure
        // is what the caller hears.
        let closed = self.batch(&format!("CLOSE {cursor}"));
        walked.and(closed)
    }

    /// Runs a statement; returns the number of rows it changed.
    pub fn execute(&self, sql: &str, params: Params<'_>) -> StoreResult<u64> {
        let statement = self.statement(sql)?;
        Ok(self.client.borrow_mut().execute(&statement, params)?)
    }

    /// Runs fixed SQL text (no parameters), possibly several statements.
    pub fn batch(&self, sql: &str) -> StoreResult<()> {
        Ok(self.client.borrow_mut().batch_execute(sql)?)
    }

    /// Whether the connection is closed (the server went away).
    pub fn is_closed(&self) -> bool {
        self.client.borrow().is_closed()
    }
}

/// Rewrites SQLite placeholders to PostgreSQL's, leaving quoted text and identifiers alone:
/// `?N` becomes `$N`, and an anonymous `?` gets the number SQLite gives it (one more than the
/// largest number so far).
pub fn pg_sql(sql: &str) -> Cow<'_, str> {
    if !sql.contains('?') {
        return Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len() + 8);
    let mut quote: Option<char> = None;
    let mut largest = 0u32;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                out.push(c);
            }
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                out.push(c);
            }
            None if c == '?' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                    digits.push(d);
                    chars.next();
                }
                let number = match digits.parse::<u32>() {
                    Ok(n) => n,
                    Err(_) => largest + 1,
                };
                largest = largest.max(number);
                out.push('$');
                out.push_str(&number.to_string());
            }
            None => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_placeholders_become_dollar_parameters_outside_quotes() {
        assert_eq!(
            pg_sql("SELECT '?1', \"a?2\" FROM t WHERE x = ?1 AND y = ?12"),
            "SELECT '?1', \"a?2\" FROM t WHERE x = $1 AND y = $12"
        );
        assert!(matches!(pg_sql("SELECT 1"), Cow::Borrowed(_)));
        assert_eq!(
            pg_sql("a = ? AND b = ?3 AND c = ? AND d = ?1"),
            "a = $1 AND b = $3 AND c = $4 AND d = $1"
        );
    }
}
