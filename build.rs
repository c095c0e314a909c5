//! Link options of the `memoree` binary.
//!
//! On Linux with the GNU toolchain the position-independent executable's relocations are
//! packed (`-z pack-relative-relocs`, DT_RELR, glibc 2.36+): the dynamic loader then reads a
//! few kilobytes of relocation table at startup instead of ~450 KB, which every daemon and
//! every `memoree call` would otherwise keep resident. The image stays position-independent
//! (ASLR is unchanged). A linker that does not know the option ignores it with a warning.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=memoree=-Wl,-z,pack-relative-relocs");
    }
}
