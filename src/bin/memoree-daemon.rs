//! `memoree-daemon`: the daemon alone, as autostart launches it. It takes the flags of
//! `memoree serve` and references no other command, so the release build's link-time
//! optimisation leaves out the CLI, the inspector and the MCP server, and the daemon maps
//! (and keeps resident) less code. See `memoree::cli::daemon_main`.

fn main() -> std::process::ExitCode {
    memoree::cli::daemon_main()
}
