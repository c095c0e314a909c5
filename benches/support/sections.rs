//! Section filtering for benches that print reports outside criterion (included with
//! `#[path]`): `cargo bench --bench transport -- frame` runs only the sections whose name
//! contains `frame`.

/// Whether a section runs: all of them, or those matching the first filter argument.
pub fn selected(section: &str) -> bool {
    std::env::args()
        .skip(1)
        .find(|arg| !arg.starts_with('-'))
        .is_none_or(|filter| section.contains(&filter))
}
