//! Precedence tests for ambient resolution and `context explain`.

use std::fs;
use std::os::unix::fs::symlink;

use super::*;

const SESSION: &str = r#"{"workspace_id":"wsp_session","project_id":"prj_session","task_id":"tsk_s","pins":[]}"#;
const PERSONAL: &str = "[personal]\nworkspace_id = \"wsp_me\"\nproject_id = \"prj_me\"\n";
const BROKEN_TOML: &str = "this is = = not toml";

fn marker_text(project: &str) -> String {
    format!("schema = 1\nworkspace_id = \"wsp_team\"\nproject_id = \"{project}\"\nname = \"demo\"\npins = []\n")
}

/// A temp tree: `root/` (canonical) with a `config.toml` path next to it.
struct Tree {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    config: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("repo");
        fs::create_dir(&root).unwrap();
        Tree {
            config: base.join("config.toml"),
            root,
            _tmp: tmp,
        }
    }

    fn dir(&self, rel: &str) -> PathBuf {
        let dir = self.root.join(rel);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn marker(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.dir(rel).join(MARKER_FILE);
        fs::write(&path, text).unwrap();
        path
    }

    fn config(&self, text: &str) {
        fs::write(&self.config, text).unwrap();
    }
}

fn no_env(_: &str) -> Option<OsString> {
    None
}

fn session_env(value: &'static str) -> impl Fn(&str) -> Option<OsString> {
    move |name| (name == SESSION_ENV).then(|| OsString::from(value))
}

fn explicit() -> AmbientContext {
    AmbientContext {
        workspace_id: "wsp_explicit".to_owned(),
        project_id: "prj_explicit".to_owned(),
        task_id: None,
        component: Some("ui".to_owned()),
        pins: Vec::new(),
    }
}

