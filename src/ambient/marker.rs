//! The project marker `.memoree.toml`: finding the nearest one above a directory, reading
//! it strictly, and writing a new one for `memoree init` without ever replacing one.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::fsutil::{self, FsError};
use crate::protocol::AmbientContext;
use crate::protocol::limits::MAX_CONTEXT_ID_BYTES;

use super::AmbientError;
use super::fields::{quoted, reject_unknown_keys, required_text, string_list, unsupported_schema};

/// The marker's file name.
pub const MARKER_FILE: &str = ".memoree.toml";

const MARKER_KEYS: &[&str] = &["schema", "workspace_id", "project_id", "name", "pins"];

/// A parsed marker: the project's display name and the context it selects (no task or
/// component).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    pub name: String,
    pub context: AmbientContext,
}

/// What `memoree init` created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitOutcome {
    /// The marker path, inside the canonicalized directory.
    pub marker: PathBuf,
    /// The project name written to the marker.
    pub name: String,
    /// The context the new marker selects.
    pub context: AmbientContext,
}

/// Finds the nearest `.memoree.toml` at or above `cwd` (canonicalized; a file uses its
/// parent directory). Any directory entry with that name counts, including a dangling
/// symbolic link or a directory, so that a broken nearest marker is reported rather than
/// skipped.
pub fn find_marker(cwd: &Path) -> Result<Option<PathBuf>, AmbientError> {
    let start = fs::canonicalize(cwd).map_err(|source| AmbientError::Io {
        action: "resolve the working directory",
        path: cwd.to_path_buf(),
        source,
    })?;
    let start = if start.is_dir() {
        start.as_path()
    } else {
        start.parent().unwrap_or(&start)
    };
    for dir in start.ancestors() {
        let candidate = dir.join(MARKER_FILE);
        match fs::symlink_metadata(&candidate) {
            Ok(_) => return Ok(Some(candidate)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => {
                return Err(AmbientError::Config(format!(
                    "cannot inspect marker {}: {err}",
                    candidate.display()
                )));
            }
        }
    }
    Ok(None)
}

/// Reads and validates a marker file. Every problem, including an unreadable file, is a
/// [`AmbientError::Config`].
pub fn read_marker(path: &Path) -> Result<Marker, AmbientError> {
    let text = fs::read_to_string(path)
        .map_err(|err| AmbientError::Config(format!("cannot read marker {}: {err}", path.display())))?;
    parse_marker(path, &text)
}

fn parse_marker(path: &Path, text: &str) -> Result<Marker, AmbientError> {
    let invalid = |problem: String| AmbientError::Config(format!("invalid marker {}: {problem}", path.display()));
    let table: toml::Table = text.parse().map_err(|err: toml::de::Error| invalid(err.to_string()))?;
    if let Some(schema) = unsupported_schema(&table) {
        return Err(AmbientError::Config(format!(
            "unsupported marker schema {schema} in {}",
            path.display()
        )));
    }
    reject_unknown_keys(&table, MARKER_KEYS).map_err(invalid)?;
    let workspace_id = required_text(&table, "workspace_id").map_err(invalid)?;
    let project_id = required_text(&table, "project_id").map_err(invalid)?;
    let name = required_text(&table, "name").map_err(invalid)?;
    let pins = string_list(&table, "pins").map_err(invalid)?;
    Ok(Marker {
        name,
        context: AmbientContext {
            workspace_id,
            project_id,
            task_id: None,
            component: None,
            pins,
        },
    })
}

/// Writes a new marker in `dir` for `memoree init`.
///
/// `dir` is canonicalized (a missing directory is an [`AmbientError::Io`]). The name
/// defaults to the directory's base name and the workspace to a fresh `wsp_<ULID>`; the
/// project is always a fresh `prj_<ULID>`. The file is published through a synced temp
/// file `.memoree.toml.tmp-<ULID>` that is hard-linked into place, so an existing marker
/// (even a dangling link) is never replaced: that case is
/// [`AmbientError::MarkerExists`]. No temp file is left behind.
pub fn init_marker(dir: &Path, name: Option<&str>, workspace_id: Option<&str>) -> Result<InitOutcome, AmbientError> {
    let dir = fs::canonicalize(dir).map_err(|source| AmbientError::Io {
        action: "resolve directory",
        path: dir.to_path_buf(),
        source,
    })?;
    if !dir.is_dir() {
        return Err(AmbientError::Invalid(format!("{} is not a directory", dir.display())));
    }
    let name = match name {
        Some(name) => name.to_owned(),
        None => dir
            .file_name()
            .map(|base| base.to_string_lossy().into_owned())
            .ok_or_else(|| {
                AmbientError::Invalid(format!(
                    "cannot derive a project name from {}; pass --name",
                    dir.display()
                ))
            })?,
    };
    if name.trim().is_empty() {
        return Err(AmbientError::Invalid("project name must not be blank".to_owned()));
    }
    let workspace_id = match workspace_id {
        Some(id) if id.trim().is_empty() => {
            return Err(AmbientError::Invalid("workspace id must not be blank".to_owned()));
        }
        Some(id) if id.len() > MAX_CONTEXT_ID_BYTES => {
            return Err(AmbientError::Invalid(format!(
                "workspace id must be at most {MAX_CONTEXT_ID_BYTES} bytes"
            )));
        }
        Some(id) => id.to_owned(),
        None => format!("wsp_{}", ulid::Ulid::new()),
    };
    let context = AmbientContext {
        workspace_id,
        project_id: format!("prj_{}", ulid::Ulid::new()),
        task_id: None,
        component: None,
        pins: Vec::new(),
    };
    let marker = dir.join(MARKER_FILE);
    let exists = || AmbientError::MarkerExists { path: marker.clone() };
    if fs::symlink_metadata(&marker).is_ok() {
        return Err(exists());
    }
    let text = render_marker(&name, &context);
    fsutil::write_atomic_default_mode(&marker, text.as_bytes(), false).map_err(|err| match err {
        FsError::AlreadyExists { .. } => exists(),
        other => AmbientError::Fs(other),
    })?;
    Ok(InitOutcome { marker, name, context })
}

/// The marker text, keys in the order schema, workspace_id, project_id, name, pins.
fn render_marker(name: &str, context: &AmbientContext) -> String {
    let pins: Vec<String> = context.pins.iter().map(|pin| quoted(pin)).collect();
    format!(
        "schema = 1\nworkspace_id = {}\nproject_id = {}\nname = {}\npins = [{}]\n",
        quoted(&context.workspace_id),
        quoted(&context.project_id),
        quoted(name),
        pins.join(", "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn config_message(result: Result<Marker, AmbientError>) -> String {
        match result {
            Err(AmbientError::Config(message)) => message,
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    fn parse(text: &str) -> Result<Marker, AmbientError> {
        parse_marker(Path::new("/p/.memoree.toml"), text)
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn is_ulid_id(id: &str, prefix: &str) -> bool {
        id.strip_prefix(prefix)
            .is_some_and(|rest| rest.len() == 26 && rest.chars().all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()))
    }

    #[test]
    fn a_marker_with_all_keys_parses_without_task_or_component() {
        let marker =
            parse("schema = 1\nworkspace_id = \"w\"\nproject_id = \"p\"\nname = \"demo\"\npins = [\"art_1\"]\n")
                .unwrap();
        assert_eq!(marker.name, "demo");
        assert_eq!(marker.context.workspace_id, "w");
        assert_eq!(marker.context.project_id, "p");
        assert_eq!(marker.context.task_id, None);
        assert_eq!(marker.context.pins, ["art_1"]);
    }

    #[test]
    fn schema_and_pins_are_optional_in_a_marker() {
        let marker = parse("workspace_id = \"w\"\nproject_id = \"p\"\nname = \"demo\"\n").unwrap();
        assert!(marker.context.pins.is_empty());
    }

    #[test]
    fn an_unsupported_marker_schema_is_named_before_other_problems() {
        let message = config_message(parse("schema = 2\nfuture = true\n"));
        assert_eq!(message, "unsupported marker schema 2 in /p/.memoree.toml");
    }

    #[test]
    fn unknown_keys_missing_keys_and_blank_values_are_config_errors() {
        let base = "workspace_id = \"w\"\nproject_id = \"p\"\nname = \"n\"\n";
        let message = config_message(parse(&format!("{base}task_id = \"t\"\n")));
        assert_eq!(message, "invalid marker /p/.memoree.toml: unknown key `task_id`");
        let message = config_message(parse("workspace_id = \"w\"\nproject_id = \"p\"\n"));
        assert!(message.ends_with("missing `name`"), "{message}");
        let message = config_message(parse("workspace_id = \" \"\nproject_id = \"p\"\nname = \"n\"\n"));
        assert!(message.ends_with("`workspace_id` must not be blank"), "{message}");
        let message = config_message(parse(&format!("{base}pins = [1]\n")));
        assert!(message.ends_with("`pins` must be an array of strings"), "{message}");
        let message = config_message(parse("workspace_id = "));
        assert!(message.starts_with("invalid marker /p/.memoree.toml: "), "{message}");
    }

    #[test]
    fn the_nearest_marker_is_found_from_a_nested_directory_or_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        fs::write(root.join(MARKER_FILE), "").unwrap();
        let nested = root.join("a/b");
        fs::create_dir_all(&nested).unwrap();
        fs::write(nested.join("file.rs"), "").unwrap();
        assert_eq!(find_marker(&nested).unwrap(), Some(root.join(MARKER_FILE)));
        assert_eq!(
            find_marker(&nested.join("file.rs")).unwrap(),
            Some(root.join(MARKER_FILE))
        );
        fs::write(root.join("a").join(MARKER_FILE), "").unwrap();
        assert_eq!(find_marker(&nested).unwrap(), Some(root.join("a").join(MARKER_FILE)));
    }

    #[test]
    fn a_dangling_symlink_named_like_the_marker_is_found_and_unreadable() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        symlink(root.join("gone"), root.join(MARKER_FILE)).unwrap();
        let found = find_marker(&root).unwrap().unwrap();
        let message = config_message(read_marker(&found));
        assert!(message.starts_with("cannot read marker "), "{message}");
    }

    #[test]
    fn init_writes_the_keys_in_order_and_the_marker_reads_back() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("my-project");
        fs::create_dir(&dir).unwrap();
        let outcome = init_marker(&dir, None, None).unwrap();
        assert_eq!(outcome.marker, dir.canonicalize().unwrap().join(MARKER_FILE));
        assert_eq!(outcome.name, "my-project");
        assert!(
            is_ulid_id(&outcome.context.workspace_id, "wsp_"),
            "{:?}",
            outcome.context
        );
        assert!(is_ulid_id(&outcome.context.project_id, "prj_"), "{:?}", outcome.context);
        let text = fs::read_to_string(&outcome.marker).unwrap();
        assert_eq!(
            text,
            format!(
                "schema = 1\nworkspace_id = \"{}\"\nproject_id = \"{}\"\nname = \"my-project\"\npins = []\n",
                outcome.context.workspace_id, outcome.context.project_id
            )
        );
        let marker = read_marker(&outcome.marker).unwrap();
        assert_eq!(marker.context, outcome.context);
        assert_eq!(entries(&dir), [MARKER_FILE]);
    }

    #[test]
    fn init_uses_the_given_name_and_workspace_and_escapes_them() {
        let tmp = tempfile::tempdir().unwrap();
        let outcome = init_marker(tmp.path(), Some("say \"hi\"\\"), Some("team-ws")).unwrap();
        assert_eq!(outcome.context.workspace_id, "team-ws");
        let marker = read_marker(&outcome.marker).unwrap();
        assert_eq!(marker.name, "say \"hi\"\\");
        assert_eq!(marker.context.workspace_id, "team-ws");
    }

    #[test]
    fn init_refuses_to_replace_a_marker_and_leaves_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        let marker = tmp.path().join(MARKER_FILE);
        fs::write(&marker, "original").unwrap();
        let err = init_marker(tmp.path(), None, None).unwrap_err();
        assert!(matches!(err, AmbientError::MarkerExists { .. }), "{err:?}");
        let expected = tmp.path().canonicalize().unwrap().join(MARKER_FILE);
        assert_eq!(
            err.to_string(),
            format!("refusing to overwrite existing marker {}", expected.display())
        );
        assert_eq!(fs::read_to_string(&marker).unwrap(), "original");
        assert_eq!(entries(tmp.path()), [MARKER_FILE]);
    }

    #[test]
    fn init_refuses_a_dangling_symlink_marker_without_touching_its_target() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("elsewhere");
        symlink(&target, tmp.path().join(MARKER_FILE)).unwrap();
        let err = init_marker(tmp.path(), None, None).unwrap_err();
        assert!(matches!(err, AmbientError::MarkerExists { .. }), "{err:?}");
        assert!(!target.exists());
        assert_eq!(entries(tmp.path()), [MARKER_FILE]);
    }

    #[test]
    fn init_rejects_blank_names_and_workspaces_and_missing_directories() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(matches!(
            init_marker(tmp.path(), Some(" "), None),
            Err(AmbientError::Invalid(_))
        ));
        assert!(matches!(
            init_marker(tmp.path(), None, Some("")),
            Err(AmbientError::Invalid(_))
        ));
        let long = "w".repeat(257);
        assert!(matches!(
            init_marker(tmp.path(), None, Some(&long)),
            Err(AmbientError::Invalid(_))
        ));
        let missing = tmp.path().join("missing");
        assert!(matches!(
            init_marker(&missing, None, None),
            Err(AmbientError::Io { .. })
        ));
        assert!(entries(tmp.path()).is_empty());
    }
}
