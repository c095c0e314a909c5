//! The only module with `unsafe` code: the few system calls neither `std` nor `rustix`
//! offers safely. Every block states why it is sound. Everything else in the crate reaches
//! the OS through `std` or `rustix` (`crate::net` for sockets), so
//! `grep -rn 'unsafe {' src` finds only this file.
//!
//! - glibc allocator tuning for the daemon (`mallopt`, `malloc_trim`);
//! - the password-database home directory (`getpwuid_r`);
//! - starting a child in a new session (`pre_exec` + `setsid`);
//! - the peer uid of a Unix socket where the kernel has no `SO_PEERCRED` (`getpeereid`).

use std::ffi::OsString;
use std::process::Command;

/// Blocks of at least this size are mapped and unmapped individually.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 256 * 1024;
/// At most this many malloc arenas (see `daemon::memory`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const ARENA_MAX: libc::c_int = 1;

/// Sets a fixed mmap threshold and one arena (glibc only; elsewhere a no-op). See
/// `daemon::memory` for why. Call before the runtime starts its threads.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters and is thread-safe in glibc.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_ARENA_MAX, ARENA_MAX);
    }
}

/// Returns free heap memory to the system (glibc only; elsewhere a no-op).
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it takes the allocator's own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The current user's home directory from the password database.
pub fn passwd_home() -> Option<OsString> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStringExt;

    let uid = rustix::process::getuid().as_raw();
    let mut buf = vec![0u8; 4096];
    loop {
        let mut pwd = std::mem::MaybeUninit::<libc::passwd>::uninit();
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: `pwd` and `found` point to writable locals, and `buf` is a writable
        // buffer of exactly `buf.len()` bytes. On success `found` points to `pwd`, which
        // the call initialised, and `pw_dir` is NUL-terminated inside `buf`, which is alive
        // while the bytes are copied out.
        let home = unsafe {
            let rc = libc::getpwuid_r(uid, pwd.as_mut_ptr(), buf.as_mut_ptr().cast(), buf.len(), &mut found);
            if rc == libc::ERANGE && buf.len() < 1 << 20 {
                None
            } else if rc != 0 || found.is_null() || (*found).pw_dir.is_null() {
                return None;
            } else {
                Some(CStr::from_ptr((*found).pw_dir).to_bytes().to_vec())
            }
        };
        match home {
            None => buf.resize(buf.len() * 2, 0),
            Some(bytes) => return (!bytes.is_empty()).then(|| OsString::from_vec(bytes)),
        }
    }
}

/// Makes `command` start its child in a new session (`setsid`), so it outlives the
/// terminal and the process group of whoever started it.
pub fn spawn_in_new_session(command: &mut Command) {
    use std::os::unix::process::CommandExt;

    // SAFETY: the closure runs in the child between fork and exec and only calls `setsid`,
    // which is async-signal-safe, and converts its error code; it allocates nothing.
    unsafe {
        command.pre_exec(|| rustix::process::setsid().map(drop).map_err(std::io::Error::from));
    }
}

/// The uid of the peer of a connected Unix socket, where there is no `SO_PEERCRED`.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn peer_uid(stream: &std::os::unix::net::UnixStream) -> std::io::Result<u32> {
    use std::os::fd::AsRawFd;

    let mut uid: libc::uid_t = 0;
    let mut gid: libc::gid_t = 0;
    // SAFETY: `uid` and `gid` are writable locals and the descriptor is open for the
    // duration of the call.
    if unsafe { libc::getpeereid(stream.as_raw_fd(), &mut uid, &mut gid) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(uid)
}
