//! The PostgreSQL store URL of `serve`, `export` and `import`: where its password may come
//! from.
//!
//! A command line is readable by every local user (`/proc/PID/cmdline`, `ps`), so `--store`
//! refuses a URL carrying a password (in the user info or a `password=` parameter) with an
//! error naming the ways that keep it private. Like libpq, a URL without one takes it from,
//! in order: `PGPASSWORD`; the `[store] password_file` of `config.toml` (the whole file,
//! trailing newline removed); the password file `PGPASSFILE` names, else `~/.pgpass`
//! (`host:port:database:user:password` lines, `*` wildcards, `\:` and `\\` escapes; ignored
//! unless owner-only, as libpq does). A URL in `config.toml` may carry its password.
//!
//! **Invariant:** the password never comes from argv, and a resolved URL is only ever
//! displayed through [`PgUrl`], which redacts it.

use std::path::{Path, PathBuf};

use super::error::CliError;
use crate::store::pg::PgUrl;

/// Where a store URL came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// `--store` on the command line.
    Flag,
    /// `[store] url` in `config.toml`.
    Config,
}

/// What password resolution reads besides the URL.
pub(crate) struct Sources<'a> {
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub home: Option<PathBuf>,
    pub password_file: Option<PathBuf>,
}

impl Sources<'_> {
    /// The process environment, the home directory and `[store] password_file`.
    pub(crate) fn process(password_file: Option<PathBuf>) -> Sources<'static> {
        Sources {
            env: &|name| std::env::var(name).ok(),
            home: std::env::var_os("HOME").map(PathBuf::from),
            password_file,
        }
    }
}

/// The message of a `--store` URL with a password.
pub(crate) const PASSWORD_ON_COMMAND_LINE: &str = "--store must not carry a password: every local user can read a command line (/proc/PID/cmdline). Remove it from the URL and pass it as PGPASSWORD in the environment, in a password file (PGPASSFILE, or ~/.pgpass with mode 0600: host:port:database:user:password), or as `password_file = \"PATH\"` in the [store] table of config.toml";

/// Whether `url` carries a password: `user:password@` in its authority or a `password=`
/// parameter.
pub(crate) fn has_password(url: &str) -> bool {
    let parts = Parts::of(url);
    parts.password_in_authority || parts.params.iter().any(|(key, _)| key == "password")
}

/// The PostgreSQL store of a command: `explicit` (`--store`), else, unless `elsewhere` (the
/// command names another store), `[store] url` of `config.toml`; with its password resolved.
pub(crate) fn choose(explicit: Option<String>, elsewhere: bool) -> Result<Option<PgUrl>, CliError> {
    let settings = || {
        let config_file = crate::paths::Paths::from_env()
            .map_err(|e| CliError::Config(e.to_string()))?
            .config_file;
        crate::ambient::load_settings(&config_file).map_err(|e| CliError::Config(e.to_string()))
    };
    let (url, origin, password_file) = match explicit {
        // A password never comes from argv: refuse before reading anything else.
        Some(url) if has_password(&url) => return Err(CliError::Config(PASSWORD_ON_COMMAND_LINE.to_owned())),
        Some(url) => (url, Origin::Flag, settings()?.store_password_file),
        None if elsewhere => return Ok(None),
        None => {
            let settings = settings()?;
            let Some(url) = settings.store_url else {
                return Ok(None);
            };
            (url, Origin::Config, settings.store_password_file)
        }
    };
    resolve(&url, origin, &Sources::process(password_file)).map(Some)
}

/// The store URL to open, its password filled in from the sources when it has none.
pub(crate) fn resolve(url: &str, origin: Origin, sources: &Sources<'_>) -> Result<PgUrl, CliError> {
    if has_password(url) {
        return match origin {
            Origin::Flag => Err(CliError::Config(PASSWORD_ON_COMMAND_LINE.to_owned())),
            Origin::Config => Ok(PgUrl(url.to_owned())),
        };
    }
    let password = match (sources.env)("PGPASSWORD").filter(|p| !p.is_empty()) {
        Some(password) => Some(password),
        None => match &sources.password_file {
            Some(path) => Some(read_password_file(path)?),
            None => pgpass(url, sources),
        },
    };
    Ok(PgUrl(match password {
        Some(password) => with_password(url, &password),
        None => url.to_owned(),
    }))
}

