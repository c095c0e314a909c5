//! The `memoree` binary: everything lives in the library; see `memoree::cli`.

fn main() -> std::process::ExitCode {
    memoree::cli::main()
}
