//! Client-side ambient context resolution. The daemon never resolves context; the CLI
//! calls [`resolve`] and attaches the result to the ops that need it.
//!
//! Precedence is fixed: an explicit request context, then the session context in
//! `MEMOREE_CONTEXT`, then the nearest `.memoree.toml` marker, then the personal fallback
//! in `config.toml`, else no ambient context.
//!
//! **Invariant:** a higher level short-circuits the lower ones: a session context is used
//! without looking for a marker or reading the config, and the config is read only when
//! no marker exists. A broken nearest marker is an error; it is never skipped in favour of
//! an outer marker or the personal fallback. Resolution never broadens the horizon.

mod config;
mod fields;
mod marker;
mod session;

#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use crate::fsutil::FsError;
use crate::protocol::{AmbientContext, ContextSource, ErrorCode};

pub use config::{Settings, load_settings, read_config};
pub use marker::{InitOutcome, MARKER_FILE, Marker, find_marker, init_marker, read_marker};
pub use session::{
    SESSION_ENV, decode_session_context, derive_task_id, encode_session_context, read_session_context,
    session_context_for_task,
};

/// The implicit sources in the order they are consulted, as `context explain` reports them.
pub const PRECEDENCE: [&str; 3] = ["session", "marker", "personal"];

/// A failure to resolve or create ambient context.
///
/// The `Display` text is complete (it includes the text of any underlying error), so callers
/// render it with `to_string()` rather than by walking `source()`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AmbientError {
    /// A bad `MEMOREE_CONTEXT`, marker or config file (`CONFIG_ERROR`).
    #[error("{0}")]
    Config(String),
    /// A bad argument such as a blank task name or workspace id (`INVALID_REQUEST`).
    #[error("{0}")]
    Invalid(String),
    /// `memoree init` found a marker already in place (`CONFIG_ERROR`).
    #[error("refusing to overwrite existing marker {}", path.display())]
    MarkerExists { path: PathBuf },
    /// An I/O failure outside the files above, such as a missing working directory
    /// (`INTERNAL_ERROR`).
    #[error("failed to {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Publishing the marker failed (`INTERNAL_ERROR`).
    #[error(transparent)]
    Fs(FsError),
}

impl AmbientError {
    /// The wire code the CLI reports for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            AmbientError::Config(_) | AmbientError::MarkerExists { .. } => ErrorCode::ConfigError,
            AmbientError::Invalid(_) => ErrorCode::InvalidRequest,
            AmbientError::Io { .. } | AmbientError::Fs(_) => ErrorCode::InternalError,
        }
    }
}

/// The outcome of ambient resolution. `context` is `None` (and `source` is
/// [`ContextSource::None`]) when nothing applies; the CLI reports that as
/// `NO_AMBIENT_CONTEXT` for ops that need a context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolution {
    pub context: Option<AmbientContext>,
    pub source: ContextSource,
    /// The marker file or config file the context came from.
    pub source_path: Option<PathBuf>,
}

impl Resolution {
    fn found(context: AmbientContext, source: ContextSource, source_path: Option<PathBuf>) -> Self {
        Resolution {
            context: Some(context),
            source,
            source_path,
        }
    }

    fn unresolved() -> Resolution {
        Resolution {
            context: None,
            source: ContextSource::None,
            source_path: None,
        }
    }
}

/// Resolves the ambient context for a request.
///
/// `explicit` is the context the caller put in the request, if any; `env` is the
/// environment lookup; `cwd` is where the marker search starts; `config_path` is the
/// resolved `config.toml` (see [`crate::paths::Paths`]).
pub fn resolve(
    explicit: Option<AmbientContext>,
    env: &dyn Fn(&str) -> Option<OsString>,
    cwd: &Path,
    config_path: &Path,
) -> Result<Resolution, AmbientError> {
    match explicit {
        Some(context) => Ok(Resolution::found(context, ContextSource::Explicit, None)),
        None => resolve_implicit(env, cwd, config_path),
    }
}

fn resolve_implicit(
    env: &dyn Fn(&str) -> Option<OsString>,
    cwd: &Path,
    config_path: &Path,
) -> Result<Resolution, AmbientError> {
    if let Some(context) = read_session_context(env)? {
        return Ok(Resolution::found(context, ContextSource::Session, None));
    }
    if let Some(path) = find_marker(cwd)? {
        let marker = read_marker(&path)?;
        return Ok(Resolution::found(marker.context, ContextSource::Marker, Some(path)));
    }
    match load_settings(config_path)?.personal {
        Some(context) => Ok(Resolution::found(
            context,
            ContextSource::Personal,
            Some(config_path.to_path_buf()),
        )),
        None => Ok(Resolution::unresolved()),
    }
}

/// What `context explain` reports: which implicit source applies and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    /// `Session`, `Marker`, `Personal`, or `None` when nothing applies.
    pub selected: ContextSource,
    /// One human-readable sentence.
    pub summary: String,
    /// The directory the marker search started from, as given.
    pub cwd: PathBuf,
    pub source_path: Option<PathBuf>,
    pub precedence: [&'static str; 3],
    /// The selected context, for callers that also want to show it.
    pub context: Option<AmbientContext>,
}

impl Explanation {
    /// The `context explain` result object: `{selected, summary, cwd, source_path?,
    /// precedence}`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::json!({
            "selected": self.selected.as_str(),
            "summary": self.summary,
            "cwd": self.cwd.to_string_lossy(),
            "precedence": self.precedence,
        });
        if let Some(path) = &self.source_path {
            value["source_path"] = serde_json::Value::from(path.to_string_lossy());
        }
        value
    }
}

/// Explains which implicit source (session, marker, personal) the context would come
/// from. Errors are the same as [`resolve`]'s; finding nothing is not an error here.
pub fn explain(
    env: &dyn Fn(&str) -> Option<OsString>,
    cwd: &Path,
    config_path: &Path,
) -> Result<Explanation, AmbientError> {
    let resolution = resolve_implicit(env, cwd, config_path)?;
    let scope = resolution.context.as_ref().map(describe_scope).unwrap_or_default();
    let summary = match (resolution.source, &resolution.source_path) {
        (ContextSource::Session, _) => {
            format!("using the session context from {SESSION_ENV} ({scope})")
        }
        (ContextSource::Marker, Some(path)) => {
            format!("using the project marker {} ({scope})", path.display())
        }
        (ContextSource::Personal, Some(path)) => {
            format!("using the personal fallback in {} ({scope})", path.display())
        }
        _ => format!(
            "no ambient context: {SESSION_ENV} is unset, no {MARKER_FILE} exists in {} or its \
             parents, and {} has no personal fallback; run `memoree init` or use `memoree session exec`",
            cwd.display(),
            config_path.display()
        ),
    };
    Ok(Explanation {
        selected: resolution.source,
        summary,
        cwd: cwd.to_path_buf(),
        source_path: resolution.source_path,
        precedence: PRECEDENCE,
        context: resolution.context,
    })
}

fn describe_scope(context: &AmbientContext) -> String {
    let mut scope = format!("workspace {}, project {}", context.workspace_id, context.project_id);
    if let Some(task) = &context.task_id {
        scope.push_str(&format!(", task {task}"));
    }
    if let Some(component) = &context.component {
        scope.push_str(&format!(", component {component}"));
    }
    scope
}
