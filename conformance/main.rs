//! The in-tree conformance runner (`cargo test --test conformance`): the engine shared with
//! the `memoree-conformance` kit (`conformance/engine/`), fed from this checkout, plus the
//! in-process transport, `UPDATE_GOLDEN=1` and the lints that keep every case's level and
//! basis honest (`conformance/lint.rs`). Trials run through libtest-mimic, so the usual
//! filters and `--test-threads` work. The `kit/…` trials check the kit binary end to end
//! (`conformance/kit_checks.rs`). Testing this crate in process, each golden scenario and a
//! generated store also get an `::export_roundtrip` trial (`roundtrip.rs`, `generated.rs`).
//! Usage is in `conformance/README.md`.

// The in-tree runner uses only part of the engine (the kit also uses its reports and runner);
// the engine's unit tests run in the kit's test target, not in this `harness = false` one.
#[allow(dead_code, unused_imports)]
mod engine;
mod generated;
mod inprocess;
mod kit_checks;
mod lint;
#[path = "../tests/support/pki.rs"]
mod pki;
mod roundtrip;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};

use crate::engine::catalog::{Catalog, ScenarioKind};
use crate::engine::plan::{self, LevelFilter, PlanOptions};
use crate::engine::schema::{self, Checks, OurSchemas};
use crate::engine::targets::Target;
use crate::engine::transport::Transport;
use crate::inprocess::InProcess;

/// Runner flags, removed from argv before libtest-mimic sees it.
fn split_args(args: impl Iterator<Item = String>) -> Result<(Target, Vec<String>), String> {
    let mut target = Target::default();
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
            "--binary" => target.binary = Some(PathBuf::from(value()?)),
            "--daemon-command" => target.daemon_command = Some(value()?),
            "--daemon-listen" => target.daemon_listen = Some(value()?),
            "--daemon-store" => target.daemon_store = Some(value()?),
            "--endpoint" => target.endpoint = Some(value()?),
            _ => rest.push(arg),
        }
    }
    Ok((target, rest))
}

/// `--daemon-listen tls`: a throw-away PKI (`tests/support/pki.rs`), a `config.toml` whose
/// `[remote]` table admits one client certificate for every workspace (each trial's daemon gets
/// it as `MEMOREE_CONFIG`), and that client's TLS configuration for the engine's frames.
fn tls_setup() -> Result<tempfile::TempDir, String> {
    let dir = engine::transport::temp_dir()?;
    let pki = pki::Pki::generate(&dir.path().join("pki"));
    let client = pki.client("conformance", pki::Signer::ClientCa, false);
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("schema = 1\n{}", pki.remote_table(&[(&client, &["*"])])),
    )
    .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    let mut roots = rustls::RootCertStore::empty();
    for ca in memoree::tls::load_certificates("server CA", &pki.server_ca).map_err(|e| e.to_string())? {
        roots.add(ca).map_err(|e| e.to_string())?;
    }
    let chain = memoree::tls::load_certificates("client certificate", &client.cert).map_err(|e| e.to_string())?;
    let key = memoree::tls::load_private_key("client key", &client.key).map_err(|e| e.to_string())?;
    let tls = rustls::ClientConfig::builder_with_provider(memoree::tls::provider())
        .with_protocol_versions(memoree::tls::PROTOCOL_VERSIONS)
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(|e| e.to_string())?;
    engine::frames::use_tls_client(Arc::new(tls));
    engine::daemon::use_tls_server_config(config);
    Ok(dir)
}

/// The transports: this crate's service in process unless another implementation is named,
/// then `call` and the daemon of the binary.
fn transports(target: &Target) -> Result<Vec<Arc<dyn Transport>>, String> {
    let mut transports: Vec<Arc<dyn Transport>> = Vec::new();
    if target.binary.is_none() && target.daemon_command.is_none() && target.endpoint.is_none() {
        transports.push(Arc::new(InProcess));
    }
    transports.extend(target.transports(Some(PathBuf::from(env!("CARGO_BIN_EXE_memoree"))))?);
    Ok(transports)
}

