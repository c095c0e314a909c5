//! Hostile `backup.create` destinations: relative paths, `..` components, paths into the
//! data directory, existing files, directories and symbolic links (dangling, to a file, to
//! a directory, into the data directory), unusable parents and unusable names. A refused
//! destination creates nothing anywhere; symbolic link targets are never touched.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::{Expect, Sweep};
use crate::protocol::{ErrorCode, Operation};

const INVALID: Expect = Expect::Fail(ErrorCode::InvalidRequest);

/// Every entry under `root` (symbolic links not followed): its kind, and a file's size or
/// a link's target.
fn tree(root: &Path, skip: &[&Path]) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if skip.contains(&path.as_path()) {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("link -> {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                stack.push(path.clone());
                "dir".to_owned()
            } else {
                format!("file of {} bytes", meta.len())
            };
            out.insert(path, what);
        }
    }
    out
}

pub(super) fn sweep(sweep: &mut Sweep) {
    let root = sweep.root.clone();
    let data = sweep.data_dir.clone();
    let sandbox = root.join("sandbox");
    let dir = sandbox.join("dir");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("keep"), "kept").unwrap();
    std::fs::write(sandbox.join("file"), "precious").unwrap();
    symlink(sandbox.join("nowhere"), sandbox.join("dangling")).unwrap();
    symlink(&dir, sandbox.join("to-dir")).unwrap();
    symlink(sandbox.join("file"), sandbox.join("to-file")).unwrap();
    symlink(&data, sandbox.join("to-data")).unwrap();

    let s = sandbox.to_str().unwrap();
    let d = data.to_str().unwrap();
    let long_name = "n".repeat(300);
    let long_path = format!("{s}/{}bk", "d/".repeat(2100));
    let refused: Vec<String> = vec![
        "bk".into(),
        "../bk".into(),
        "./bk".into(),
        "~/bk".into(),
        "C:\\bk".into(),
        "".into(),
        "   ".into(),
        "/".into(),
        format!("{s}/.."),
        format!("{s}/."),
        format!("{s}/file"),
        format!("{s}/dir"),
        format!("{s}/dangling"),
        format!("{s}/to-dir"),
        format!("{s}/to-file"),
        format!("{s}/to-data"),
        format!("{s}/to-data/bk"),
        format!("{s}/to-data/blobs/bk"),
        format!("{s}/dangling/bk"),
        format!("{s}/to-file/bk"),
        format!("{s}/file/bk"),
        format!("{s}/file/../bk"),
        format!("{s}/missing/../bk"),
        format!("{s}/missing/../../data/bk"),
        format!("{s}/missing/deeper/../../../data/bk"),
        format!("{s}/../data/bk"),
        format!("{s}/dir/../../data/bk"),
        format!("{s}/dir/../to-data/bk"),
        d.into(),
        format!("{d}/bk"),
        format!("{d}/blobs/bk"),
        format!("{d}/memoree.sqlite3"),
        format!("{d}/./bk"),
        format!("{s}/a\u{0}b"),
        format!("{s}/{long_name}"),
        format!("{s}/{long_name}/bk"),
        long_path,
        "/proc/memoree-sweep/bk".into(),
        "/dev/null/bk".into(),
    ];
    // The data directory changes by itself (WAL); earlier backups are not in question.
    let backups = root.join("backups");
    let skip = [data.as_path(), backups.as_path()];
    for destination in refused {
        let before = tree(&root, &skip);
        let envelope = sweep.envelope(Operation::BackupCreate, json!({"destination": destination}));
        let label = format!("backup.create destination {:?}", truncate(&destination));
        let response = sweep.check("backup destination", &label, envelope, INVALID);
        let after = tree(&root, &skip);
        if before != after {
            let added: Vec<_> = after.keys().filter(|p| !before.contains_key(*p)).collect();
            let error = response.error.map(|e| e.message);
            sweep.problems.push(format!(
                "{label} ({error:?}) changed the filesystem; new entries: {added:?}"
            ));
        }
    }
    assert_eq!(std::fs::read_to_string(sandbox.join("file")).unwrap(), "precious");
    assert_eq!(std::fs::read_to_string(dir.join("keep")).unwrap(), "kept");
    assert!(!sandbox.join("nowhere").exists());

    // Absolute paths that resolve to somewhere new are fine, `..` included.
    for (destination, lands) in [
        (format!("{s}/new/deeper/bk"), sandbox.join("new/deeper/bk")),
        (format!("{s}/dir/../fresh"), sandbox.join("fresh")),
        (format!("{s}/to-dir/linked"), dir.join("linked")),
        (
            format!("{s}/with space/ünïcode bk"),
            sandbox.join("with space/ünïcode bk"),
        ),
    ] {
        let envelope = sweep.envelope(Operation::BackupCreate, json!({"destination": destination}));
        let label = format!("backup.create destination {destination:?}");
        sweep.check("backup destination", &label, envelope, Expect::Success);
        assert!(
            lands.join("memoree.sqlite3").is_file(),
            "{label} did not land at {}",
            lands.display()
        );
    }
}

fn truncate(text: &str) -> String {
    if text.len() <= 80 {
        return text.to_owned();
    }
    format!("{}…({} bytes)", &text[..text.floor_char_boundary(80)], text.len())
}
