//! Private and atomic filesystem operations: the single home for 0700 directories, 0600
//! files, crash-safe publication and the no-replace rename.
//!
//! **Invariant:** nothing here follows a symbolic link planted at a path it creates or
//! publishes. Other modules call these helpers instead of `std::fs::write` or
//! `std::fs::rename` whenever a file must be private or must appear atomically.
//!
//! The module assumes a Unix target; `rename_noreplace` fails closed on Unix targets other
//! than Linux and macOS.

use std::ffi::{CString, OsString};
use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode of every private directory.
pub const PRIVATE_DIR_MODE: u32 = 0o700;
/// Mode of every private file.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// A failed private or atomic filesystem operation.
///
/// The `Display` text is complete (it includes the text of any underlying I/O error), so
/// callers render it with `to_string()` rather than by walking `source()`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    /// The directory has group or other permission bits and holds entries that are not
    /// part of the memoree layout, so it is not safe to tighten silently.
    #[error("refusing to use non-private, non-empty directory {}; set it to 700", path.display())]
    NotPrivate { path: PathBuf },
    /// The path is a symbolic link where a real directory is required.
    #[error("refusing to use {}: it is a symbolic link", path.display())]
    Symlink { path: PathBuf },
    /// The path exists but is not a directory.
    #[error("refusing to use {}: it is not a directory", path.display())]
    NotADirectory { path: PathBuf },
    /// A no-replace publication found something (a file, a directory or a symbolic link)
    /// already at the destination.
    #[error("{} already exists", path.display())]
    AlreadyExists { path: PathBuf },
    /// Any other I/O failure; `action` says what was being attempted.
    #[error("failed to {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl FsError {
    fn io(action: &'static str, path: &Path, source: io::Error) -> FsError {
        FsError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    /// The path the failed operation was about.
    pub fn path(&self) -> &Path {
        match self {
            FsError::NotPrivate { path }
            | FsError::Symlink { path }
            | FsError::NotADirectory { path }
            | FsError::AlreadyExists { path }
            | FsError::Io { path, .. } => path,
        }
    }
}

/// Creates `path` as a 0700 directory, or checks and tightens an existing one.
///
/// Missing parents are created with the default mode. An existing directory without group
/// or other bits is accepted as is. One with such bits is tightened to 0700 only when it is
/// empty or every entry name is listed in `allowed_entries`; otherwise the result is
/// [`FsError::NotPrivate`]. A symbolic link or a non-directory is refused.
pub fn ensure_private_dir(path: &Path, allowed_entries: &[&str]) -> Result<(), FsError> {
    match fs::symlink_metadata(path) {
        Ok(meta) => check_existing_dir(path, &meta, allowed_entries),
        Err(err) if err.kind() == io::ErrorKind::NotFound => create_private_dir(path, allowed_entries),
        Err(err) => Err(FsError::io("inspect directory", path, err)),
    }
}

fn create_private_dir(path: &Path, allowed_entries: &[&str]) -> Result<(), FsError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| FsError::io("create directory", parent, e))?;
    }
    match DirBuilder::new().mode(PRIVATE_DIR_MODE).create(path) {
        Ok(()) => {}
        // Someone created it between our lstat and mkdir: judge what is there now.
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
            let meta = fs::symlink_metadata(path).map_err(|e| FsError::io("inspect directory", path, e))?;
            return check_existing_dir(path, &meta, allowed_entries);
        }
        Err(err) => return Err(FsError::io("create directory", path, err)),
    }
    // The umask may have removed owner bits; set the exact mode.
    let dir = open_dir_nofollow(path)?;
    dir.set_permissions(Permissions::from_mode(PRIVATE_DIR_MODE))
        .map_err(|e| FsError::io("set permissions on", path, e))
}

fn check_existing_dir(path: &Path, meta: &fs::Metadata, allowed_entries: &[&str]) -> Result<(), FsError> {
    if meta.file_type().is_symlink() {
        return Err(FsError::Symlink {
            path: path.to_path_buf(),
        });
    }
    if !meta.is_dir() {
        return Err(FsError::NotADirectory {
            path: path.to_path_buf(),
        });
    }
    if meta.permissions().mode() & 0o077 == 0 {
        return Ok(());
    }
    // Hold the directory open without following links so the chmod below applies to the
    // directory we inspected, not to something swapped in at the path.
    let dir = open_dir_nofollow(path)?;
    for entry in fs::read_dir(path).map_err(|e| FsError::io("list directory", path, e))? {
        let entry = entry.map_err(|e| FsError::io("list directory", path, e))?;
        let name = entry.file_name();
        if !allowed_entries
            .iter()
            .any(|allowed| name.as_bytes() == allowed.as_bytes())
        {
            return Err(FsError::NotPrivate {
                path: path.to_path_buf(),
            });
        }
    }
    dir.set_permissions(Permissions::from_mode(PRIVATE_DIR_MODE))
        .map_err(|e| FsError::io("set permissions on", path, e))
}

