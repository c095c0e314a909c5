//! A throw-away PostgreSQL cluster for tests and benches.
//!
//! [`TestCluster::start`] runs `initdb` into a fresh temporary directory and starts the
//! server with `pg_ctl`, listening only on a Unix socket inside that directory (no TCP port,
//! so parallel clusters never collide). It trusts local connections from the one role
//! `memoree`; [`TestCluster::url`] names a database in it. Dropping the cluster stops the
//! server (`pg_ctl stop -m immediate`) and removes the directory; a cluster whose test process
//! was killed before that is stopped and removed by the next process that starts one
//! (`reaper`).
//!
//! PostgreSQL refuses to run as root, so when the caller is root the server runs as the
//! `postgres` system account (or `MEMOREE_PG_USER`) through `runuser`. The server binaries are
//! taken from `MEMOREE_PG_BIN`, else the newest `/usr/lib/postgresql/*/bin`, else `pg_config
//! --bindir`.
//!
//! **Invariant:** a test that needs PostgreSQL calls [`TestCluster::start`], which skips the test
//! visibly when the server binaries are missing ([`super::parts`]) and fails it in strict mode
//! (CI). Benches and the conformance runner's explicit `--daemon-store postgres` call
//! [`TestCluster::start_required`], which panics naming what to install.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

mod reaper;

/// The superuser role every test cluster trusts.
pub const ROLE: &str = "memoree";
/// The port number in the socket file name (`.s.PGSQL.<port>`); nothing listens on TCP.
pub const PORT: u16 = 5432;

/// A running throw-away cluster; stopped and deleted on drop.
#[derive(Debug)]
pub struct TestCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    run_as: Option<String>,
    next_db: AtomicU32,
    /// Set once [`TEMPLATE`] holds the migrated schema.
    template: OnceLock<()>,
    /// Started without durability (`fsync`, synchronous commit, full-page writes off): the
    /// shared cluster, whose tests never crash it.
    volatile: bool,
}

/// The database [`TestCluster::create_store_database`] copies: migrated once per cluster.
const TEMPLATE: &str = "memoree_template";

impl TestCluster {
    /// Initializes and starts a new cluster for the running test, or reports the test skipped
    /// and returns `None` when the PostgreSQL server binaries are missing (a failure in strict
    /// mode, see [`super::parts`]). Panics when PostgreSQL is installed but does not start.
    pub fn start() -> Option<TestCluster> {
        match server_bin_dir() {
            Some(bin) => Some(TestCluster::start_with(bin, false)),
            None => {
                super::parts::skip(
                    super::parts::Part::Postgres,
                    &super::parts::current_test(),
                    "no initdb/pg_ctl in MEMOREE_PG_BIN, /usr/lib/postgresql/*/bin or pg_config --bindir",
                );
                None
            }
        }
    }

    /// Initializes and starts a new cluster. Panics with the reason when PostgreSQL is not
    /// installed or does not start.
    pub fn start_required() -> TestCluster {
        let bin = server_bin_dir().unwrap_or_else(|| {
            panic!(
                "PostgreSQL server binaries not found: install the `postgresql` package \
                 (apt-get install postgresql) or set MEMOREE_PG_BIN to the directory holding initdb and pg_ctl"
            )
        });
        TestCluster::start_with(bin, false)
    }

    fn start_with(bin: PathBuf, volatile: bool) -> TestCluster {
        let run_as = if rustix::process::geteuid().is_root() {
            Some(std::env::var("MEMOREE_PG_USER").unwrap_or_else(|_| "postgres".to_owned()))
        } else {
            None
        };
        reaper::reap_once(|data| {
            let _ = tool(&bin, run_as.as_deref(), "pg_ctl")
                .args(["-D", path_str(data), "-m", "immediate", "-w", "stop"])
                .output();
        });
        let dir = tempfile::Builder::new()
            .prefix(reaper::DIR_PREFIX)
            .tempdir()
            .expect("create a temporary directory for the test cluster");
        reaper::record_owner(dir.path());
        let cluster = TestCluster {
            dir,
            bin,
            run_as,
            next_db: AtomicU32::new(0),
            template: OnceLock::new(),
            volatile,
        };
        if let Some(user) = &cluster.run_as {
            let status = Command::new("chown")
                .arg(user)
                .arg(cluster.dir.path())
                .status()
                .expect("run chown");
            assert!(
                status.success(),
                "chown {} to {user} failed",
                cluster.dir.path().display()
            );
        }
        let data = cluster.data_dir();
        cluster.run_checked(
            "initdb",
            &[
                "-D",
                path_str(&data),
                "-U",
                ROLE,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ],
        );
        cluster.pg_ctl_start();
        cluster
    }

