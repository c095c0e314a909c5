//! Embeds the conformance data (`spec/v1/cases/**` and `golden/**`) for the
//! `memoree-conformance` binary, which must run without a checkout. Every file below those two
//! directories is listed in `$OUT_DIR/conformance_catalog.rs` as `(relative path, bytes)`, so
//! cases and scenarios added later are picked up without touching code. Only the kit binary
//! includes the generated file; the in-tree runner reads the same files from disk.
//!
//! Link options of the `memoree` and `memoree-daemon` binaries: on Linux with the GNU toolchain the
//! position-independent executable's relocations are packed (`-z pack-relative-relocs`, DT_RELR,
//! glibc 2.36+), so the dynamic loader reads a few kilobytes of relocation table at startup
//! instead of ~450 KB, which every daemon and every `memoree call` would otherwise keep
//! resident. The image stays position-independent (ASLR is unchanged).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const EMBEDDED_ROOTS: [&str; 2] = ["spec/v1/cases", "golden"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        for bin in ["memoree", "memoree-daemon"] {
            println!("cargo:rustc-link-arg-bin={bin}=-Wl,-z,pack-relative-relocs");
        }
    }
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