fn config_error(result: Result<Resolution, AmbientError>) -> String {
    match result {
        Err(AmbientError::Config(message)) => message,
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn an_explicit_context_beats_a_session_context_without_reading_it() {
    let tree = Tree::new();
    tree.marker("", BROKEN_TOML);
    let env = session_env("{not json");
    let resolution = resolve(Some(explicit()), &env, &tree.root, &tree.config).unwrap();
    assert_eq!(resolution.source, ContextSource::Explicit);
    assert_eq!(resolution.context, Some(explicit()));
    assert_eq!(resolution.source_path, None);
}

#[test]
fn a_session_context_beats_a_marker_without_reading_the_marker_or_config() {
    let tree = Tree::new();
    tree.marker("", BROKEN_TOML);
    tree.config(BROKEN_TOML);
    let resolution = resolve(None, &session_env(SESSION), &tree.root, &tree.config).unwrap();
    assert_eq!(resolution.source, ContextSource::Session);
    let context = resolution.context.unwrap();
    assert_eq!(context.workspace_id, "wsp_session");
    assert_eq!(context.task_id.as_deref(), Some("tsk_s"));
    assert_eq!(resolution.source_path, None);
}

#[test]
fn a_blank_session_variable_falls_through_to_the_marker() {
    let tree = Tree::new();
    let marker = tree.marker("", &marker_text("prj_marker"));
    let resolution = resolve(None, &session_env("   "), &tree.root, &tree.config).unwrap();
    assert_eq!(resolution.source, ContextSource::Marker);
    assert_eq!(resolution.source_path, Some(marker));
}

#[test]
fn an_invalid_session_context_is_an_error_even_with_a_valid_marker() {
    let tree = Tree::new();
    tree.marker("", &marker_text("prj_marker"));
    let env = session_env(r#"{"workspace_id":"w","project_id":" ","pins":[]}"#);
    let message = config_error(resolve(None, &env, &tree.root, &tree.config));
    assert_eq!(message, "invalid MEMOREE_CONTEXT: project_id must not be blank");
}

#[test]
fn a_marker_beats_the_personal_fallback_without_parsing_the_config() {
    let tree = Tree::new();
    let marker = tree.marker("", &marker_text("prj_marker"));
    tree.config(BROKEN_TOML);
    let cwd = tree.dir("src/deep");
    let resolution = resolve(None, &no_env, &cwd, &tree.config).unwrap();
    assert_eq!(resolution.source, ContextSource::Marker);
    assert_eq!(resolution.source_path, Some(marker));
    let context = resolution.context.unwrap();
    assert_eq!(context.project_id, "prj_marker");
    assert_eq!(context.task_id, None);
    assert_eq!(context.component, None);
}

#[test]
fn the_nearest_marker_beats_an_outer_one() {
    let tree = Tree::new();
    tree.marker("", &marker_text("prj_outer"));
    let inner = tree.marker("sub", &marker_text("prj_inner"));
    let cwd = tree.dir("sub/x");
    let resolution = resolve(None, &no_env, &cwd, &tree.config).unwrap();
    assert_eq!(resolution.context.unwrap().project_id, "prj_inner");
    assert_eq!(resolution.source_path, Some(inner));
}

#[test]
fn the_personal_fallback_applies_when_no_marker_exists() {
    let tree = Tree::new();
    tree.config(PERSONAL);
    let resolution = resolve(None, &no_env, &tree.root, &tree.config).unwrap();
    assert_eq!(resolution.source, ContextSource::Personal);
    assert_eq!(resolution.context.unwrap().workspace_id, "wsp_me");
    assert_eq!(resolution.source_path, Some(tree.config.clone()));
}

#[test]
fn nothing_resolves_without_session_marker_or_personal_fallback() {
    let tree = Tree::new();
    let resolution = resolve(None, &no_env, &tree.root, &tree.config).unwrap();
    assert_eq!(resolution, Resolution::unresolved());
    tree.config("schema = 1\n");
    let resolution = resolve(None, &no_env, &tree.root, &tree.config).unwrap();
    assert_eq!(resolution.source, ContextSource::None);
}

#[test]
fn a_malformed_config_is_an_error_when_it_is_consulted() {
    let tree = Tree::new();
    tree.config(BROKEN_TOML);
    let message = config_error(resolve(None, &no_env, &tree.root, &tree.config));
    assert!(message.starts_with("invalid config "), "{message}");
}

#[test]
fn a_broken_nearest_marker_is_an_error_despite_an_outer_marker_and_a_personal_fallback() {
    let tree = Tree::new();
    tree.marker("", &marker_text("prj_outer"));
    tree.marker("sub", "workspace_id = \"w\"\n");
    tree.config(PERSONAL);
    let cwd = tree.dir("sub/x");
    let message = config_error(resolve(None, &no_env, &cwd, &tree.config));
    assert!(message.starts_with("invalid marker "), "{message}");
    assert!(message.contains("sub/.memoree.toml"), "{message}");
}

#[test]
fn a_dangling_symlink_named_like_the_marker_counts_as_a_broken_marker() {
    let tree = Tree::new();
    tree.marker("", &marker_text("prj_outer"));
    tree.config(PERSONAL);
    let sub = tree.dir("sub");
    symlink(sub.join("missing.toml"), sub.join(MARKER_FILE)).unwrap();
    let message = config_error(resolve(None, &no_env, &sub, &tree.config));
    assert!(message.starts_with("cannot read marker "), "{message}");
}

#[test]
fn a_directory_named_like_the_marker_counts_as_a_broken_marker() {
    let tree = Tree::new();
    tree.config(PERSONAL);
    tree.dir(MARKER_FILE);
    let message = config_error(resolve(None, &no_env, &tree.root, &tree.config));
    assert!(message.starts_with("cannot read marker "), "{message}");
}

#[test]
fn a_symlinked_working_directory_is_canonicalized_before_the_search() {
    let tree = Tree::new();
    tree.marker("", &marker_text("prj_marker"));
    let real = tree.dir("real");
    let elsewhere = tempfile::tempdir().unwrap();
    let link = elsewhere.path().join("link");
    symlink(&real, &link).unwrap();
    let resolution = resolve(None, &no_env, &link, &tree.config).unwrap();
    assert_eq!(resolution.source, ContextSource::Marker);
}

#[test]
fn a_missing_working_directory_is_an_internal_error() {
    let tree = Tree::new();
    let err = resolve(None, &no_env, &tree.root.join("gone"), &tree.config).unwrap_err();
    assert!(matches!(err, AmbientError::Io { .. }), "{err:?}");
    assert_eq!(err.code(), ErrorCode::InternalError);
}

#[test]
fn explain_names_the_marker_that_applies() {
    let tree = Tree::new();
    let marker = tree.marker("", &marker_text("prj_marker"));
    let explanation = explain(&no_env, &tree.root, &tree.config).unwrap();
    assert_eq!(explanation.selected, ContextSource::Marker);
    assert_eq!(explanation.source_path, Some(marker.clone()));
    assert!(explanation.summary.contains("prj_marker"), "{}", explanation.summary);
    let json = explanation.to_json();
    assert_eq!(json["selected"], "marker");
    assert_eq!(json["precedence"], serde_json::json!(["session", "marker", "personal"]));
    assert_eq!(json["source_path"], marker.to_string_lossy().as_ref());
    assert_eq!(json["cwd"], tree.root.to_string_lossy().as_ref());
}

#[test]
fn explain_reports_session_and_personal_sources() {
    let tree = Tree::new();
    let explanation = explain(&session_env(SESSION), &tree.root, &tree.config).unwrap();
    assert_eq!(explanation.selected, ContextSource::Session);
    assert!(explanation.to_json().get("source_path").is_none());

    tree.config(PERSONAL);
    let explanation = explain(&no_env, &tree.root, &tree.config).unwrap();
    assert_eq!(explanation.selected, ContextSource::Personal);
    assert_eq!(explanation.source_path, Some(tree.config.clone()));
}

#[test]
fn explain_succeeds_with_none_selected_when_nothing_applies() {
    let tree = Tree::new();
    let explanation = explain(&no_env, &tree.root, &tree.config).unwrap();
    assert_eq!(explanation.selected, ContextSource::None);
    assert_eq!(explanation.to_json()["selected"], "none");
    assert!(explanation.summary.contains("memoree init"), "{}", explanation.summary);
}

#[test]
fn explain_fails_on_a_broken_marker_like_resolution_does() {
    let tree = Tree::new();
    tree.marker("", BROKEN_TOML);
    assert!(matches!(
        explain(&no_env, &tree.root, &tree.config),
        Err(AmbientError::Config(_))
    ));
}

#[test]
fn error_codes_follow_the_error_kind() {
    assert_eq!(AmbientError::Config(String::new()).code(), ErrorCode::ConfigError);
    assert_eq!(
        AmbientError::MarkerExists { path: PathBuf::new() }.code(),
        ErrorCode::ConfigError
    );
    assert_eq!(AmbientError::Invalid(String::new()).code(), ErrorCode::InvalidRequest);
}
