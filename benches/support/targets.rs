//! One machine-readable line per performance target, shared by every bench (included with
//! `#[path]`). `benches/report.sh` collects these lines into `BENCHMARKS.md`.
//!
//! Format: `TARGET<TAB>issue<TAB>metric<TAB>measured<TAB>floor<TAB>target<TAB>verdict`, where
//! the verdict is `PASS`, `FAIL` or `-` for a number reported without a target.

/// Prints one target line; `pass` is `None` for a reported number without a target.
pub fn target(issue: u32, metric: &str, measured: &str, floor: &str, target: &str, pass: Option<bool>) {
    let clean = |s: &str| s.replace(['\t', '\n'], " ");
    let verdict = match pass {
        Some(true) => "PASS",
        Some(false) => "FAIL",
        None => "-",
    };
    println!(
        "TARGET\t{issue}\t{}\t{}\t{}\t{}\t{verdict}",
        clean(metric),
        clean(measured),
        clean(floor),
        clean(target),
    );
}
