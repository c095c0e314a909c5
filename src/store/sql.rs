//! SQLite and PostgreSQL conversions of the protocol's identifier newtypes and status enums,
//! so rows carry typed values and statements bind them directly on either backend. A stored
//! value outside an enum's set is a conversion error (the schema's `CHECK` constraints keep
//! that from happening).

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use std::error::Error;

use bytes::BytesMut;
use postgres::types::{IsNull, Type};

use super::db::{FromDb, pg_get};
use super::error::{StoreError, StoreResult};
use crate::protocol::Operation;
use crate::protocol::artifact::ArtifactStatus;
use crate::protocol::browse::EventEntityType;
use crate::protocol::claim::{ClaimStatus, ClaimType};
use crate::protocol::ids::{
    ArtifactId, ArtifactRevisionId, CaseEventId, CaseId, ClaimId, ClaimRevisionId, EventId, RelationId, RevisionId,
};
use crate::protocol::relation::{ConflictState, EntityType, RelationType};

/// A typed value stored as text.
trait FromText: Sized {
    fn from_text(text: &str) -> StoreResult<Self>;
}

/// Converts stored text (read from PostgreSQL) into its typed value.
fn parse_text<T: FromText>(text: &str) -> StoreResult<T> {
    T::from_text(text)
}

/// Binds a text newtype or enum as PostgreSQL text.
macro_rules! pg_text {
    ($name:ty) => {
        impl postgres::types::ToSql for $name {
            fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
                postgres::types::ToSql::to_sql(&self.as_str(), ty, out)
            }

            fn accepts(ty: &Type) -> bool {
                <&str as postgres::types::ToSql>::accepts(ty)
            }

            postgres::types::to_sql_checked!();
        }
    };
}

/// Reads a text newtype or enum on PostgreSQL: as `String`, then converted the way the SQLite
/// conversion above does.
macro_rules! from_db_text {
    ($name:ty) => {
        impl FromDb for $name {
            fn from_pg(row: &postgres::Row, idx: usize) -> StoreResult<$name> {
                parse_text(&pg_get::<String>(row, idx)?)
            }
        }

        impl FromDb for Option<$name> {
            fn from_pg(row: &postgres::Row, idx: usize) -> StoreResult<Option<$name>> {
                pg_get::<Option<String>>(row, idx)?
                    .map(|text| parse_text(&text))
                    .transpose()
            }
        }
    };
}

macro_rules! sql_id {
    ($($name:ty),+) => {
        $(
            impl ToSql for $name {
                fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                    Ok(ToSqlOutput::from(self.as_str()))
                }
            }

            impl FromSql for $name {
                fn column_result(value: ValueRef<'_>) -> FromSqlResult<$name> {
                    String::column_result(value).map(<$name>::from)
                }
            }

            impl FromText for $name {
                fn from_text(text: &str) -> StoreResult<$name> {
                    Ok(<$name>::from(text.to_owned()))
                }
            }

            pg_text!($name);
            from_db_text!($name);
        )+
    };
}

sql_id!(
    ArtifactId,
    ArtifactRevisionId,
    ClaimId,
    ClaimRevisionId,
    RelationId,
    CaseId,
    EventId,
    CaseEventId,
    RevisionId
);

macro_rules! sql_enum {
    ($($name:ty),+) => {
        $(
            impl ToSql for $name {
                fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                    Ok(ToSqlOutput::from(self.as_str()))
                }
            }

            impl FromSql for $name {
                fn column_result(value: ValueRef<'_>) -> FromSqlResult<$name> {
                    let text = value.as_str()?;
                    <$name>::parse(text).ok_or_else(|| {
                        FromSqlError::Other(format!("{text:?} is not one of {:?}", <$name>::NAMES).into())
                    })
                }
            }

            impl FromText for $name {
                fn from_text(text: &str) -> StoreResult<$name> {
                    <$name>::parse(text).ok_or_else(|| {
                        StoreError::Integrity(format!("stored {text:?} is not one of {:?}", <$name>::NAMES))
                    })
                }
            }

            pg_text!($name);
            from_db_text!($name);
        )+
    };
}

sql_enum!(
    ArtifactStatus,
    ClaimStatus,
    ClaimType,
    ConflictState,
    EntityType,
    RelationType,
    Operation,
    EventEntityType
);

/// The tables of an entity type, for statements written once for artifacts and claims
/// (purge, semantic vectors).
impl EntityType {
    /// The table of this kind's entities (`artifacts`, `claims`).
    pub(super) fn entities_table(self) -> &'static str {
        match self {
            EntityType::Artifact => "artifacts",
            EntityType::Claim => "claims",
        }
    }

    /// The table of this kind's revisions.
    pub(super) fn revisions_table(self) -> &'static str {
        match self {
            EntityType::Artifact => "artifact_revisions",
            EntityType::Claim => "claim_revisions",
        }
    }

    /// The revision table's column naming its entity.
    pub(super) fn owner_column(self) -> &'static str {
        match self {
            EntityType::Artifact => "artifact_id",
            EntityType::Claim => "claim_id",
        }
    }
}
