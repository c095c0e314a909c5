//! Path resolution on each platform and the layout helpers, with the environment injected.

use super::*;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| OsString::from(v))
}

fn xdg(pairs: &[(&str, &str)]) -> Result<Paths, PathsError> {
    resolve_for(&env_of(pairs), Platform::Xdg)
}

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

#[test]
fn memoree_home_puts_data_run_and_config_under_it() {
    let paths = xdg(&[("MEMOREE_HOME", "/m"), ("HOME", "/home/u")]).unwrap();
    assert_eq!(
        paths,
        Paths {
            data_dir: p("/m/data"),
            runtime_dir: p("/m/run"),
            config_file: p("/m/config.toml"),
            socket_path: p("/m/run/memoree.sock"),
        }
    );
}

#[test]
fn memoree_home_needs_no_home_directory() {
    let paths = xdg(&[("MEMOREE_HOME", "/m")]).unwrap();
    assert_eq!(paths.data_dir, p("/m/data"));
}

#[test]
fn per_path_overrides_beat_memoree_home() {
    let paths = xdg(&[
        ("MEMOREE_HOME", "/m"),
        ("MEMOREE_DATA_DIR", "/d"),
        ("MEMOREE_RUNTIME_DIR", "/r"),
        ("MEMOREE_CONFIG", "/c.toml"),
    ])
    .unwrap();
    assert_eq!(paths.data_dir, p("/d"));
    assert_eq!(paths.runtime_dir, p("/r"));
    assert_eq!(paths.config_file, p("/c.toml"));
    assert_eq!(paths.socket_path, p("/r/memoree.sock"));
}

#[test]
fn memoree_socket_overrides_only_the_socket() {
    let paths = xdg(&[("MEMOREE_HOME", "/m"), ("MEMOREE_SOCKET", "/tmp/s.sock")]).unwrap();
    assert_eq!(paths.socket_path, p("/tmp/s.sock"));
    assert_eq!(paths.runtime_dir, p("/m/run"));
}

#[test]
fn empty_variables_count_as_unset() {
    let paths = xdg(&[
        ("MEMOREE_HOME", ""),
        ("MEMOREE_DATA_DIR", ""),
        ("MEMOREE_SOCKET", ""),
        ("XDG_DATA_HOME", ""),
        ("HOME", "/home/u"),
    ])
    .unwrap();
    assert_eq!(paths.data_dir, p("/home/u/.local/share/memoree"));
    assert_eq!(paths.socket_path, p("/home/u/.local/share/memoree/run/memoree.sock"));
}

#[test]
fn linux_defaults_without_xdg_variables_live_under_home() {
    let paths = xdg(&[("HOME", "/home/u")]).unwrap();
    assert_eq!(
        paths,
        Paths {
            data_dir: p("/home/u/.local/share/memoree"),
            runtime_dir: p("/home/u/.local/share/memoree/run"),
            config_file: p("/home/u/.config/memoree/config.toml"),
            socket_path: p("/home/u/.local/share/memoree/run/memoree.sock"),
        }
    );
}

#[test]
fn linux_defaults_follow_the_xdg_variables() {
    let paths = xdg(&[
        ("HOME", "/home/u"),
        ("XDG_DATA_HOME", "/xd"),
        ("XDG_CONFIG_HOME", "/xc"),
        ("XDG_RUNTIME_DIR", "/run/user/1000"),
    ])
    .unwrap();
    assert_eq!(
        paths,
        Paths {
            data_dir: p("/xd/memoree"),
            runtime_dir: p("/run/user/1000/memoree"),
            config_file: p("/xc/memoree/config.toml"),
            socket_path: p("/run/user/1000/memoree/memoree.sock"),
        }
    );
}

#[test]
fn the_runtime_fallback_follows_xdg_data_home() {
    let paths = xdg(&[("HOME", "/home/u"), ("XDG_DATA_HOME", "/xd")]).unwrap();
    assert_eq!(paths.runtime_dir, p("/xd/memoree/run"));
}

#[test]
fn relative_xdg_variables_are_ignored() {
    let paths = xdg(&[("HOME", "/home/u"), ("XDG_DATA_HOME", "rel")]).unwrap();
    assert_eq!(paths.data_dir, p("/home/u/.local/share/memoree"));
}

#[test]
fn macos_keeps_data_config_and_run_under_one_root() {
    let paths = resolve_for(&env_of(&[("HOME", "/Users/u")]), Platform::MacOs).unwrap();
    let root = p("/Users/u/Library/Application Support/dev.memoree.memoree");
    assert_eq!(
        paths,
        Paths {
            data_dir: root.clone(),
            runtime_dir: root.join("run"),
            config_file: root.join("config.toml"),
            socket_path: root.join("run/memoree.sock"),
        }
    );
}

#[test]
fn without_a_home_the_error_asks_for_memoree_home() {
    let err = xdg(&[("XDG_DATA_HOME", "/xd")]).unwrap_err();
    assert!(err.to_string().contains("set MEMOREE_HOME"), "{err}");
    assert_eq!(err.code(), ErrorCode::ConfigError);
}

#[test]
fn every_directory_override_makes_a_home_unnecessary() {
    let paths = xdg(&[
        ("MEMOREE_DATA_DIR", "/d"),
        ("MEMOREE_RUNTIME_DIR", "/r"),
        ("MEMOREE_CONFIG", "/c.toml"),
    ])
    .unwrap();
    assert_eq!(paths.socket_path, p("/r/memoree.sock"));
}

#[test]
fn layout_helpers_join_the_fixed_names() {
    let paths = xdg(&[("MEMOREE_HOME", "/m")]).unwrap();
    assert_eq!(paths.db_file(), p("/m/data/memoree.sqlite3"));
    assert_eq!(paths.daemon_lock(), p("/m/data/memoreed.lock"));
    assert_eq!(paths.daemon_log(), p("/m/data/memoreed.log"));
    assert_eq!(paths.blobs_dir(), p("/m/data/blobs"));
    assert_eq!(paths.pending_dir(), p("/m/data/pending-checkpoints"));
    assert_eq!(socket_lock_path(&paths.socket_path), p("/m/run/memoree.sock.lock"));
    assert_eq!(paths.default_endpoint().to_string(), "unix:///m/run/memoree.sock");
}

#[test]
fn the_derived_names_are_the_names_sqlite_and_the_socket_lock_use() {
    assert_eq!(DB_WAL_FILE, "memoree.sqlite3-wal");
    assert_eq!(DB_SHM_FILE, "memoree.sqlite3-shm");
    assert_eq!(SOCKET_LOCK_NAME, "memoree.sock.lock");
    assert_eq!(socket_lock_path(Path::new(SOCKET_NAME)), p(SOCKET_LOCK_NAME));
}
