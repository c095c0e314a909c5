//! Embeds the conformance data (`spec/v1/cases/**` and `golden/**`) for the
//! `memoree-conformance` binary, which must run without a checkout. Every file below those two
//! directories is listed in `$OUT_DIR/conformance_catalog.rs` as `(relative path, bytes)`, so
//! cases and scenarios added later are picked up without touching code. Only the kit binary
//! includes the generated file; the in-tree runner reads the same files from disk.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const EMBEDDED_ROOTS: [&str; 2] = ["spec/v1/cases", "golden"];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for root in EMBEDDED_ROOTS {
        // A directory: cargo re-runs this script when anything below it changes.
        println!("cargo:rerun-if-changed={root}");
        collect(&manifest, &manifest.join(root), &mut files);
    }
    files.sort();
    let mut out = String::from("/// Every embedded conformance file: (path relative to the repository, bytes).\n");
    out.push_str("pub static FILES: &[(&str, &[u8])] = &[\n");
    for (relative, absolute) in &files {
        writeln!(out, "    ({relative:?}, include_bytes!({absolute:?})),").expect("write to a String");
    }
    out.push_str("];\n");
    let target = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("conformance_catalog.rs");
    std::fs::write(target, out).expect("write the conformance catalog");
}

fn collect(manifest: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(manifest, &path, out);
        } else if path.is_file() {
            let relative = path.strip_prefix(manifest).expect("below the manifest directory");
            let relative: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.push((relative.join("/"), path.to_string_lossy().into_owned()));
        }
    }
}
