//! `memoree mcp`: the Model Context Protocol server on stdio (see [`crate::mcp`]).
//!
//! Prints nothing of its own: stdout belongs to the MCP stream. The global `--endpoint` and
//! `--no-autostart` choose the daemon exactly as for every other command.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::GlobalArgs;
use crate::mcp;

/// Copy-paste host setup, shown by `memoree mcp --help`; the README repeats it line for line.
macro_rules! hosts {
    () => {
        r#"Setup (run `memoree init` in each project first; the server starts the daemon itself):

  Claude Code:
    claude mcp add memoree -- memoree mcp

  Cursor (.cursor/mcp.json or ~/.cursor/mcp.json), Claude Desktop:
    {"mcpServers": {"memoree": {"command": "memoree", "args": ["mcp"]}}}

  VS Code (.vscode/mcp.json):
    {"servers": {"memoree": {"type": "stdio", "command": "memoree", "args": ["mcp"]}}}

  Codex (~/.codex/config.toml):
    [mcp_servers.memoree]
    command = "memoree"
    args = ["mcp"]"#
    };
}

/// The host setup block.
#[cfg(test)]
const HOSTS: &str = hosts!();

/// Everything `memoree mcp --help` prints after the flags.
pub const SETUP: &str = concat!(
    "Example (a host starts it; by hand it waits for JSON-RPC on stdin):\n  memoree mcp --retry-window 600\n\n",
    hosts!(),
    "\n\nThe project comes from MEMOREE_CONTEXT, the host's roots, or the .memoree.toml nearest the\n\
     server's working directory. Stdout carries only MCP messages; logs go to stderr (RUST_LOG)."
);

/// Serve the Model Context Protocol on stdio, forwarding every tool call to the daemon.
#[derive(Debug, Clone, Args)]
#[command(after_help = SETUP)]
pub struct McpArgs {
    /// Seconds during which an identical write without an idempotency_key replays the first
    #[arg(long, value_name = "SECONDS", default_value_t = mcp::DEFAULT_WINDOW.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub retry_window: u64,
}

pub(crate) fn run(args: &McpArgs, global: &GlobalArgs) -> ExitCode {
    mcp::run(mcp::Options {
        endpoint: global.endpoint.clone(),
        no_autostart: global.no_autostart,
        retry_window: Duration::from_secs(args.retry_window),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readme_shows_the_same_host_setup_as_mcp_help() {
        let readme = include_str!("../../README.md");
        for line in HOSTS.lines().filter(|line| !line.trim().is_empty()) {
            assert!(readme.contains(line), "README lacks {line:?}");
        }
    }
}
