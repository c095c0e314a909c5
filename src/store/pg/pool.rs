//! The `r2d2` manager that pools a front end's [`PgConn`]s.

use std::time::Duration;

use postgres::Config;

use super::health::Health;
use crate::store::db::PgConn;
use crate::store::error::{StoreError, StoreResult};

/// The `r2d2` manager of [`PgConn`]s; every connection attempt tells `health` whether the
/// server was reachable.
#[derive(Debug)]
pub struct Manager {
    pub config: Config,
    pub timeout: Duration,
    pub health: std::sync::Arc<Health>,
}

impl r2d2::ManageConnection for Manager {
    type Connection = PgConn;
    type Error = StoreError;

    fn connect(&self) -> StoreResult<PgConn> {
        let conn = PgConn::connect(&self.config, self.timeout);
        match &conn {
            Ok(_) => self.health.up(),
            Err(error) => self.health.failed(error),
        }
        conn
    }

    fn is_valid(&self, conn: &mut PgConn) -> StoreResult<()> {
        conn.batch("")
    }

    fn has_broken(&self, conn: &mut PgConn) -> bool {
        conn.is_closed()
    }
}
