//! Ambient context for MCP tool calls, resolved on the client side like the CLI's.
//!
//! Precedence: the session context in `MEMOREE_CONTEXT`; then the nearest `.memoree.toml`
//! of the MCP host's roots, in the host's order (when the host offers roots); then the
//! nearest marker from the server's working directory; then the `[personal]` fallback of
//! `config.toml`. Roots come before the working directory because a host states them for
//! this session, while the working directory is wherever the host happened to start the
//! server (often the home directory). A broken marker is an error, never skipped.
//!
//! **Invariant:** resolution reads files only; it never creates a marker or broadens a
//! horizon, and a missing context is a `NO_AMBIENT_CONTEXT` error that says how to fix it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::ambient::{self, AmbientError, find_marker, read_marker, read_session_context};
use crate::paths::Paths;
use crate::protocol::{AmbientContext, ContextSource, ErrorBody, ErrorCode, Operation};

fn env_lookup(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// Resolves the context for `op`, searching `roots` (local directories the host named).
pub fn resolve(op: Operation, roots: &[PathBuf]) -> Result<(AmbientContext, ContextSource), ErrorBody> {
    let cwd = std::env::current_dir().map_err(|e| {
        ErrorBody::new(
            ErrorCode::InternalError,
            format!("I/O error: cannot read the working directory: {e}"),
        )
    })?;
    let config = Paths::from_env()
        .map_err(|e| ErrorBody::new(e.code(), e.to_string()))?
        .config_file;
    match resolve_from(&env_lookup, roots, &cwd, &config).map_err(|e| ErrorBody::new(e.code(), e.to_string()))? {
        Some(found) => Ok(found),
        None => Err(no_context(op, roots, &cwd)),
    }
}

/// The resolution itself, with every input injected.
pub fn resolve_from(
    env: &dyn Fn(&str) -> Option<OsString>,
    roots: &[PathBuf],
    cwd: &Path,
    config: &Path,
) -> Result<Option<(AmbientContext, ContextSource)>, AmbientError> {
    if let Some(context) = read_session_context(env)? {
        return Ok(Some((context, ContextSource::Session)));
    }
    // A root that is not a local directory (gone, or on another machine) names no project.
    for root in roots.iter().filter(|root| root.is_dir()) {
        if let Some(path) = find_marker(root)? {
            return Ok(Some((read_marker(&path)?.context, ContextSource::Marker)));
        }
    }
    let resolution = ambient::resolve(None, env, cwd, config)?;
    Ok(resolution.context.map(|context| (context, resolution.source)))
}

fn no_context(op: Operation, roots: &[PathBuf], cwd: &Path) -> ErrorBody {
    let roots: Vec<String> = roots.iter().map(|root| root.display().to_string()).collect();
    ErrorBody::new(
        ErrorCode::NoAmbientContext,
        format!(
            "no ambient context for {}: {} is unset and no {} was found in the MCP host's roots, the server's working directory or their parents, and config.toml has no [personal] fallback",
            op.wire_name(),
            ambient::SESSION_ENV,
            ambient::MARKER_FILE
        ),
    )
    .with_hint(
        "Run `memoree init` in the project directory (the MCP server's working directory or a root the host shares), or set MEMOREE_CONTEXT in the MCP server's environment, then call the tool again.",
    )
    .with_details(json!({"cwd": cwd.display().to_string(), "roots": roots}))
}

/// The local directory a root URI names: `file://` URIs only (host empty or `localhost`),
/// percent-decoded; anything else is ignored.
pub fn root_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let decoded = percent_decode(path)?;
    use std::os::unix::ffi::OsStringExt;
    Some(PathBuf::from(OsString::from_vec(decoded)))
}

fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(index + 1..index + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                index += 3;
            }
            b'?' | b'#' => break,
            byte => {
                out.push(byte);
                index += 1;
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(dir: &Path, project: &str) {
        std::fs::write(
            dir.join(".memoree.toml"),
            format!("schema = 1\nworkspace_id = \"w\"\nproject_id = \"{project}\"\nname = \"t\"\npins = []\n"),
        )
        .unwrap();
    }

    #[test]
    fn file_uris_become_paths_and_other_schemes_are_ignored() {
        assert_eq!(root_path("file:///home/a%20b/x"), Some(PathBuf::from("/home/a b/x")));
        assert_eq!(root_path("file://localhost/srv/p"), Some(PathBuf::from("/srv/p")));
        assert_eq!(root_path("https://example.com/x"), None);
        assert_eq!(root_path("file://host/x"), None);
        assert_eq!(root_path("file:///bad%zz"), None);
    }

    #[test]
    fn the_session_beats_roots_which_beat_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let (root, cwd) = (dir.path().join("root"), dir.path().join("cwd"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        marker(&root, "from_root");
        marker(&cwd, "from_cwd");
        let config = dir.path().join("config.toml");
        let no_env = |_: &str| None;
        let project = |roots: &[PathBuf], env: &dyn Fn(&str) -> Option<OsString>| {
            resolve_from(env, roots, &cwd, &config)
                .unwrap()
                .map(|(c, s)| (c.project_id, s))
        };
        assert_eq!(
            project(&[], &no_env),
            Some(("from_cwd".to_owned(), ContextSource::Marker))
        );
        assert_eq!(
            project(&[dir.path().join("nowhere"), root.clone()], &no_env),
            Some(("from_root".to_owned(), ContextSource::Marker))
        );
        let session = ambient::encode_session_context(&AmbientContext {
            workspace_id: "w".to_owned(),
            project_id: "from_env".to_owned(),
            task_id: None,
            component: None,
            pins: Vec::new(),
        });
        let env = move |name: &str| (name == ambient::SESSION_ENV).then(|| OsString::from(session.clone()));
        assert_eq!(
            project(std::slice::from_ref(&root), &env),
            Some(("from_env".to_owned(), ContextSource::Session))
        );
    }

    #[test]
    fn a_broken_root_marker_is_an_error_not_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".memoree.toml"), "not toml [").unwrap();
        let result = resolve_from(
            &|_| None,
            &[dir.path().to_path_buf()],
            dir.path(),
            &dir.path().join("c"),
        );
        assert!(matches!(result, Err(AmbientError::Config(_))), "{result:?}");
    }
}
