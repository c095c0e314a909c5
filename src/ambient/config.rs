//! The user's `config.toml`: a schema number, the optional personal fallback context and the
//! optional `[remember] compiler` command. There is deliberately no default-horizon or model
//! setting.

use std::fs;
use std::io;
use std::path::Path;

use crate::protocol::AmbientContext;

use super::AmbientError;
use super::fields::{reject_unknown_keys, required_text, string_list, unsupported_schema};

/// `remote` (the daemon's TLS listener, `daemon::remote`) and `tls` (a client's TLS
/// credentials, `client::tls`) are read by their own modules.
const CONFIG_KEYS: &[&str] = &[
    "schema",
    "personal",
    "personal_fallback",
    "remember",
    "store",
    "remote",
    "tls",
];
const PERSONAL_KEYS: &[&str] = &["workspace_id", "project_id", "pins"];
const REMEMBER_KEYS: &[&str] = &["compiler"];
const STORE_KEYS: &[&str] = &["url", "wait", "password_file"];

/// The settings read from `config.toml`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// The `[personal]` (or `[personal_fallback]`) table as a context without task or
    /// component: the last resort of ambient resolution.
    pub personal: Option<AmbientContext>,
    /// `[remember] compiler = ["program", "arg", …]`: the claim compiler command for
    /// `memoree remember` when `MEMOREE_COMPILER` is unset.
    pub remember_compiler: Option<Vec<String>>,
    /// `[store] url = "postgres://…"`: the PostgreSQL database `memoree serve` uses instead of
    /// the embedded store in the data directory (`--store` overrides it).
    pub store_url: Option<String>,
    /// `[store] wait = SECONDS`: how long `memoree serve` waits for its PostgreSQL database at
    /// startup (`--store-wait` overrides it).
    pub store_wait_secs: Option<u64>,
    /// `[store] password_file = "PATH"` (relative to the config file's directory): the
    /// PostgreSQL password, for a store URL without one (`cli::store_url`).
    pub store_password_file: Option<std::path::PathBuf>,
}

/// Loads `config.toml` (with `extensions.toml` beside it, see [`read_config`]). A missing
/// file gives the default settings; an unreadable or malformed one is an
/// [`AmbientError::Config`] that includes the TOML error text.
pub fn load_settings(path: &Path) -> Result<Settings, AmbientError> {
    match read_config(path).map_err(AmbientError::Config)? {
        Some(text) => parse_settings(path, &text),
        None => Ok(Settings::default()),
    }
}

/// The tables `extensions.toml` may hold: Memoree's own, which the reference
/// implementation's strict `config.toml` parser would refuse.
const EXTENSION_KEYS: &[&str] = &["remember", "store", "remote", "tls"];

/// The config text at `path` (`config.toml`) merged with `extensions.toml` beside it, or
/// `None` when neither exists. `extensions.toml` holds only Memoree's own tables
/// (`EXTENSION_KEYS`); a table set in both files is an error. Every reader of the config
/// (`load_settings`, `daemon::remote`, `client::tls`) reads it through here, and relative
/// paths in either file are anchored at their shared directory.
pub fn read_config(path: &Path) -> Result<Option<String>, String> {
    let read = |path: &Path| match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(format!("cannot read config {}: {err}", path.display())),
    };
    let extensions_path = path.with_file_name(crate::paths::EXTENSIONS_FILE);
    let (config, extensions) = (read(path)?, read(&extensions_path)?);
    let Some(extensions) = extensions else {
        return Ok(config);
    };
    let parse = |path: &Path, text: &str| {
        text.parse::<toml::Table>()
            .map_err(|err| format!("invalid config {}: {err}", path.display()))
    };
    let extra = parse(&extensions_path, &extensions)?;
    reject_unknown_keys(&extra, EXTENSION_KEYS)
        .map_err(|problem| format!("invalid config {}: {problem}", extensions_path.display()))?;
    let mut merged = match &config {
        Some(text) => parse(path, text)?,
        None => toml::Table::new(),
    };
    for (key, value) in extra {
        if merged.contains_key(&key) {
            return Err(format!(
                "invalid config: [{key}] is set in both {} and {}; keep it in one",
                path.display(),
                extensions_path.display()
            ));
        }
        merged.insert(key, value);
    }
    toml::to_string(&merged)
        .map(Some)
        .map_err(|err| format!("invalid config {}: {err}", extensions_path.display()))
}

