//! The same statements on both backends give the same values.

use super::*;
use crate::protocol::claim::ClaimStatus;
use crate::protocol::ids::ClaimId;
use crate::store::pg::PgStore;
use crate::testkit::postgres::TestCluster;

const TABLE: &str =
    "CREATE TABLE probe (id TEXT PRIMARY KEY, status TEXT NOT NULL, n BIGINT, x DOUBLE PRECISION, b BYTEA)";

/// Runs `check` on a fresh SQLite database and on a fresh PostgreSQL database.
fn on_both(check: impl Fn(Db<'_>)) {
    let sqlite = rusqlite::Connection::open_in_memory().unwrap();
    sqlite
        .execute_batch(
            &TABLE
                .replace("BIGINT", "INTEGER")
                .replace("DOUBLE PRECISION", "REAL")
                .replace("BYTEA", "BLOB"),
        )
        .unwrap();
    check(Db::Sqlite(&sqlite));

    let Some(cluster) = TestCluster::start() else { return };
    let store = PgStore::open(&cluster.create_database()).unwrap();
    let conn = store.connection().unwrap();
    conn.batch(TABLE).unwrap();
    check(Db::Postgres(&conn));
}

#[test]
fn typed_ids_enums_nulls_and_numbers_round_trip_identically_on_both_backends() {
    on_both(|db| {
        let id = ClaimId::from("clm_1".to_owned());
        let inserted = db
            .execute(
                "INSERT INTO probe (id, status, n, x, b) VALUES (?1, ?2, ?3, ?4, ?5)",
                &[&id, &ClaimStatus::Superseded, &Some(7i64), &0.25f64, &vec![0u8, 255]],
            )
            .unwrap();
        assert_eq!(inserted, 1, "{:?}", db.dialect());
        db.execute(
            "INSERT INTO probe (id, status) VALUES (?1, ?2)",
            &[&"clm_2", &ClaimStatus::Active],
        )
        .unwrap();
        type Probe = (ClaimId, ClaimStatus, Option<i64>, Option<f64>, Option<Vec<u8>>);
        let rows: Vec<Probe> = db
            .query_all("SELECT id, status, n, x, b FROM probe ORDER BY id", &[], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .unwrap();
        assert_eq!(
            rows,
            vec![
                (
                    id.clone(),
                    ClaimStatus::Superseded,
                    Some(7),
                    Some(0.25),
                    Some(vec![0, 255])
                ),
                (ClaimId::from("clm_2".to_owned()), ClaimStatus::Active, None, None, None),
            ],
            "{:?}",
            db.dialect()
        );
        // Integer expressions and literals of any width read as i64.
        let (count, one): (i64, i64) = db
            .query_one("SELECT count(*), 1 FROM probe", &[], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        assert_eq!((count, one), (2, 1));
        assert_eq!(
            db.query_opt("SELECT id FROM probe WHERE id = ?1", &[&"absent"], |r| r
                .get::<String>(0))
                .unwrap(),
            None
        );
    });
}

#[test]
fn run_time_parameters_bind_in_order_with_anonymous_and_numbered_placeholders() {
    on_both(|db| {
        for (id, n) in [("a", 1i64), ("b", 2), ("c", 3)] {
            db.execute(
                "INSERT INTO probe (id, status, n) VALUES (?1, 'active', ?2)",
                &[&id, &n],
            )
            .unwrap();
        }
        let mut params: Vec<Value> = Vec::new();
        let visible = crate::store::scope::visibility_sql(
            "p",
            &crate::store::scope::Owner::default(),
            crate::protocol::Horizon::Personal,
            &mut params,
        );
        params.push(Value::Integer(1));
        params.push(Value::Text("c".to_owned()));
        let ids: Vec<String> = db
            .query_values(
                &format!("SELECT id FROM probe p WHERE {visible} AND p.n > ? AND p.id <> ? ORDER BY p.id"),
                &params,
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(ids, ["b"], "{:?}", db.dialect());
    });
}

#[test]
fn a_stored_value_outside_an_enum_is_an_error_not_a_guess() {
    on_both(|db| {
        db.execute("INSERT INTO probe (id, status) VALUES ('x', 'sideways')", &[])
            .unwrap();
        let read = db.query_one("SELECT status FROM probe", &[], |r| r.get::<ClaimStatus>(0));
        assert!(read.is_err(), "{:?}", db.dialect());
    });
}

#[test]
fn for_each_streams_every_row_in_order_while_each_row_runs_other_statements() {
    on_both(|db| {
        db.batch("BEGIN").unwrap();
        for n in 0..150i64 {
            db.execute(
                "INSERT INTO probe (id, status, n) VALUES (?1, 'active', ?2)",
                &[&format!("p{n:03}"), &n],
            )
            .unwrap();
        }
        let open_cursors = || {
            db.query_one(
                "SELECT count(*) FROM pg_cursors WHERE name LIKE 'memoree_rows_%'",
                &[],
                |r| r.get::<i64>(0),
            )
        };
        let mut seen = Vec::new();
        db.for_each("SELECT id, n FROM probe WHERE n >= ?1 ORDER BY n", &[&0i64], |row| {
            let n: i64 = row.get(1)?;
            // Another statement, and another walk, between two rows of this one.
            let id: String = db.query_one("SELECT id FROM probe WHERE n = ?1", &[&n], |r| r.get(0))?;
            assert_eq!(id, row.get::<String>(0)?);
            if n % 50 == 0 {
                let mut inner = 0;
                db.for_each("SELECT n FROM probe WHERE n < ?1", &[&3i64], |_| {
                    inner += 1;
                    Ok(())
                })?;
                assert_eq!(inner, 3);
            }
            if n == 0 && db.dialect() == Dialect::Postgres {
                assert_eq!(
                    open_cursors()?,
                    1,
                    "PostgreSQL rows come from a cursor, not a loaded result"
                );
            }
            seen.push(n);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, (0..150).collect::<Vec<_>>(), "{:?}", db.dialect());

        // A walk that `each` stops leaves nothing open: the next one runs as the first did.
        let stopped = db.for_each("SELECT n FROM probe", &[], |_| {
            Err(StoreError::Invalid("stop".to_owned()))
        });
        assert!(matches!(stopped, Err(StoreError::Invalid(_))), "{stopped:?}");
        if db.dialect() == Dialect::Postgres {
            assert_eq!(open_cursors().unwrap(), 0);
        }
        let mut count = 0;
        db.for_each("SELECT n FROM probe", &[], |_| {
            count += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(count, 150);
        db.batch("COMMIT").unwrap();
    });
}
