//! Process-wide allocator settings of `memoree serve` (glibc only; elsewhere no-ops).
//!
//! A daemon serves occasional very large requests (an 8 MiB artifact arrives as a frame of
//! up to 12 MiB and is copied a few times while it is decoded and indexed) between long idle
//! stretches. glibc's defaults keep that memory: its mmap threshold grows to the largest
//! block freed (up to 32 MiB), after which large buffers come from the heap and stay
//! mapped, and every thread of the blocking pool may get its own arena. A fixed threshold
//! returns each large buffer to the system when it is freed; one arena keeps every thread's
//! blocks in one heap, so memory freed by one thread is reused by the next (a second arena
//! held about 1 MiB more after a 10k-artifact load and its first reads in
//! `benches/storage.rs`; glibc's per-thread caches keep small allocations off the arena
//! lock); and a trim after a large request hands back what the many small blocks
//! of that request left free.

/// A request or reply frame of at least this many bytes is followed by a trim.
pub(super) const LARGE_FRAME_BYTES: usize = 1024 * 1024;

/// Applies the daemon's allocator settings. Call before the runtime starts its threads.
pub(super) fn tune() {
    crate::sys::tune_allocator();
}

/// Returns free heap memory to the system (after a large request).
pub(super) fn release() {
    crate::sys::release_free_memory();
}
