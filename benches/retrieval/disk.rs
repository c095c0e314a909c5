//! The stopped store's size on disk (issue 31): the database and its WAL after the seed's
//! checkpoint and shutdown, against the raw text the corpus holds (artifact bodies, titles
//! and claim statements), with the pages of each table and index behind it.

use std::path::Path;

use memoree::paths::{DB_FILE, DB_WAL_FILE};

use super::targets;

/// Measures the just-seeded, stopped store against the `raw` text bytes it holds, and returns
/// the report's lines. A later run prints them from the corpus's marker: by then the store
/// may also hold the semantic bench's vectors, which are not part of this measure.
pub fn measure(data: &Path, size: usize, raw: u64) -> String {
    let len = |name: &str| std::fs::metadata(data.join(name)).map(|m| m.len()).unwrap_or(0);
    let db = len(DB_FILE) + len(DB_WAL_FILE);
    let ratio = db as f64 / raw.max(1) as f64;
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let mut lines = vec![format!(
        "stopped store at {size} artifacts: {:.1} MiB on disk for {:.1} MiB of text ({ratio:.2}x)",
        mib(db),
        mib(raw)
    )];
    if let Ok(conn) =
        rusqlite::Connection::open_with_flags(data.join(DB_FILE), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    {
        let rows: Vec<(String, i64)> = conn
            .prepare("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 8")
            .and_then(|mut stmt| stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
            .unwrap_or_default();
        let shown: Vec<String> = rows
            .iter()
            .map(|(name, bytes)| format!("{name} {:.0}", *bytes as f64 / size as f64))
            .collect();
        lines.push(format!("  bytes per artifact by table or index: {}", shown.join(", ")));
    }
    lines.push(format!("ratio {ratio}"));
    lines.join("\n")
}

/// Prints a report [`measure`] made, with the issue 31 target line at 10k artifacts.
pub fn print(report: &str, size: usize) {
    for line in report.lines() {
        match line.strip_prefix("ratio ").and_then(|r| r.parse::<f64>().ok()) {
            Some(ratio) if size == 10_000 => targets::target(
                31,
                "stopped store, 10k bench corpus (database + WAL / raw text)",
                &format!("{ratio:.2}x"),
                "raw text (1.00x)",
                "<= 2.0x",
                Some(ratio <= 2.0),
            ),
            Some(_) => {}
            None => println!("{line}"),
        }
    }
}
