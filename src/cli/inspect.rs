//! `memoree inspect`: serve the read-only web view until SIGINT or SIGTERM.
//!
//! Prints exactly one envelope: on start, a success whose `result.url` carries the access
//! token (also written to stderr for people), or a startup failure. The daemon is reached
//! like any command's (autostarted unless told otherwise) and probed with `doctor` before
//! the listener opens; the ambient context is resolved once, like `memoree call` does.

use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;

use clap::Args;

use super::error::{CliError, CliResult};
use super::{GlobalArgs, exit, output, transport};
use crate::inspect::{self, Memory, Ready};
use crate::protocol::local::InspectStarted;
use crate::protocol::{CLI_REQUEST_ID, ErrorCode, Operation, Response};

/// Serve a local, read-only web view of memory on loopback.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  memoree inspect\n  memoree inspect --listen 127.0.0.1:8765 --open")]
pub struct InspectArgs {
    /// Loopback address to serve on (`IP:PORT` or `localhost:PORT`; port 0 picks a free one).
    #[arg(long, value_name = "ADDR", default_value = inspect::DEFAULT_LISTEN)]
    listen: String,
    /// Open the printed URL in the default browser (via a private, short-lived file, so the
    /// token never appears on a command line).
    #[arg(long)]
    open: bool,
}

pub(crate) fn run(args: &InspectArgs, global: &GlobalArgs) -> ExitCode {
    match start(args, global) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            let response = failure.into_response();
            output::emit(&response, global.pretty);
            exit::for_response(&response)
        }
    }
}

fn start(args: &InspectArgs, global: &GlobalArgs) -> CliResult<()> {
    let addr = inspect::parse_listen(&args.listen)?;
    let memory = connect(global)?;
    // Reaching the daemon now starts it when needed and reports a dead one before the URL. A
    // remote credential limited to some workspaces may not run `doctor` (a store-wide
    // operation); its refusal still proves the daemon answers.
    match memory.doctor() {
        Ok(_) => {}
        Err(error) if error.code == ErrorCode::ScopeViolation => {}
        Err(error) => return Err(CliError::Envelope(Box::new(Response::failure(CLI_REQUEST_ID, error))).into()),
    }
    let context = memory.context().clone();
    let mut opened = None;
    let pretty = global.pretty;
    let served = inspect::serve(addr, memory, |ready| {
        let result = InspectStarted {
            url: ready.url.clone(),
            listen: ready.addr.to_string(),
            pid: std::process::id(),
            context: context.clone(),
        };
        let result = serde_json::to_value(result).unwrap_or_default();
        output::emit(&Response::success(CLI_REQUEST_ID, result), pretty);
        announce(ready);
        if args.open {
            opened = open_browser(ready);
        }
    });
    drop(opened);
    served.map_err(|error| {
        // The start envelope is already out; the failure goes to stderr and the exit status.
        tracing::error!(%error, "the inspector stopped");
        CliError::from(error).into()
    })
}

/// The daemon transport and the ambient context, as every command resolves them.
fn connect(global: &GlobalArgs) -> CliResult<Memory> {
    let transport = transport::select(global)?;
    let (context, source) = transport::resolve(Operation::Search)?;
    Ok(Memory::new(Arc::from(transport), context, source))
}

/// Tells a person where to look; stdout already holds the envelope.
#[allow(clippy::print_stderr)]
fn announce(ready: &Ready) {
    eprintln!("Memoree inspector (read-only): {}", ready.url);
    eprintln!("Anyone with this URL can read memory until the inspector stops (Ctrl-C).");
}

/// Opens the URL in a browser through an owner-only HTML file that redirects to it, so the
/// token is never an argument other local users could read in the process list. The file
/// is removed when the returned handle is dropped (at exit).
fn open_browser(ready: &Ready) -> Option<tempfile::NamedTempFile> {
    use std::io::Write as _;
    let page = format!(
        "<!DOCTYPE html><meta charset=\"utf-8\"><meta name=\"referrer\" content=\"no-referrer\">\
         <meta http-equiv=\"refresh\" content=\"0;url={}\"><title>Memoree inspector</title>",
        ready.url
    );
    let mut file = match tempfile::Builder::new()
        .prefix("memoree-inspect-")
        .suffix(".html")
        .tempfile()
    {
        Ok(file) => file,
        Err(error) => {
            tracing::warn!(%error, "could not prepare the page that opens the browser");
            return None;
        }
    };
    if let Err(error) = file.write_all(page.as_bytes()).and_then(|()| file.flush()) {
        tracing::warn!(%error, "could not prepare the page that opens the browser");
        return None;
    }
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let spawned = Command::new(opener)
        .arg(file.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        // Reap the opener when it exits so it never lingers as a zombie.
        Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
        Err(error) => tracing::warn!(%error, opener, "could not open a browser; open the printed URL yourself"),
    }
    Some(file)
}