    /// The cluster's directory (it holds `data/`, the socket and `server.log`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// A connection URL for `database` (created by [`TestCluster::create_database`]).
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgresql://{ROLE}@/{database}?host={}&port={PORT}",
            path_str(self.dir.path())
        )
    }

    /// Creates a fresh, empty database with a unique name and returns its URL.
    pub fn create_database(&self) -> String {
        let name = format!("memoree_{}", self.next_db.fetch_add(1, Ordering::Relaxed));
        self.psql(&format!("CREATE DATABASE {name}"));
        self.url(&name)
    }

    /// Creates a database that already holds the current Memoree schema, as a front end finds
    /// a database another front end migrated, and returns its URL. The schema is applied once
    /// per cluster, by the store itself, into a template database that every later call
    /// copies (`CREATE DATABASE … TEMPLATE`), which is several times faster than migrating.
    pub fn create_store_database(&self) -> String {
        self.template.get_or_init(|| {
            self.psql(&format!("CREATE DATABASE {TEMPLATE}"));
            let store = crate::store::pg::PgStore::open(&self.url(TEMPLATE))
                .unwrap_or_else(|e| panic!("migrate the template database: {e}"));
            store.shutdown();
            drop(store);
            // Nobody connects to it again; CREATE DATABASE waits for the closed sessions to end.
            self.psql(&format!(
                "ALTER DATABASE {TEMPLATE} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"
            ));
        });
        let name = format!("memoree_{}", self.next_db.fetch_add(1, Ordering::Relaxed));
        self.psql(&format!("CREATE DATABASE {name} TEMPLATE {TEMPLATE}"));
        self.url(&name)
    }

    /// Runs one SQL command through `psql` on the `postgres` database; panics on failure.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_in("postgres", sql)
    }

    /// Runs one SQL command through `psql` on `database`; panics on failure.
    pub fn psql_in(&self, database: &str, sql: &str) -> String {
        let output = self.run_checked(
            "psql",
            &[
                "-X",
                "-q",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                path_str(self.dir.path()),
                "-p",
                &PORT.to_string(),
                "-U",
                ROLE,
                "-d",
                database,
                "-c",
                sql,
            ],
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Restarts the server without a clean shutdown (`pg_ctl restart -m immediate`): every
    /// connection is cut and recovery replays the WAL.
    pub fn restart_immediate(&self) {
        let data = self.data_dir();
        self.run_checked("pg_ctl", &["-D", path_str(&data), "-m", "immediate", "-w", "stop"]);
        self.pg_ctl_start();
    }

    /// Stops the server (`pg_ctl stop -m fast`: sessions are terminated, then a clean
    /// shutdown); [`TestCluster::start_again`] brings it back.
    pub fn stop(&self) {
        let data = self.data_dir();
        self.run_checked("pg_ctl", &["-D", path_str(&data), "-m", "fast", "-w", "stop"]);
    }

    /// Starts a stopped server again and returns once it accepts connections.
    pub fn start_again(&self) {
        self.pg_ctl_start();
    }

    /// Begins a smart shutdown without waiting for it (`pg_ctl stop -m smart -W`): sessions
    /// already open go on, every new connection is refused with "the database system is
    /// shutting down" (SQLSTATE 57P03, as while it starts up) until the last one ends.
    pub fn begin_smart_shutdown(&self) {
        let data = self.data_dir();
        self.run_checked("pg_ctl", &["-D", path_str(&data), "-m", "smart", "-W", "stop"]);
    }

    /// Waits until the server has stopped (after [`TestCluster::begin_smart_shutdown`]).
    pub fn wait_stopped(&self) {
        let pid_file = self.data_dir().join("postmaster.pid");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while pid_file.exists() {
            assert!(std::time::Instant::now() < deadline, "the server did not stop");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The process ids of the server: the postmaster and every process it started.
    pub fn server_pids(&self) -> Vec<i32> {
        let text = std::fs::read_to_string(self.data_dir().join("postmaster.pid")).unwrap_or_default();
        let Some(postmaster) = text.lines().next().and_then(|l| l.trim().parse::<i32>().ok()) else {
            return Vec::new();
        };
        let mut pids = vec![postmaster];
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // The parent pid is the second field after the parenthesized command name.
            let parent = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<i32>().ok());
            if parent == Some(postmaster) {
                pids.push(pid);
            }
        }
        pids
    }

    fn pg_ctl_start(&self) {
        let data = self.data_dir();
        let log = self.dir.path().join("server.log");
        let mut options = format!(
            "-k {} -p {PORT} -c listen_addresses= -c max_connections=100 -c shared_buffers=32MB -c recovery_init_sync_method=syncfs",
            path_str(self.dir.path())
        );
        if self.volatile {
            options.push_str(" -c fsync=off -c synchronous_commit=off -c full_page_writes=off");
        }
        let output = self.run(
            "pg_ctl",
            &[
                "-D",
                path_str(&data),
                "-l",
                path_str(&log),
                "-w",
                "-t",
                "60",
                "-o",
                &options,
                "start",
            ],
        );
        if !output.status.success() {
            let server_log = std::fs::read_to_string(&log).unwrap_or_default();
            panic!(
                "pg_ctl start failed: {}{}\nserver log:\n{server_log}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }

    fn run(&self, name: &str, args: &[&str]) -> Output {
        tool(&self.bin, self.run_as.as_deref(), name)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.bin.join(name).display()))
    }

    fn run_checked(&self, tool: &str, args: &[&str]) -> Output {
        let output = self.run(tool, args);
        assert!(
            output.status.success(),
            "{tool} {args:?} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }
}

/// A command running the server tool `name` of `bin`, as `run_as` when given.
fn tool(bin: &Path, run_as: Option<&str>, name: &str) -> Command {
    let program = bin.join(name);
    let mut command = match run_as {
        Some(user) => {
            let mut command = Command::new("runuser");
            command.arg("-u").arg(user).arg("--").arg(&program);
            command
        }
        None => Command::new(&program),
    };
    command
        .stdin(Stdio::null())
        .env_remove("PGDATA")
        .env_remove("PGHOST")
        .env_remove("PGPORT");
    command
}

/// `count` front ends on one fresh database of a new cluster, as `count` `memoree serve`
/// processes would be: a `Service` each, with its own store handle (writer connection, read
/// pool) and front-end directory. The services are dropped before the cluster stops.
pub struct FrontEnds {
    pub services: Vec<crate::service::Service>,
    _dirs: Vec<tempfile::TempDir>,
    pub url: String,
    pub cluster: TestCluster,
}

impl FrontEnds {
    /// `None` after reporting the running test skipped when PostgreSQL is missing (see
    /// [`TestCluster::start`]).
    pub fn start(count: usize) -> Option<FrontEnds> {
        let cluster = TestCluster::start()?;
        let url = cluster.create_database();
        let (services, dirs) = services(&url, count);
        Some(FrontEnds {
            services,
            _dirs: dirs,
            url,
            cluster,
        })
    }
}

/// `count` front ends on the database at `url`, and the directories they keep their locks and
/// logs in (remove them after the services).
pub fn services(url: &str, count: usize) -> (Vec<crate::service::Service>, Vec<tempfile::TempDir>) {
    let dirs: Vec<tempfile::TempDir> = (0..count).map(|_| tempfile::tempdir().unwrap()).collect();
    let services = dirs
        .iter()
        .map(|dir| {
            let store = crate::store::Store::open_postgres(url, dir.path()).unwrap();
            crate::service::Service::new(store, crate::service::Runtime::default())
        })
        .collect();
    (services, dirs)
}

/// The cluster every test of this process that needs only a fresh database shares
/// (`service::tests`' `backend_test!`): started on first use, stopped and removed when the
/// process exits (a killed process leaves it to the reaper, like any cluster).
static SHARED: OnceLock<TestCluster> = OnceLock::new();

/// The shared cluster, or `None` after reporting the running test skipped when PostgreSQL
/// is missing (a failure in strict mode). A fresh database of it costs a template copy, not
/// an `initdb`.
pub fn shared() -> Option<&'static TestCluster> {
    if let Some(cluster) = SHARED.get() {
        return Some(cluster);
    }
    let Some(bin) = server_bin_dir() else {
        super::parts::skip(
            super::parts::Part::Postgres,
            &super::parts::current_test(),
            "no initdb/pg_ctl in MEMOREE_PG_BIN, /usr/lib/postgresql/*/bin or pg_config --bindir",
        );
        return None;
    };
    let mut started = false;
    let cluster = SHARED.get_or_init(|| {
        started = true;
        TestCluster::start_with(bin, true)
    });
    if started {
        // SAFETY: `stop_shared` is a plain `extern "C"` function that never unwinds.
        unsafe { libc::atexit(stop_shared) };
    }
    Some(cluster)
}

/// The shared cluster when this process has started it.
pub fn shared_if_started() -> Option<&'static TestCluster> {
    SHARED.get()
}

extern "C" fn stop_shared() {
    if let Some(cluster) = SHARED.get() {
        let _ = std::panic::catch_unwind(|| {
            let data = cluster.data_dir();
            let _ = cluster.run("pg_ctl", &["-D", path_str(&data), "-m", "immediate", "-w", "stop"]);
            let _ = std::fs::remove_dir_all(cluster.dir());
        });
    }
}

impl TestCluster {
    /// Drops the database at `url` (made by [`TestCluster::create_store_database`] or
    /// [`TestCluster::create_database`]), closing any session still on it.
    pub fn drop_database(&self, url: &str) {
        let name = url
            .split_once("@/")
            .and_then(|(_, rest)| rest.split('?').next())
            .expect("a test database URL names its database after `@/`");
        self.psql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        let data = self.data_dir();
        let _ = self.run("pg_ctl", &["-D", path_str(&data), "-m", "immediate", "-w", "stop"]);
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

/// The directory holding `initdb` and `pg_ctl`.
fn server_bin_dir() -> Option<PathBuf> {
    let has_tools = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("MEMOREE_PG_BIN") {
        return Some(PathBuf::from(dir)).filter(|d| has_tools(d));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, dir)| has_tools(dir))
        .collect();
    versions.sort();
    if let Some((_, dir)) = versions.pop() {
        return Some(dir);
    }
    let output = Command::new("pg_config").arg("--bindir").output().ok()?;
    let dir = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    has_tools(&dir).then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_database_is_a_copy_of_the_migrated_schema_that_opens_without_migrating() {
        let Some(cluster) = TestCluster::start() else { return };
        let first = cluster.create_store_database();
        let second = cluster.create_store_database();
        assert_ne!(first, second);
        for url in [first, second] {
            let database = url.split_once("@/").unwrap().1.split('?').next().unwrap().to_owned();
            let version = cluster.psql_in(&database, "SELECT max(version) FROM memoree_schema");
            assert_eq!(version.trim(), crate::store::pg::SCHEMA_VERSION.to_string());
            let store = crate::store::pg::PgStore::open(&url).unwrap();
            store.shutdown();
        }
    }

    #[test]
    fn a_test_cluster_starts_serves_sql_and_survives_an_immediate_restart() {
        let Some(cluster) = TestCluster::start() else { return };
        let url = cluster.create_database();
        assert!(url.contains(path_str(cluster.dir())));
        assert_eq!(cluster.psql("SELECT 40 + 2").trim(), "42");
        cluster.psql("CREATE TABLE t (x int); INSERT INTO t VALUES (7)");
        cluster.restart_immediate();
        assert_eq!(cluster.psql("SELECT x FROM t").trim(), "7");
        let data = cluster.data_dir();
        drop(cluster);
        assert!(!data.exists(), "the cluster directory is removed on drop");
    }
}
