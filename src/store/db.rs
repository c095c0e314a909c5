//! The store's one SQL interface over both backends: [`Db`] is a connection (SQLite or
//! PostgreSQL), [`Row`] a result row, [`Param`] a bound value, [`FromDb`] a column value.
//!
//! Store code written against these runs unchanged on both backends: statements use SQLite's
//! numbered placeholders (`?1`), which the PostgreSQL connection rewrites once per statement
//! (`pg_conn::pg_sql`), and both connections cache prepared statements. Where the SQL itself
//! differs (full-text search, JSON functions, `INSERT OR IGNORE`), the caller picks the
//! text with [`Db::dialect`]; nothing else about a backend leaks into the code above.
//!
//! On SQLite this is a thin layer over `prepare_cached` and the statement's row cursor:
//! parameters are bound from the slice without copying and rows are read in place.
//!
//! **Invariant:** values always travel as parameters; the SQL text is a constant of the
//! caller (or built from constants), never from request data.

use postgres::types::{FromSql as PgFromSql, ToSql as PgToSql, Type};
use rusqlite::types::{FromSql as SqliteFromSql, ToSql as SqliteToSql};

use super::error::{StoreError, StoreResult};

mod pg_conn;

pub use pg_conn::PgConn;

/// Which backend a connection belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// A value both backends can bind.
pub trait Param: SqliteToSql + PgToSql + Sync {}
impl<T: SqliteToSql + PgToSql + Sync> Param for T {}

/// A connection of either backend, positioned wherever its caller put it (a read snapshot or
/// a mutation's savepoint).
#[derive(Clone, Copy, Debug)]
pub enum Db<'c> {
    Sqlite(&'c rusqlite::Connection),
    Postgres(&'c PgConn),
}

impl<'c> From<&'c rusqlite::Connection> for Db<'c> {
    fn from(conn: &'c rusqlite::Connection) -> Db<'c> {
        Db::Sqlite(conn)
    }
}

impl<'c> From<&'c PgConn> for Db<'c> {
    fn from(conn: &'c PgConn) -> Db<'c> {
        Db::Postgres(conn)
    }
}

/// One result row.
pub enum Row<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Postgres(&'r postgres::Row),
}

impl Row<'_> {
    /// Column `idx` (0-based) as `T`.
    pub fn get<T: FromDb>(&self, idx: usize) -> StoreResult<T> {
        match self {
            Row::Sqlite(row) => Ok(row.get(idx)?),
            Row::Postgres(row) => T::from_pg(row, idx),
        }
    }
}

impl<'c> Db<'c> {
    /// The backend's dialect.
    pub fn dialect(self) -> Dialect {
        match self {
            Db::Sqlite(_) => Dialect::Sqlite,
            Db::Postgres(_) => Dialect::Postgres,
        }
    }

    /// The SQLite text or the PostgreSQL text, for statements that differ.
    pub fn pick<'s>(self, sqlite: &'s str, postgres: &'s str) -> &'s str {
        match self {
            Db::Sqlite(_) => sqlite,
            Db::Postgres(_) => postgres,
        }
    }

    /// Runs a statement expected to return at most one row and maps it.
    pub fn query_opt<T>(
        self,
        sql: &str,
        params: &[&dyn Param],
        map: impl FnOnce(&Row<'_>) -> StoreResult<T>,
    ) -> StoreResult<Option<T>> {
        match self {
            Db::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(params.iter()))?;
                match rows.next()? {
                    Some(row) => Ok(Some(map(&Row::Sqlite(row))?)),
                    None => Ok(None),
                }
            }
            Db::Postgres(conn) => match conn.query_opt(sql, &pg_params(params))? {
                Some(row) => Ok(Some(map(&Row::Postgres(&row))?)),
                None => Ok(None),
            },
        }
    }

    /// Runs a statement that returns exactly one row and maps it.
    pub fn query_one<T>(
        self,
        sql: &str,
        params: &[&dyn Param],
        map: impl FnOnce(&Row<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.query_opt(sql, params, map)?
            .ok_or_else(|| StoreError::Internal(format!("no row returned by {}", first_line(sql))))
    }

    /// Runs a statement with parameters assembled at run time and maps every row.
    pub fn query_values<T>(
        self,
        sql: &str,
        params: &[Value],
        map: impl FnMut(&Row<'_>) -> StoreResult<T>,
    ) -> StoreResult<Vec<T>> {
        let params: Vec<&dyn Param> = params.iter().map(|p| p as &dyn Param).collect();
        self.query_all(sql, &params, map)
    }

    /// Runs a statement and maps every row.
    pub fn query_all<T>(
        self,
        sql: &str,
        params: &[&dyn Param],
        mut map: impl FnMut(&Row<'_>) -> StoreResult<T>,
    ) -> StoreResult<Vec<T>> {
        let mut out = Vec::new();
        match self {
            Db::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(params.iter()))?;
                while let Some(row) = rows.next()? {
                    out.push(map(&Row::Sqlite(row))?);
                }
            }
            Db::Postgres(conn) => {
                for row in conn.query(sql, &pg_params(params))? {
                    out.push(map(&Row::Postgres(&row))?);
                }
            }
        }
        Ok(out)
    }

    /// Runs a query and hands every row to `each`, streaming on both backends: on SQLite from
    /// the statement's cursor, on PostgreSQL through a cursor of the current transaction a
    /// batch at a time ([`PgConn::for_each`]), so memory is bounded by a row (a batch of rows)
    /// and not by the result. `each` may run other statements on the same connection.
    pub fn for_each(
        self,
        sql: &str,
        params: &[&dyn Param],
        mut each: impl FnMut(&Row<'_>) -> StoreResult<()>,
    ) -> StoreResult<()> {
        match self {
            Db::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(params.iter()))?;
                while let Some(row) = rows.next()? {
                    each(&Row::Sqlite(row))?;
                }
                Ok(())
            }
            Db::Postgres(conn) => conn.for_each(sql, &pg_params(params), |row| each(&Row::Postgres(row))),
        }
    }

    /// Runs statements without parameters or results.
    pub fn batch(self, sql: &str) -> StoreResult<()> {
        match self {
            Db::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            Db::Postgres(conn) => conn.batch(sql),
        }
    }

    /// Runs a statement; returns the number of rows it changed.
    pub fn execute(self, sql: &str, params: &[&dyn Param]) -> StoreResult<u64> {
        match self {
            Db::Sqlite(conn) => Ok(conn
                .prepare_cached(sql)?
                .execute(rusqlite::params_from_iter(params.iter()))? as u64),
            Db::Postgres(conn) => conn.execute(sql, &pg_params(params)),
        }
    }
}

