//! Ownership scopes: who owns an entity, who may write it, and which rows a read horizon
//! may see.
//!
//! **Write rule:** same workspace and project, and the ambient has no task, or the owner has
//! no task, or the tasks are equal. A project-level context may therefore maintain every
//! task's entities in its project; a task context may maintain project-level entities but
//! never a sibling task's.
//!
//! **Visibility:** `ambient` is the write rule without the project-level widening on the
//! task side (same workspace and project, and no ambient task, or an owner without task, or
//! equal tasks); `workspace` is the same workspace; `personal` is the whole local store.

use super::db::Row;
use super::error::{StoreError, StoreResult};
use crate::protocol::Horizon;

/// The workspace/project/task/component an entity or relation belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Owner {
    pub workspace_id: String,
    pub project_id: String,
    pub task_id: Option<String>,
    pub component: Option<String>,
}

impl Owner {
    /// `workspace=…/project=…/task=…`, printing a missing task as `<project>`.
    pub fn describe(&self) -> String {
        format!(
            "workspace={}/project={}/task={}",
            self.workspace_id,
            self.project_id,
            self.task_id.as_deref().unwrap_or("<project>")
        )
    }

    fn task_compatible(&self, ambient: &Owner) -> bool {
        match (&ambient.task_id, &self.task_id) {
            (None, _) | (_, None) => true,
            (Some(a), Some(b)) => a == b,
        }
    }

    /// Whether `ambient` may mutate an entity owned by `self`.
    pub fn writable_from(&self, ambient: &Owner) -> bool {
        self.workspace_id == ambient.workspace_id
            && self.project_id == ambient.project_id
            && self.task_compatible(ambient)
    }

    /// Whether a row owned by `self` is visible at `horizon` from `ambient`.
    pub fn visible_from(&self, ambient: &Owner, horizon: Horizon) -> bool {
        match horizon {
            Horizon::Ambient => self.writable_from(ambient),
            Horizon::Workspace => self.workspace_id == ambient.workspace_id,
            Horizon::Personal => true,
        }
    }
}

/// Refuses a write to an entity outside the ambient scope. The message names owner and
/// ambient identifiers only, never entity content.
pub fn check_write(entity_type: &str, entity_id: &str, owner: &Owner, ambient: &Owner) -> StoreResult<()> {
    if owner.writable_from(ambient) {
        return Ok(());
    }
    Err(StoreError::Scope(format!(
        "{entity_type} {entity_id} belongs to {}; ambient write scope is {}",
        owner.describe(),
        ambient.describe()
    )))
}

/// An SQL predicate over the owner columns of `alias` selecting rows visible at `horizon`.
/// Appends its parameters to `params` and uses positional `?` placeholders.
pub fn visibility_sql<V: From<String>>(alias: &str, ambient: &Owner, horizon: Horizon, params: &mut Vec<V>) -> String {
    match horizon {
        Horizon::Personal => "TRUE".to_owned(),
        Horizon::Workspace => {
            params.push(V::from(ambient.workspace_id.clone()));
            format!("{alias}.workspace_id = ?")
        }
        Horizon::Ambient => {
            params.push(V::from(ambient.workspace_id.clone()));
            params.push(V::from(ambient.project_id.clone()));
            match &ambient.task_id {
                None => format!("({alias}.workspace_id = ? AND {alias}.project_id = ?)"),
                Some(task) => {
                    params.push(V::from(task.clone()));
                    format!(
                        "({alias}.workspace_id = ? AND {alias}.project_id = ? AND ({alias}.task_id IS NULL OR {alias}.task_id = ?))"
                    )
                }
            }
        }
    }
}

/// Reads owner columns `workspace_id, project_id, task_id, component` starting at `first`.
pub fn owner_from_db_row(row: &Row<'_>, first: usize) -> StoreResult<Owner> {
    Ok(Owner {
        workspace_id: row.get(first)?,
        project_id: row.get(first + 1)?,
        task_id: row.get(first + 2)?,
        component: row.get(first + 3)?,
    })
}

/// [`owner_from_db_row`] for store code still reading `rusqlite` rows directly.
pub fn owner_from_row(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Owner> {
    Ok(Owner {
        workspace_id: row.get(first)?,
        project_id: row.get(first + 1)?,
        task_id: row.get(first + 2)?,
        component: row.get(first + 3)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(task: Option<&str>) -> Owner {
        Owner {
            workspace_id: "w".into(),
            project_id: "p".into(),
            task_id: task.map(str::to_owned),
            component: None,
        }
    }

    #[test]
    fn a_project_context_may_write_task_entities_and_a_task_may_write_project_entities() {
        assert!(owner(Some("t1")).writable_from(&owner(None)));
        assert!(owner(None).writable_from(&owner(Some("t1"))));
        assert!(owner(Some("t1")).writable_from(&owner(Some("t1"))));
    }

    #[test]
    fn a_task_never_writes_a_sibling_tasks_entity() {
        assert!(!owner(Some("t2")).writable_from(&owner(Some("t1"))));
        let err = check_write("claim", "clm_x", &owner(Some("t2")), &owner(Some("t1"))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "scope violation: claim clm_x belongs to workspace=w/project=p/task=t2; ambient write scope is workspace=w/project=p/task=t1"
        );
    }

    #[test]
    fn another_project_is_invisible_at_ambient_but_visible_at_workspace() {
        let mut other = owner(None);
        other.project_id = "q".into();
        assert!(!other.visible_from(&owner(None), Horizon::Ambient));
        assert!(other.visible_from(&owner(None), Horizon::Workspace));
        other.workspace_id = "v".into();
        assert!(!other.visible_from(&owner(None), Horizon::Workspace));
        assert!(other.visible_from(&owner(None), Horizon::Personal));
    }
}