fn trials(
    root: &Path,
    transports: &[Arc<dyn Transport>],
    checks: Checks,
    roundtrips: bool,
) -> Result<Vec<Trial>, String> {
    let catalog = Arc::new(Catalog::from_dir(root)?);
    let options = PlanOptions {
        level: LevelFilter::All,
        update: engine::golden::update_requested().then(|| root.to_path_buf()),
    };
    let planned = plan::plan(&catalog, transports, &Arc::new(checks), &options);
    let mut trials: Vec<Trial> = planned
        .into_iter()
        .filter(|t| t.skip.is_none() || options.update.is_some())
        .map(|t| {
            let ignored = t.skip.is_some();
            let name = t.name.clone();
            Trial::test(name, move || t.run().map_err(Failed::from)).with_ignored_flag(ignored)
        })
        .collect();
    // The export round trip is a property of this crate's store, run once in process.
    if roundtrips && options.update.is_none() {
        for scenario in catalog.scenarios() {
            let dir = root.join(&scenario.dir);
            let corpus = matches!(scenario.kind, ScenarioKind::Corpus);
            trials.push(Trial::test(format!("{}::export_roundtrip", scenario.dir), move || {
                if corpus {
                    roundtrip::corpus(&dir).map_err(Failed::from)
                } else {
                    roundtrip::transcript(&dir).map_err(Failed::from)
                }
            }));
        }
        trials.push(Trial::test("portable/generated_store::export_roundtrip", || {
            generated::run().map_err(Failed::from)
        }));
    }
    trials.extend(lint::trials(root, catalog.clone()));
    trials.extend(kit_checks::trials(catalog));
    Ok(trials)
}

#[allow(clippy::print_stderr)]
fn main() -> ExitCode {
    let fail = |message: String| {
        eprintln!("conformance: {message}");
        ExitCode::from(2)
    };
    let (target, rest) = match split_args(std::env::args()) {
        Ok(split) => split,
        Err(message) => return fail(message),
    };
    // Kept alive for the run: the certificates and config of `--daemon-listen tls`.
    let _tls = match target.daemon_listen.as_deref() {
        Some("tls") => match tls_setup() {
            Ok(dir) => Some(dir),
            Err(message) => return fail(message),
        },
        _ => None,
    };
    let transports = match transports(&target) {
        Ok(transports) => transports,
        Err(message) => return fail(message),
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let reference_path = root.join("../shared/spec/reference-schema-v1.json");
    let reference = match schema::load(&reference_path) {
        Ok(reference) => reference,
        Err(message) => return fail(message),
    };
    if reference.is_none() {
        // Outside the repository: skipped visibly, and a failure in strict mode (CI).
        memoree::testkit::parts::skip(
            memoree::testkit::parts::Part::Shared,
            "conformance: the reference schema checks of every trial",
            &format!("{} is absent", reference_path.display()),
        );
    }
    // The later bundle is optional in the same way (it lives beside the first one).
    let later = match schema::load_later(&root.join("../shared/spec/reference-schema-v1-at-0.7.1.json")) {
        Ok(later) => later,
        Err(message) => return fail(message),
    };
    let checks = Checks {
        reference,
        later,
        ours: OurSchemas::Always,
        wording: true,
    };
    // The round trips exercise this crate in process; the extra TCP pass of the suite need
    // not repeat them.
    let roundtrips = transports.iter().any(|t| t.name() == "inprocess") && target.daemon_listen.is_none();
    let trials = match trials(root, &transports, checks, roundtrips) {
        Ok(trials) => trials,
        Err(message) => return fail(message),
    };
    let args = Arguments::from_iter(rest);
    libtest_mimic::run(&args, trials).exit_code()
}