/// An owned value of any column type, for statements whose parameters are assembled at run
/// time (filters, visibility clauses).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl From<String> for Value {
    fn from(text: String) -> Value {
        Value::Text(text)
    }
}

impl From<i64> for Value {
    fn from(value: i64) -> Value {
        Value::Integer(value)
    }
}

impl SqliteToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Integer(v) => ValueRef::Integer(*v),
            Value::Real(v) => ValueRef::Real(*v),
            Value::Text(v) => ValueRef::Text(v.as_bytes()),
            Value::Blob(v) => ValueRef::Blob(v),
        }))
    }
}

impl PgToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        // Each variant checks that the parameter's type accepts it.
        match self {
            Value::Null => Ok(postgres::types::IsNull::Yes),
            Value::Integer(v) => v.to_sql_checked(ty, out),
            Value::Real(v) => v.to_sql_checked(ty, out),
            Value::Text(v) => v.to_sql_checked(ty, out),
            Value::Blob(v) => v.to_sql_checked(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

/// A store error as a `rusqlite` error, for row mappers handed to `rusqlite` directly.
pub fn into_rusqlite(error: StoreError) -> rusqlite::Error {
    match error {
        StoreError::Sqlite(e) => e,
        other => rusqlite::Error::ToSqlConversionFailure(Box::new(other)),
    }
}

fn pg_params<'p>(params: &[&'p dyn Param]) -> Vec<&'p (dyn PgToSql + Sync)> {
    params.iter().map(|p| *p as &(dyn PgToSql + Sync)).collect()
}

fn first_line(sql: &str) -> &str {
    sql.trim().lines().next().unwrap_or_default()
}

/// A column value both backends can produce. On PostgreSQL, integers of any width read as
/// `i64` (so `count(*)`, literals and `BIGINT` columns all work) and text converts through
/// `String` for the protocol's identifier newtypes and status enums.
pub trait FromDb: SqliteFromSql + Sized {
    fn from_pg(row: &postgres::Row, idx: usize) -> StoreResult<Self>;
}

pub(crate) fn pg_get<'a, T: PgFromSql<'a>>(row: &'a postgres::Row, idx: usize) -> StoreResult<T> {
    Ok(row.try_get(idx)?)
}

fn pg_int(row: &postgres::Row, idx: usize) -> StoreResult<Option<i64>> {
    let column_type = row.columns().get(idx).map(|c| c.type_().clone());
    match column_type {
        Some(Type::INT2) => Ok(pg_get::<Option<i16>>(row, idx)?.map(i64::from)),
        Some(Type::INT4) => Ok(pg_get::<Option<i32>>(row, idx)?.map(i64::from)),
        Some(Type::BOOL) => Ok(pg_get::<Option<bool>>(row, idx)?.map(i64::from)),
        _ => pg_get::<Option<i64>>(row, idx),
    }
}

fn not_null<T>(value: Option<T>, idx: usize) -> StoreResult<T> {
    value.ok_or_else(|| StoreError::Internal(format!("column {idx} is NULL")))
}

impl FromDb for i64 {
    fn from_pg(row: &postgres::Row, idx: usize) -> StoreResult<i64> {
        not_null(pg_int(row, idx)?, idx)
    }
}

impl FromDb for Option<i64> {
    fn from_pg(row: &postgres::Row, idx: usize) -> StoreResult<Option<i64>> {
        pg_int(row, idx)
    }
}

impl FromDb for bool {
    fn from_pg(row: &postgres::Row, idx: usize) -> StoreResult<bool> {
        Ok(not_null(pg_int(row, idx)?, idx)? != 0)
    }
}

macro_rules! from_db_plain {
    ($($t:ty),+) => {
        $(
            impl FromDb for $t {
                fn from_pg(row: &postgres::Row, idx: usize) -> StoreResult<$t> {
                    pg_get(row, idx)
                }
            }
        )+
    };
}

fn pg_float(row: &postgres::Row, idx: usize) -> StoreResult<Option<f64>> {
    match row.columns().get(idx).map(|c| c.type_().clone()) {
        Some(Type::FLOAT4) => Ok(pg_get::<Option<f32>>(row, idx)?.map(f64::from)),
        _ => pg_get::<Option<f64>>(row, idx),
    }
}

impl FromDb for f64 {
    fn from_pg(row: &postgres::Row, idx: usize) -> StoreResult<f64> {
        not_null(pg_float(row, idx)?, idx)
    }
}

impl FromDb for Option<f64> {
    fn from_pg(row: &postgres::Row, idx: usize) -> StoreResult<Option<f64>> {
        pg_float(row, idx)
    }
}

from_db_plain!(String, Option<String>, Vec<u8>, Option<Vec<u8>>);

#[cfg(test)]
mod tests;