fn parse_settings(path: &Path, text: &str) -> Result<Settings, AmbientError> {
    let invalid = |problem: String| AmbientError::Config(format!("invalid config {}: {problem}", path.display()));
    let table: toml::Table = text.parse().map_err(|err: toml::de::Error| invalid(err.to_string()))?;
    if let Some(schema) = unsupported_schema(&table) {
        return Err(AmbientError::Config(format!(
            "unsupported config schema {schema} in {}",
            path.display()
        )));
    }
    reject_unknown_keys(&table, CONFIG_KEYS).map_err(invalid)?;
    let personal = match (table.get("personal"), table.get("personal_fallback")) {
        (Some(_), Some(_)) => {
            return Err(invalid("set only one of `personal` and `personal_fallback`".to_owned()));
        }
        (Some(value), None) | (None, Some(value)) => {
            let Some(personal) = value.as_table() else {
                return Err(invalid("`personal` must be a table".to_owned()));
            };
            Some(parse_personal(personal).map_err(|problem| invalid(format!("[personal]: {problem}")))?)
        }
        (None, None) => None,
    };
    let remember_compiler = match table.get("remember") {
        None => None,
        Some(toml::Value::Table(remember)) => {
            parse_remember(remember).map_err(|problem| invalid(format!("[remember]: {problem}")))?
        }
        Some(_) => return Err(invalid("`remember` must be a table".to_owned())),
    };
    let (store_url, store_password_file) = match table.get("store") {
        None => (None, None),
        Some(toml::Value::Table(store)) => {
            let url = parse_store(store).map_err(|problem| invalid(format!("[store]: {problem}")))?;
            let password_file = match store.get("password_file") {
                None => None,
                Some(toml::Value::String(file)) if !file.is_empty() => {
                    Some(path.parent().unwrap_or(Path::new(".")).join(file))
                }
                Some(_) => return Err(invalid("[store]: `password_file` must be a path".to_owned())),
            };
            (url, password_file)
        }
        Some(_) => return Err(invalid("`store` must be a table".to_owned())),
    };
    let store_wait_secs = match table.get("store") {
        Some(toml::Value::Table(store)) => {
            parse_store_wait(store).map_err(|problem| invalid(format!("[store]: {problem}")))?
        }
        _ => None,
    };
    Ok(Settings {
        personal,
        remember_compiler,
        store_url,
        store_wait_secs,
        store_password_file,
    })
}

fn parse_store(table: &toml::Table) -> Result<Option<String>, String> {
    reject_unknown_keys(table, STORE_KEYS)?;
    match table.get("url") {
        None => Ok(None),
        Some(toml::Value::String(url)) if crate::store::pg::is_postgres_url(url) => Ok(Some(url.clone())),
        Some(toml::Value::String(_)) => Err("`url` must be a postgres:// or postgresql:// URL".to_owned()),
        Some(_) => Err("`url` must be a string".to_owned()),
    }
}

fn parse_store_wait(table: &toml::Table) -> Result<Option<u64>, String> {
    match table.get("wait") {
        None => Ok(None),
        Some(toml::Value::Integer(seconds)) if *seconds >= 0 => Ok(Some(*seconds as u64)),
        Some(_) => Err("`wait` must be a whole number of seconds, 0 or more".to_owned()),
    }
}