fn open_dir_nofollow(path: &Path) -> Result<File, FsError> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_DIRECTORY)
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            Some(libc::ELOOP) => FsError::Symlink {
                path: path.to_path_buf(),
            },
            Some(libc::ENOTDIR) => FsError::NotADirectory {
                path: path.to_path_buf(),
            },
            _ => FsError::io("open directory", path, err),
        })
}

/// Creates a new 0600 file for writing. Fails if anything, including a symbolic link,
/// already exists at `path`.
pub fn create_private_file(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PRIVATE_FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    // The umask can only remove bits; make the mode exact anyway.
    file.set_permissions(Permissions::from_mode(PRIVATE_FILE_MODE))?;
    Ok(file)
}

/// Opens `path` for appending, creating it with mode 0600 when missing. A symbolic link at
/// `path` is refused (`ELOOP`). An existing file keeps its mode.
pub fn open_private_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(PRIVATE_FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Writes `bytes` to `dest` so that readers see either nothing (or the old file) or the
/// complete new content.
///
/// The bytes go to a synced 0600 temp file in the same directory. With `replace` the temp
/// file is renamed over `dest` (a symbolic link at `dest` is replaced itself, its target is
/// untouched). Without `replace` the temp file is hard-linked into place, falling back to a
/// no-replace rename on filesystems without hard links; anything already at `dest`,
/// including a dangling symbolic link, gives [`FsError::AlreadyExists`]. The parent
/// directory is synced afterwards, and the temp file never outlives the call.
///
/// The temp file is named `<name>.tmp-<ULID>` for a hidden `dest` (for example
/// `.memoree.toml.tmp-<ULID>`) and `.<name>.tmp-<ULID>` otherwise.
pub fn write_atomic(dest: &Path, bytes: &[u8], replace: bool) -> Result<(), FsError> {
    write_atomic_with(dest, bytes, replace, create_private_file)
}

/// [`write_atomic`] for files meant to be shared rather than private, such as the project
/// marker: the published file gets mode 0666 minus the umask, like `std::fs::write`.
pub fn write_atomic_default_mode(dest: &Path, bytes: &[u8], replace: bool) -> Result<(), FsError> {
    write_atomic_with(dest, bytes, replace, |tmp| {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .custom_flags(libc::O_NOFOLLOW)
            .open(tmp)
    })
}

fn write_atomic_with(
    dest: &Path,
    bytes: &[u8],
    replace: bool,
    create: impl FnOnce(&Path) -> io::Result<File>,
) -> Result<(), FsError> {
    let (dir, tmp) = temp_sibling(dest)?;
    let mut file = create(&tmp).map_err(|e| FsError::io("create", &tmp, e))?;
    let result = fill_temp(&mut file, &tmp, bytes).and_then(|()| publish(&tmp, dest, replace));
    drop(file);
    // After a successful rename the temp name is gone; after a link it is a second name of
    // the published file. Either way nothing may be left at the temp path.
    let _ = fs::remove_file(&tmp);
    result?;
    fsync_dir(&dir).map_err(|e| FsError::io("sync directory", &dir, e))
}

fn temp_sibling(dest: &Path) -> Result<(PathBuf, PathBuf), FsError> {
    let name = dest.file_name().ok_or_else(|| {
        FsError::io(
            "write",
            dest,
            io::Error::new(io::ErrorKind::InvalidInput, "destination has no file name"),
        )
    })?;
    let dir = match dest.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp_name = OsString::new();
    if !name.as_bytes().starts_with(b".") {
        tmp_name.push(".");
    }
    tmp_name.push(name);
    tmp_name.push(format!(".tmp-{}", ulid::Ulid::new()));
    Ok((dir.clone(), dir.join(tmp_name)))
}

fn fill_temp(file: &mut File, tmp: &Path, bytes: &[u8]) -> Result<(), FsError> {
    file.write_all(bytes).map_err(|e| FsError::io("write", tmp, e))?;
    file.sync_all().map_err(|e| FsError::io("sync", tmp, e))
}

fn publish(tmp: &Path, dest: &Path, replace: bool) -> Result<(), FsError> {
    if replace {
        return fs::rename(tmp, dest).map_err(|e| FsError::io("rename into place", dest, e));
    }
    let already_exists = || FsError::AlreadyExists {
        path: dest.to_path_buf(),
    };
    match fs::hard_link(tmp, dest) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Err(already_exists()),
        // Filesystems without hard links report EPERM or EOPNOTSUPP.
        Err(err) if hard_links_unsupported(&err) => match rename_noreplace(tmp, dest) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Err(already_exists()),
            Err(err) => Err(FsError::io("rename into place", dest, err)),
        },
        Err(err) => Err(FsError::io("link into place", dest, err)),
    }
}

