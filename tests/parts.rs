//! The last test binary of `cargo test`: prints one line naming every optional test part
//! (PostgreSQL, Chromium, the Python MCP SDK, `../shared`) that this run skipped, with the one
//! command that installs them all. See `memoree::testkit::parts`.

use std::io::Write as _;

fn main() {
    let summary = memoree::testkit::parts::take_summary();
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "{summary}");
}