fn parse_remember(table: &toml::Table) -> Result<Option<Vec<String>>, String> {
    reject_unknown_keys(table, REMEMBER_KEYS)?;
    if table.get("compiler").is_none() {
        return Ok(None);
    }
    let argv = string_list(table, "compiler")?;
    match argv.first() {
        Some(program) if !program.trim().is_empty() => Ok(Some(argv)),
        _ => Err("`compiler` must start with a program to run".to_owned()),
    }
}

fn parse_personal(table: &toml::Table) -> Result<AmbientContext, String> {
    reject_unknown_keys(table, PERSONAL_KEYS)?;
    Ok(AmbientContext {
        workspace_id: required_text(table, "workspace_id")?,
        project_id: required_text(table, "project_id")?,
        task_id: None,
        component: None,
        pins: string_list(table, "pins")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Settings, AmbientError> {
        parse_settings(Path::new("/c/config.toml"), text)
    }

    fn config_message(text: &str) -> String {
        match parse(text) {
            Err(AmbientError::Config(message)) => message,
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    #[test]
    fn a_missing_or_empty_config_gives_default_settings() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(
            load_settings(&tmp.path().join("config.toml")).unwrap(),
            Settings::default()
        );
        assert_eq!(parse("").unwrap(), Settings::default());
        assert_eq!(parse("schema = 1\n").unwrap(), Settings::default());
    }

    #[test]
    fn the_store_table_names_a_postgresql_database_and_nothing_else() {
        let settings = parse("[store]\nurl = \"postgres://memoree@db.internal/memoree\"\n").unwrap();
        assert_eq!(
            settings.store_url.as_deref(),
            Some("postgres://memoree@db.internal/memoree")
        );
        assert_eq!(parse("[store]\n").unwrap().store_url, None);
        for (text, problem) in [
            ("[store]\nurl = \"sqlite:///tmp/x\"\n", "postgres:// or postgresql://"),
            ("[store]\nurl = 5\n", "must be a string"),
            ("[store]\nhost = \"db\"\n", "host"),
            ("store = \"postgres://x\"\n", "must be a table"),
        ] {
            let message = config_message(text);
            assert!(message.contains(problem), "{text}: {message}");
        }
    }

    #[test]
    fn the_store_table_bounds_the_startup_wait_in_whole_seconds() {
        let settings = parse("[store]\nurl = \"postgres://memoree@db/memoree\"\nwait = 120\n").unwrap();
        assert_eq!(settings.store_wait_secs, Some(120));
        assert_eq!(parse("[store]\nwait = 0\n").unwrap().store_wait_secs, Some(0));
        assert_eq!(parse("[store]\n").unwrap().store_wait_secs, None);
        for text in [
            "[store]\nwait = -1\n",
            "[store]\nwait = \"60s\"\n",
            "[store]\nwait = 1.5\n",
        ] {
            let message = config_message(text);
            assert!(message.contains("whole number of seconds"), "{text}: {message}");
        }
    }

    #[test]
    fn the_personal_table_and_its_alias_give_a_fallback_context() {
        for table in ["personal", "personal_fallback"] {
            let settings = parse(&format!(
                "[{table}]\nworkspace_id = \"wsp_me\"\nproject_id = \"prj_notes\"\npins = [\"art_1\"]\n"
            ))
            .unwrap();
            let personal = settings.personal.unwrap();
            assert_eq!(personal.workspace_id, "wsp_me");
            assert_eq!(personal.project_id, "prj_notes");
            assert_eq!(personal.pins, ["art_1"]);
            assert_eq!(personal.task_id, None);
        }
    }

    #[test]
    fn other_schemas_unknown_keys_and_bad_tables_are_config_errors() {
        assert_eq!(
            config_message("schema = 2\n"),
            "unsupported config schema 2 in /c/config.toml"
        );
        assert_eq!(
            config_message("default_horizon = \"workspace\"\n"),
            "invalid config /c/config.toml: unknown key `default_horizon`"
        );
        let message = config_message("[personal]\nworkspace_id = \"w\"\nproject_id = \"p\"\nmodel = \"x\"\n");
        assert!(message.ends_with("[personal]: unknown key `model`"), "{message}");
        let message = config_message("[personal]\nworkspace_id = \"w\"\n");
        assert!(message.ends_with("missing `project_id`"), "{message}");
        let message = config_message("personal = 3\n");
        assert!(message.ends_with("`personal` must be a table"), "{message}");
        let message = config_message(
            "[personal]\nworkspace_id = \"w\"\nproject_id = \"p\"\n[personal_fallback]\nworkspace_id = \"w\"\nproject_id = \"p\"\n",
        );
        assert!(message.contains("only one of"), "{message}");
    }

    #[test]
    fn the_remember_table_names_a_compiler_command() {
        let settings = parse("[remember]\ncompiler = [\"/bin/sh\", \"compile.sh\"]\n").unwrap();
        assert_eq!(settings.remember_compiler.unwrap(), ["/bin/sh", "compile.sh"]);
        assert_eq!(parse("[remember]\n").unwrap(), Settings::default());
        let message = config_message("[remember]\ncompiler = []\n");
        assert!(
            message.ends_with("[remember]: `compiler` must start with a program to run"),
            "{message}"
        );
        let message = config_message("[remember]\ncompiler = \"codex\"\n");
        assert!(message.ends_with("`compiler` must be an array of strings"), "{message}");
        let message = config_message("[remember]\nmodel = \"x\"\n");
        assert!(message.ends_with("[remember]: unknown key `model`"), "{message}");
        let message = config_message("remember = 1\n");
        assert!(message.ends_with("`remember` must be a table"), "{message}");
    }

    #[test]
    fn malformed_toml_is_a_config_error_that_includes_the_toml_text() {
        let message = config_message("schema = = 1\n");
        assert!(message.starts_with("invalid config /c/config.toml: "), "{message}");
        assert!(message.len() > "invalid config /c/config.toml: ".len());
    }
    #[test]
    fn memoree_tables_may_live_in_extensions_toml_so_config_toml_stays_readable_by_the_reference() {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("config.toml");
        let extensions = tmp.path().join(crate::paths::EXTENSIONS_FILE);
        // config.toml holds only what the reference's strict parser accepts.
        fs::write(
            &config,
            "schema = 1\n[personal]\nworkspace_id = \"wsp_a\"\nproject_id = \"prj_a\"\n",
        )
        .unwrap();
        fs::write(
            &extensions,
            "[store]\nurl = \"postgres://memoree@db/memoree\"\npassword_file = \"pw\"\n\
             [remember]\ncompiler = [\"/bin/sh\", \"c.sh\"]\n",
        )
        .unwrap();
        let settings = load_settings(&config).unwrap();
        assert_eq!(settings.personal.unwrap().workspace_id, "wsp_a");
        assert_eq!(settings.store_url.as_deref(), Some("postgres://memoree@db/memoree"));
        assert_eq!(settings.store_password_file, Some(tmp.path().join("pw")));
        assert_eq!(settings.remember_compiler.unwrap(), ["/bin/sh", "c.sh"]);
        // Without config.toml, extensions.toml alone is read.
        fs::remove_file(&config).unwrap();
        assert!(load_settings(&config).unwrap().store_url.is_some());

        // A table in both files is ambiguous; a reference key in extensions.toml is refused.
        fs::write(&config, "[store]\nurl = \"postgres://other/x\"\n").unwrap();
        let both = read_config(&config).unwrap_err();
        assert!(both.contains("[store] is set in both"), "{both}");
        fs::write(&config, "").unwrap();
        fs::write(&extensions, "[personal]\nworkspace_id = \"wsp_a\"\n").unwrap();
        let foreign = read_config(&config).unwrap_err();
        assert!(foreign.contains("unknown key `personal`"), "{foreign}");
        fs::write(&extensions, "[tls\n").unwrap();
        let malformed = read_config(&config).unwrap_err();
        assert!(malformed.contains("extensions.toml"), "{malformed}");
    }
}