fn hard_links_unsupported(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::Unsupported || matches!(err.raw_os_error(), Some(libc::EPERM | libc::EOPNOTSUPP))
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains an interior NUL byte"))
}

/// Renames `from` to `to`, failing with `ErrorKind::AlreadyExists` if anything exists at
/// `to`. Works for files and directories. Linux uses `renameat2(RENAME_NOREPLACE)`, macOS
/// `renamex_np(RENAME_EXCL)` (both through `rustix`); every other target fails closed with
/// `ErrorKind::Unsupported`, as does a kernel or filesystem that cannot honour the flag.
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    c_path(from)?;
    c_path(to)?;
    sys_rename_noreplace(from, to)
}

#[cfg(any(target_os = "linux", target_os = "android", target_os = "macos", target_os = "ios"))]
fn sys_rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    use rustix::fs::{CWD, RenameFlags};
    use rustix::io::Errno;

    match rustix::fs::renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        // An old kernel or a filesystem that cannot honour the flag: fail closed.
        Err(errno @ (Errno::NOSYS | Errno::INVAL | Errno::NOTSUP)) => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "atomic no-replace rename is not supported here: {}",
                io::Error::from(errno)
            ),
        )),
        Err(errno) => Err(errno.into()),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "macos", target_os = "ios")))]
fn sys_rename_noreplace(_from: &Path, _to: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "atomic no-replace rename is not implemented on this platform",
    ))
}

/// Flushes a directory's entries (new names, renames, unlinks) to stable storage.
pub fn fsync_dir(path: &Path) -> io::Result<()> {
    File::open(path)?.sync_all()
}

/// Total size in bytes and count of the regular files under `path`, recursively. Symbolic
/// links are neither followed nor counted. Entries that vanish during the walk are
/// skipped; a missing `path` is an error.
pub fn dir_size(path: &Path) -> io::Result<(u64, u64)> {
    let (mut bytes, mut files) = (0u64, 0u64);
    let mut pending = vec![path.to_path_buf()];
    let mut is_root = true;
    while let Some(dir) = pending.pop() {
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(err) if !is_root && err.kind() == io::ErrorKind::NotFound => continue,
            Err(err) => return Err(err),
        };
        is_root = false;
        for entry in entries {
            let entry = entry?;
            let meta = match entry.metadata() {
                Ok(meta) => meta,
                Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
                Err(err) => return Err(err),
            };
            if meta.is_dir() {
                pending.push(entry.path());
            } else if meta.is_file() {
                bytes = bytes.saturating_add(meta.len());
                files += 1;
            }
        }
    }
    Ok((bytes, files))
}

