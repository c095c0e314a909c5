//! The conformance runner: every case file under `spec/v1/cases/` and every golden scenario
//! under `golden/v1/` becomes one trial per transport, named `v1/<family>/<case>::<transport>`
//! or `golden/v1/<scenario>::<transport>`, and runs through libtest-mimic (so the usual
//! filters and `--test-threads` work). Conformance is data; this directory is the only code.
//! Usage, including `--binary PATH` for another implementation, is in `conformance/README.md`.

mod case;
mod daemon;
mod golden;
mod matcher;
mod normalize;
#[path = "../tests/support/pki.rs"]
mod pki;
mod retrieval;
mod schema;
mod transport;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};

use crate::daemon::{Daemon, Launch, Listen, Running};
use crate::schema::Schemas;
use crate::transport::{Binary, InProcess, Transport};

/// Runner flags, removed from argv before libtest-mimic sees it.
#[derive(Debug, Default)]
struct Options {
    binary: Option<PathBuf>,
    daemon_command: Option<String>,
    daemon_listen: Option<String>,
    endpoint: Option<String>,
}

fn split_args(args: impl Iterator<Item = String>) -> Result<(Options, Vec<String>), String> {
    let mut options = Options::default();
    let mut rest = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
            None => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or(format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--binary" => options.binary = Some(PathBuf::from(value()?)),
            "--daemon-command" => options.daemon_command = Some(value()?),
            "--daemon-listen" => options.daemon_listen = Some(value()?),
            "--endpoint" => options.endpoint = Some(value()?),
            _ => rest.push(arg),
        }
    }
    Ok((options, rest))
}

/// The transports every case runs on.
fn select_transports(options: &Options) -> Result<Vec<Arc<dyn Transport>>, String> {
    if let Some(endpoint) = &options.endpoint {
        if options.binary.is_some() || options.daemon_command.is_some() || options.daemon_listen.is_some() {
            return Err("--endpoint targets a running daemon; it cannot be combined with \
                        --binary, --daemon-command or --daemon-listen"
                .to_owned());
        }
        return Ok(vec![Arc::new(Running::new(endpoint)?)]);
    }
    let listen = options
        .daemon_listen
        .as_deref()
        .map_or(Ok(Listen::Unix), Listen::parse)?;
    let binary = match &options.binary {
        // The child runs in its own directory, so a relative path must be made absolute here.
        Some(path) => std::fs::canonicalize(path).map_err(|e| format!("--binary {}: {e}", path.display()))?,
        None => PathBuf::from(env!("CARGO_BIN_EXE_memoree")),
    };
    let launch = match &options.daemon_command {
        Some(template) if !template.contains("{endpoint}") => {
            return Err(format!(
                "--daemon-command {template:?} must contain {{endpoint}} (and usually {{data_dir}})"
            ));
        }
        Some(template) => Launch::Command(template.clone()),
        None => Launch::Serve(binary.clone()),
    };
    let mut transports: Vec<Arc<dyn Transport>> = Vec::new();
    // Another implementation is tested, not this crate: the in-process service is skipped.
    if options.binary.is_none() && options.daemon_command.is_none() {
        transports.push(Arc::new(InProcess));
    }
    if options.binary.is_some() || options.daemon_command.is_none() {
        transports.push(Arc::new(Binary::new(&binary)));
    }
    transports.push(Arc::new(Daemon::new(launch, listen)));
    Ok(transports)
}

/// Files with `extension` below `dir`, recursively, in a stable order.
fn files_below(dir: &Path, extension: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            files_below(&path, extension, out);
        } else if path.extension().is_some_and(|e| e == extension) {
            out.push(path);
        }
    }
}

/// `path` relative to `base`, with `/` separators and no extension.
fn trial_name(path: &Path, base: &Path) -> String {
    let relative = path.strip_prefix(base).unwrap_or(path).with_extension("");
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn trials(root: &Path, transports: &[Arc<dyn Transport>], schemas: &Arc<Option<Schemas>>) -> Vec<Trial> {
    let mut trials = Vec::new();
    let mut case_files = Vec::new();
    files_below(&root.join("spec/v1/cases"), "json", &mut case_files);
    for path in case_files {
        let name = format!("v1/{}", trial_name(&path, &root.join("spec/v1/cases")));
        let loaded = Arc::new(case::load(&path));
        for transport in transports {
            if let Ok(case) = loaded.as_ref()
                && !case.applies_to(transport.name())
            {
                continue;
            }
            // A shared, running daemon cannot offer a fresh store per trial.
            if transport.name() == "endpoint" && !loaded.as_ref().as_ref().is_ok_and(case::Case::is_store_independent) {
                continue;
            }
            let (loaded, transport, schemas) = (loaded.clone(), transport.clone(), schemas.clone());
            let label = path.display().to_string();
            trials.push(Trial::test(format!("{name}::{}", transport.name()), move || {
                let case = loaded.as_ref().as_ref().map_err(Failed::from)?;
                case.run(transport.as_ref(), schemas.as_ref().as_ref())
                    .map_err(|e| Failed::from(format!("{label}: {}\n{e}", case.description)))
            }));
        }
    }
    let update = golden::update_requested();
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(root.join("golden/v1"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    scenarios.sort();
    for dir in scenarios {
        let name = trial_name(&dir, root);
        for (index, transport) in transports.iter().enumerate() {
            if transport.name() == "endpoint" {
                continue;
            }
            let (dir, transport, schemas) = (dir.clone(), transport.clone(), schemas.clone());
            // Under UPDATE_GOLDEN=1 only the first transport writes; the others would race it.
            let skip_while_updating = update && index > 0;
            let trial = Trial::test(format!("{name}::{}", transport.name()), move || {
                if retrieval::is_corpus(&dir) {
                    return retrieval::run(&dir, transport.as_ref()).map_err(Failed::from);
                }
                golden::run(&dir, transport.as_ref(), schemas.as_ref().as_ref(), update).map_err(Failed::from)
            });
            trials.push(trial.with_ignored_flag(skip_while_updating));
        }
    }
    trials
}

#[allow(clippy::print_stderr)]
fn main() -> ExitCode {
    let (options, rest) = match split_args(std::env::args()) {
        Ok(split) => split,
        Err(message) => {
            eprintln!("conformance: {message}");
            return ExitCode::from(2);
        }
    };
    let transports = match select_transports(&options) {
        Ok(transports) => transports,
        Err(message) => {
            eprintln!("conformance: {message}");
            return ExitCode::from(2);
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schemas = match schema::load(&root.join("../shared/spec/reference-schema-v1.json")) {
        Ok(schemas) => Arc::new(schemas),
        Err(message) => {
            eprintln!("conformance: {message}");
            return ExitCode::from(2);
        }
    };
    let args = Arguments::from_iter(rest);
    libtest_mimic::run(&args, trials(root, &transports, &schemas)).exit_code()
}
