//! Fake claim compilers for tests: small `#!/bin/sh` scripts run as generic commands.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::CallerError;
use super::compiler::{Compiler, CompilerSpec};

/// A temp dir holding one shell script; dropped with the test.
pub(crate) struct FakeCompiler {
    pub dir: tempfile::TempDir,
    pub script: PathBuf,
}

impl FakeCompiler {
    /// Writes `body` after a `#!/bin/sh` line and makes it executable.
    pub fn new(body: &str) -> FakeCompiler {
        let dir = tempfile::tempdir().unwrap();
        let script = write_script(dir.path(), "compiler.sh", body);
        FakeCompiler { dir, script }
    }

    /// A script that drains stdin and prints `proposal`.
    pub fn printing(proposal: &str) -> FakeCompiler {
        FakeCompiler::new(&format!(
            "cat >/dev/null\nprintf '%s' '{}'\n",
            proposal.replace('\'', r"'\''")
        ))
    }

    pub fn compiler(&self) -> Compiler {
        self.compiler_with_args(&[])
    }

    /// The script run as `/bin/sh SCRIPT ARGS…`. Reading the script instead of executing it
    /// avoids ETXTBSY when another test thread forks while the script is being written.
    pub fn compiler_with_args(&self, args: &[&str]) -> Compiler {
        let mut argv = vec![self.script.to_str().unwrap().to_owned()];
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        let spec = CompilerSpec::Command {
            program: "/bin/sh".to_owned(),
            args: argv,
        };
        Compiler::new(spec).with_parent_env(minimal_env(self.dir.path()))
    }
}

pub(crate) fn write_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// PATH for the shell utilities plus HOME pointing at `home`.
pub(crate) fn minimal_env(home: &Path) -> Vec<(String, OsString)> {
    vec![
        ("PATH".to_owned(), OsString::from("/usr/bin:/bin")),
        ("HOME".to_owned(), home.as_os_str().to_owned()),
    ]
}

/// Retries an operation that executes a freshly written script while it fails with ETXTBSY
/// ("Text file busy"), which a concurrent fork in another test thread can cause.
pub(crate) fn retry_text_busy<T>(mut op: impl FnMut() -> Result<T, CallerError>) -> Result<T, CallerError> {
    for _ in 0..20 {
        match op() {
            Err(e) if e.to_string().contains("Text file busy") => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            other => return other,
        }
    }
    op()
}