/// Bytes available to an unprivileged user on the filesystem holding `path`.
pub fn disk_free_bytes(path: &Path) -> io::Result<u64> {
    let stat = rustix::fs::statvfs(path)?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn chmod(path: &Path, mode: u32) {
        fs::set_permissions(path, Permissions::from_mode(mode)).unwrap();
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_missing_private_dir_is_created_with_mode_700_and_its_parents() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b/data");
        ensure_private_dir(&dir, &[]).unwrap();
        assert!(dir.is_dir());
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn an_existing_private_dir_is_accepted_whatever_it_holds() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        fs::create_dir(&dir).unwrap();
        chmod(&dir, 0o700);
        fs::write(dir.join("stranger"), b"x").unwrap();
        ensure_private_dir(&dir, &[]).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn an_empty_open_dir_is_tightened_to_700() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        fs::create_dir(&dir).unwrap();
        chmod(&dir, 0o755);
        ensure_private_dir(&dir, &[]).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn an_open_dir_holding_only_layout_entries_is_tightened_to_700() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("memoree.sqlite3"), b"").unwrap();
        fs::create_dir(dir.join("run")).unwrap();
        chmod(&dir, 0o750);
        ensure_private_dir(&dir, &["memoree.sqlite3", "run"]).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn an_open_dir_holding_a_foreign_entry_is_refused_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("memoree.sqlite3"), b"").unwrap();
        fs::write(dir.join("notes.txt"), b"").unwrap();
        chmod(&dir, 0o755);
        let err = ensure_private_dir(&dir, &["memoree.sqlite3"]).unwrap_err();
        assert!(matches!(err, FsError::NotPrivate { .. }));
        assert_eq!(
            err.to_string(),
            format!(
                "refusing to use non-private, non-empty directory {}; set it to 700",
                dir.display()
            )
        );
        assert_eq!(mode(&dir), 0o755);
    }

    #[test]
    fn a_symlink_is_refused_as_a_private_dir_even_when_it_points_to_a_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        fs::create_dir(&real).unwrap();
        chmod(&real, 0o755);
        let link = tmp.path().join("data");
        symlink(&real, &link).unwrap();
        let err = ensure_private_dir(&link, &[]).unwrap_err();
        assert!(matches!(err, FsError::Symlink { .. }));
        assert_eq!(mode(&real), 0o755);
    }

    #[test]
    fn a_regular_file_is_refused_as_a_private_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("data");
        fs::write(&file, b"").unwrap();
        let err = ensure_private_dir(&file, &[]).unwrap_err();
        assert!(matches!(err, FsError::NotADirectory { .. }));
    }

    #[test]
    fn create_private_file_makes_a_0600_file_and_refuses_an_existing_one() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        create_private_file(&path).unwrap();
        assert_eq!(mode(&path), 0o600);
        let err = create_private_file(&path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    }

    #[test]
    fn create_private_file_does_not_follow_a_dangling_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        let link = tmp.path().join("f");
        symlink(&target, &link).unwrap();
        assert!(create_private_file(&link).is_err());
        assert!(!target.exists());
    }

    #[test]
    fn open_private_append_creates_0600_appends_and_refuses_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("log");
        open_private_append(&path).unwrap().write_all(b"a").unwrap();
        open_private_append(&path).unwrap().write_all(b"b").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"ab");
        assert_eq!(mode(&path), 0o600);

        let link = tmp.path().join("link");
        symlink(&path, &link).unwrap();
        assert!(open_private_append(&link).is_err());
        assert_eq!(fs::read(&path).unwrap(), b"ab");
    }

    #[test]
    fn write_atomic_creates_a_0600_file_and_leaves_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("out.json");
        write_atomic(&dest, b"{}", false).unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"{}");
        assert_eq!(mode(&dest), 0o600);
        assert_eq!(entries(tmp.path()), ["out.json"]);
    }

    #[test]
    fn write_atomic_default_mode_publishes_a_file_readable_per_the_umask() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join(".marker");
        write_atomic_default_mode(&dest, b"x", false).unwrap();
        // Whatever the umask, the owner can read and write and nothing is executable.
        assert_eq!(mode(&dest) & 0o711, 0o600);
        assert!(matches!(
            write_atomic_default_mode(&dest, b"y", false),
            Err(FsError::AlreadyExists { .. })
        ));
        assert_eq!(entries(tmp.path()), [".marker"]);
    }

    #[test]
    fn write_atomic_with_replace_overwrites_an_existing_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("out");
        fs::write(&dest, b"old").unwrap();
        write_atomic(&dest, b"new", true).unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"new");
        assert_eq!(entries(tmp.path()), ["out"]);
    }

    #[test]
    fn write_atomic_without_replace_refuses_an_existing_file_and_keeps_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("out");
        fs::write(&dest, b"old").unwrap();
        let err = write_atomic(&dest, b"new", false).unwrap_err();
        assert!(matches!(err, FsError::AlreadyExists { .. }), "{err}");
        assert_eq!(fs::read(&dest).unwrap(), b"old");
        assert_eq!(entries(tmp.path()), ["out"]);
    }

    #[test]
    fn write_atomic_without_replace_treats_a_planted_symlink_as_existing() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("victim");
        fs::write(&target, b"precious").unwrap();
        let dest = tmp.path().join("out");
        symlink(&target, &dest).unwrap();
        let err = write_atomic(&dest, b"evil", false).unwrap_err();
        assert!(matches!(err, FsError::AlreadyExists { .. }), "{err}");
        assert_eq!(fs::read(&target).unwrap(), b"precious");
        assert!(fs::symlink_metadata(&dest).unwrap().file_type().is_symlink());
        assert_eq!(entries(tmp.path()), ["out", "victim"]);
    }

    #[test]
    fn write_atomic_without_replace_treats_a_dangling_symlink_as_existing() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("nowhere");
        let dest = tmp.path().join("out");
        symlink(&target, &dest).unwrap();
        let err = write_atomic(&dest, b"x", false).unwrap_err();
        assert!(matches!(err, FsError::AlreadyExists { .. }), "{err}");
        assert!(!target.exists());
    }

    #[test]
    fn write_atomic_with_replace_replaces_a_symlink_not_its_target() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("victim");
        fs::write(&target, b"precious").unwrap();
        let dest = tmp.path().join("out");
        symlink(&target, &dest).unwrap();
        write_atomic(&dest, b"new", true).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"precious");
        assert!(fs::symlink_metadata(&dest).unwrap().is_file());
        assert_eq!(fs::read(&dest).unwrap(), b"new");
    }

    #[test]
    fn write_atomic_names_the_temp_file_after_a_hidden_destination() {
        let (_, tmp) = temp_sibling(Path::new("/x/.memoree.toml")).unwrap();
        let name = tmp.file_name().unwrap().to_str().unwrap();
        let ulid = name.strip_prefix(".memoree.toml.tmp-").unwrap();
        assert_eq!(ulid.len(), 26);
        let (_, tmp) = temp_sibling(Path::new("/x/out.json")).unwrap();
        assert!(tmp.file_name().unwrap().to_str().unwrap().starts_with(".out.json.tmp-"));
    }

    #[test]
    fn write_atomic_into_a_missing_directory_fails_without_leaving_anything() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("missing/out");
        let err = write_atomic(&dest, b"x", false).unwrap_err();
        assert!(matches!(err, FsError::Io { .. }), "{err}");
        assert!(entries(tmp.path()).is_empty());
    }

    #[test]
    fn rename_noreplace_moves_a_file_to_a_free_name() {
        let tmp = tempfile::tempdir().unwrap();
        let (from, to) = (tmp.path().join("a"), tmp.path().join("b"));
        fs::write(&from, b"x").unwrap();
        rename_noreplace(&from, &to).unwrap();
        assert_eq!(entries(tmp.path()), ["b"]);
    }

    #[test]
    fn rename_noreplace_refuses_an_existing_destination() {
        let tmp = tempfile::tempdir().unwrap();
        let (from, to) = (tmp.path().join("a"), tmp.path().join("b"));
        fs::write(&from, b"new").unwrap();
        fs::write(&to, b"old").unwrap();
        let err = rename_noreplace(&from, &to).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&to).unwrap(), b"old");
        assert_eq!(fs::read(&from).unwrap(), b"new");
    }

    #[test]
    fn rename_noreplace_refuses_an_existing_directory_destination() {
        let tmp = tempfile::tempdir().unwrap();
        let (from, to) = (tmp.path().join("staging"), tmp.path().join("backup"));
        fs::create_dir(&from).unwrap();
        fs::create_dir(&to).unwrap();
        let err = rename_noreplace(&from, &to).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert!(from.is_dir());
    }

    #[test]
    fn dir_size_counts_regular_files_recursively_and_skips_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("a"), b"12345").unwrap();
        fs::create_dir_all(tmp.path().join("x/y")).unwrap();
        fs::write(tmp.path().join("x/y/b"), b"123").unwrap();
        symlink(tmp.path().join("a"), tmp.path().join("x/link")).unwrap();
        assert_eq!(dir_size(tmp.path()).unwrap(), (8, 2));
        assert!(dir_size(&tmp.path().join("missing")).is_err());
    }

    #[test]
    fn disk_free_bytes_reports_a_figure_for_an_existing_path() {
        let tmp = tempfile::tempdir().unwrap();
        disk_free_bytes(tmp.path()).unwrap();
        assert!(disk_free_bytes(&tmp.path().join("missing")).is_err());
    }

    #[test]
    fn fsync_dir_succeeds_on_a_directory() {
        let tmp = tempfile::tempdir().unwrap();
        fsync_dir(tmp.path()).unwrap();
    }
}
