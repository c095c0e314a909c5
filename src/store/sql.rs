//! SQLite conversions of the protocol's identifier newtypes and status enums, so rows carry
//! typed values and statements bind them directly. A stored value outside an enum's set is
//! a conversion error (the schema's `CHECK` constraints keep that from happening).

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use crate::protocol::Operation;
use crate::protocol::artifact::ArtifactStatus;
use crate::protocol::browse::EventEntityType;
use crate::protocol::claim::{ClaimStatus, ClaimType};
use crate::protocol::ids::{
    ArtifactId, ArtifactRevisionId, CaseEventId, CaseId, ClaimId, ClaimRevisionId, EventId, RelationId, RevisionId,
};
use crate::protocol::relation::{ConflictState, EntityType, RelationType};

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