fn read_password_file(path: &Path) -> Result<String, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Config(format!("cannot read the [store] password_file {}: {e}", path.display())))?;
    Ok(text
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .unwrap_or(&text)
        .to_owned())
}

/// `url` with `password=<percent-encoded>` added to its parameters.
fn with_password(url: &str, password: &str) -> String {
    let encoded: String = password
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}password={encoded}")
}

/// The fields of a URL a password file entry is matched on.
#[derive(Debug, Default)]
struct Parts {
    user: Option<String>,
    password_in_authority: bool,
    host: Option<String>,
    port: Option<String>,
    database: Option<String>,
    params: Vec<(String, String)>,
}

impl Parts {
    fn of(url: &str) -> Parts {
        let mut parts = Parts::default();
        let Some((_, rest)) = url.split_once("://") else {
            return parts;
        };
        let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = before_query.split_once('/').unwrap_or((before_query, ""));
        let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
        let host_port = match authority.rsplit_once('@') {
            Some((userinfo, host_port)) => {
                let user = match userinfo.split_once(':') {
                    Some((user, _)) => {
                        parts.password_in_authority = true;
                        user
                    }
                    None => userinfo,
                };
                parts.user = Some(decode(user)).filter(|u| !u.is_empty());
                host_port
            }
            None => authority,
        };
        let (host, port) = match host_port.strip_prefix('[') {
            Some(bracketed) => match bracketed.split_once(']') {
                Some((host, tail)) => (host, tail.strip_prefix(':')),
                None => (host_port, None),
            },
            None => match host_port.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (host_port, None),
            },
        };
        parts.host = Some(decode(host)).filter(|h| !h.is_empty());
        parts.port = port.map(decode).filter(|p| !p.is_empty());
        parts.database = Some(decode(path)).filter(|d| !d.is_empty());
        parts.params = query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .map(|(key, value)| (decode(key), decode(value)))
            .collect();
        for (key, value) in &parts.params {
            let slot = match key.as_str() {
                "user" => &mut parts.user,
                "host" => &mut parts.host,
                "port" => &mut parts.port,
                "dbname" => &mut parts.database,
                _ => continue,
            };
            *slot = Some(value.clone());
        }
        parts
    }
}

