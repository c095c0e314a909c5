//! The environment a compiler process receives: a short allow-list, never API keys, except
//! `CODEX_API_KEY` for Codex when the human explicitly permitted it for this invocation.

use std::ffi::OsString;
use std::path::Path;

use super::CompilerSpec;
use crate::caller::CallerError;

/// The only variables copied from the caller's environment into a compiler's.
pub const ENV_ALLOW_LIST: [&str; 9] = [
    "HOME",
    "CODEX_HOME",
    "PATH",
    "TMPDIR",
    "LANG",
    "LC_ALL",
    "TERM",
    "USER",
    "LOGNAME",
];

/// The file consulted for `OPENAI_API_KEY=` when no key is in the environment.
const OPENAI_ENV_FILE: &str = ".openai_env";

/// Builds the child environment from `lookup` (normally `std::env::var_os`).
pub(crate) fn child_env(
    spec: &CompilerSpec,
    lookup: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Vec<(String, OsString)>, CallerError> {
    let mut env: Vec<(String, OsString)> = ENV_ALLOW_LIST
        .iter()
        .filter_map(|name| lookup(name).map(|value| ((*name).to_owned(), value)))
        .collect();
    if let CompilerSpec::Codex { allow_api_key: true } = spec {
        env.push(("CODEX_API_KEY".to_owned(), api_key(lookup)?));
    }
    Ok(env)
}

/// Finds the key for an explicitly permitted API-key fallback: `CODEX_API_KEY`, then
/// `OPENAI_API_KEY`, then an `OPENAI_API_KEY=` line in `~/.openai_env` (read, never run).
fn api_key(lookup: &dyn Fn(&str) -> Option<OsString>) -> Result<OsString, CallerError> {
    let non_empty = |name: &str| lookup(name).filter(|v| !v.is_empty());
    if let Some(key) = non_empty("CODEX_API_KEY").or_else(|| non_empty("OPENAI_API_KEY")) {
        return Ok(key);
    }
    let from_file = non_empty("HOME").and_then(|home| {
        let contents = std::fs::read_to_string(Path::new(&home).join(OPENAI_ENV_FILE)).ok()?;
        key_from_env_file(&contents)
    });
    from_file.map(OsString::from).ok_or_else(|| {
        CallerError::Config(
            "--allow-api-key was given but no API key was found in CODEX_API_KEY, \
             OPENAI_API_KEY or an OPENAI_API_KEY= line in ~/.openai_env; run `codex login` \
             instead, or pass --raw to store the note without claims"
                .to_owned(),
        )
    })
}

/// Reads the last `OPENAI_API_KEY=` assignment of a shell-style env file. An `export `
/// prefix and one pair of matching surrounding quotes are stripped.
pub(crate) fn key_from_env_file(contents: &str) -> Option<String> {
    contents
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = line.strip_prefix("export ").map_or(line, str::trim_start);
            let value = line.strip_prefix("OPENAI_API_KEY=")?.trim();
            let unquoted = ['"', '\'']
                .iter()
                .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
                .unwrap_or(value);
            (!unquoted.is_empty()).then(|| unquoted.to_owned())
        })
        .next_back()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn lookup_from(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn names(env: &[(String, OsString)]) -> Vec<&str> {
        env.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn only_allow_listed_variables_reach_the_compiler() {
        let lookup = lookup_from(&[
            ("HOME", "/home/u"),
            ("PATH", "/bin"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("MEMOREE_CONTEXT", "{}"),
        ]);
        let spec = CompilerSpec::Command {
            program: "x".into(),
            args: vec![],
        };
        assert_eq!(names(&child_env(&spec, &lookup).unwrap()), vec!["HOME", "PATH"]);
        let codex = CompilerSpec::Codex { allow_api_key: false };
        assert_eq!(names(&child_env(&codex, &lookup).unwrap()), vec!["HOME", "PATH"]);
    }

    #[test]
    fn a_permitted_api_key_is_passed_as_codex_api_key_only() {
        let codex = CompilerSpec::Codex { allow_api_key: true };
        let env = child_env(&codex, &lookup_from(&[("OPENAI_API_KEY", "sk-1")])).unwrap();
        assert_eq!(env, vec![("CODEX_API_KEY".to_owned(), OsString::from("sk-1"))]);
        let env = child_env(
            &codex,
            &lookup_from(&[("CODEX_API_KEY", "ck"), ("OPENAI_API_KEY", "sk")]),
        )
        .unwrap();
        assert_eq!(env[0].1, "ck");
    }

    #[test]
    fn a_missing_permitted_key_is_a_config_error() {
        let home = tempfile::tempdir().unwrap();
        let home_str = home.path().to_str().unwrap();
        let codex = CompilerSpec::Codex { allow_api_key: true };
        let error = child_env(&codex, &lookup_from(&[("HOME", home_str)])).unwrap_err();
        assert!(matches!(error, CallerError::Config(ref m) if m.contains("codex login")));
        std::fs::write(
            home.path().join(".openai_env"),
            "# keys\nexport OPENAI_API_KEY='sk-file'\n",
        )
        .unwrap();
        let env = child_env(&codex, &lookup_from(&[("HOME", home_str)])).unwrap();
        assert_eq!(env.last().unwrap().1, "sk-file");
    }

    #[test]
    fn env_file_values_lose_export_and_matching_quotes_only() {
        assert_eq!(key_from_env_file("OPENAI_API_KEY=abc"), Some("abc".into()));
        assert_eq!(key_from_env_file("export  OPENAI_API_KEY=\"abc\""), Some("abc".into()));
        assert_eq!(key_from_env_file("OPENAI_API_KEY='abc\""), Some("'abc\"".into()));
        assert_eq!(
            key_from_env_file("OPENAI_API_KEY=a\nOPENAI_API_KEY=b"),
            Some("b".into())
        );
        assert_eq!(key_from_env_file("OPENAI_API_KEY=\"\"\nOTHER=x"), None);
        assert_eq!(key_from_env_file("MY_OPENAI_API_KEY=abc"), None);
    }
}