/// The password of the first matching line of the password file, like libpq: `PGPASSFILE`
/// or `~/.pgpass`, owner-only, `host:port:database:user:password` with `*` matching
/// anything; a Unix-socket host (a path) matches `localhost`.
fn pgpass(url: &str, sources: &Sources<'_>) -> Option<String> {
    let path = match (sources.env)("PGPASSFILE") {
        Some(path) => PathBuf::from(path),
        None => sources.home.as_ref()?.join(".pgpass"),
    };
    let metadata = std::fs::metadata(&path).ok()?;
    {
        use std::os::unix::fs::PermissionsExt;
        if !metadata.is_file() || metadata.permissions().mode() & 0o077 != 0 {
            tracing::warn!(path = %path.display(), "ignoring a password file that is not a private regular file (chmod 0600)");
            return None;
        }
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let parts = Parts::of(url);
    let host = parts.host.unwrap_or_else(|| "localhost".to_owned());
    let host = if host.starts_with('/') {
        "localhost".to_owned()
    } else {
        host
    };
    let port = parts.port.unwrap_or_else(|| "5432".to_owned());
    let user = parts.user?;
    let database = parts.database.unwrap_or_else(|| user.clone());
    let wanted = [host.as_str(), port.as_str(), database.as_str(), user.as_str()];
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(pgpass_fields)
        .find(|fields| {
            fields[..4]
                .iter()
                .zip(wanted)
                .all(|(field, value)| field == "*" || field == value)
        })
        .map(|mut fields| fields.swap_remove(4))
}

/// The five fields of a password file line (`\:` and `\\` unescaped), or `None`.
fn pgpass_fields(line: &str) -> Option<Vec<String>> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut()?.push(chars.next().unwrap_or('\\')),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut()?.push(c),
        }
    }
    (fields.len() == 5).then_some(fields)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn sources<'a>(env: &'a dyn Fn(&str) -> Option<String>, home: &Path) -> Sources<'a> {
        Sources {
            env,
            home: Some(home.to_owned()),
            password_file: None,
        }
    }

    #[test]
    fn a_password_on_the_command_line_is_refused_with_the_ways_to_pass_it() {
        let home = tempfile::tempdir().unwrap();
        let none = |_: &str| None;
        for url in [
            "postgres://memoree:secret@db/memoree",
            "postgresql://memoree:@db/memoree",
            "postgres://memoree@db/memoree?sslmode=disable&password=secret",
        ] {
            let error = resolve(url, Origin::Flag, &sources(&none, home.path())).unwrap_err();
            let message = error.to_string();
            for hint in ["PGPASSWORD", "PGPASSFILE", "password_file", "/proc/PID/cmdline"] {
                assert!(message.contains(hint), "{message}");
            }
            assert!(!message.contains("secret"), "{message}");
            // The same URL in config.toml is the owner's choice.
            assert_eq!(
                resolve(url, Origin::Config, &sources(&none, home.path())).unwrap().0,
                url
            );
        }
        let plain = resolve(
            "postgres://memoree@db/memoree",
            Origin::Flag,
            &sources(&none, home.path()),
        )
        .unwrap();
        assert_eq!(plain.0, "postgres://memoree@db/memoree");
    }

    #[test]
    fn the_password_comes_from_pgpassword_then_the_password_file_then_pgpass() {
        let home = tempfile::tempdir().unwrap();
        let pgpass = home.path().join(".pgpass");
        std::fs::write(
            &pgpass,
            "# comment\nother:5432:*:memoree:nope\ndb:*:memoree:memoree:from\\:pgpass\n",
        )
        .unwrap();
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
        let url = "postgres://memoree@db/memoree";
        let none = |_: &str| None;
        let resolved = resolve(url, Origin::Flag, &sources(&none, home.path())).unwrap();
        assert_eq!(resolved.0, "postgres://memoree@db/memoree?password=from%3Apgpass");
        assert!(!resolved.to_string().contains("pgpass"), "{resolved}");

        let file = home.path().join("db-password");
        std::fs::write(&file, "p@ss word\n").unwrap();
        let with_file = Sources {
            password_file: Some(file),
            ..sources(&none, home.path())
        };
        let resolved = resolve(&format!("{url}?sslmode=disable"), Origin::Flag, &with_file).unwrap();
        assert_eq!(
            resolved.0,
            "postgres://memoree@db/memoree?sslmode=disable&password=p%40ss%20word"
        );

        let env = |name: &str| (name == "PGPASSWORD").then(|| "from-env".to_owned());
        let with_env = Sources { env: &env, ..with_file };
        assert_eq!(
            resolve(url, Origin::Flag, &with_env).unwrap().0,
            format!("{url}?password=from-env")
        );

        // A group-readable password file is ignored, as libpq does.
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(resolve(url, Origin::Flag, &sources(&none, home.path())).unwrap().0, url);
    }

    #[test]
    fn a_socket_host_matches_localhost_in_the_password_file() {
        let home = tempfile::tempdir().unwrap();
        let pgpass = home.path().join("pass");
        std::fs::write(&pgpass, "localhost:5432:memoree:memoree:local\n").unwrap();
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
        let pgpass_text = pgpass.display().to_string();
        let env = move |name: &str| (name == "PGPASSFILE").then(|| pgpass_text.clone());
        let url = "postgres://memoree@/memoree?host=/run/postgresql";
        let resolved = resolve(url, Origin::Flag, &sources(&env, home.path())).unwrap();
        assert_eq!(resolved.0, format!("{url}&password=local"));
    }
}
