//! The modules of `store/` import each other without a cycle.
//!
//! The graph is read from the source: a node is a direct child of `store/` (a file, or a
//! directory module with everything under it, so `store/pg/*` is `pg`); an arrow A -> B is a
//! path from A's code (its `use` declarations and the paths written inline) that names B
//! through `crate::store::` or `super::`. An item of `store/mod.rs` (`Store`, `Tx`, `Event`)
//! is no node: every child may use the store's own types, and `mod.rs` holds the children
//! together; what `mod.rs` re-exports (`Db`, `StoreError`) counts as its module. Test code
//! (`tests.rs`, `tests/`, `test_seed.rs`, `#[cfg(test)] mod tests { … }`) and comments are
//! not read.
//!
//! What a text scan cannot see is not checked: a method defined in one module by an inherent
//! `impl` on a type of another (`impl Store` in `purge.rs`, `impl EntityType` in `sql.rs`) is
//! called without naming its module.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Arrows between the children of `store/`: `from -> to -> where` (file and path, for the
/// message).
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

#[test]
fn the_modules_of_store_import_each_other_without_a_cycle() {
    let graph = store_graph();
    // The scan reads what it should: arrows that the code has for certain.
    for (from, to) in [
        ("purge", "tombstone"),
        ("db", "error"),
        ("backup", "portable"),
        ("pg", "db"),
    ] {
        assert!(
            graph.get(from).is_some_and(|arrows| arrows.contains_key(to)),
            "the scan missed {from} -> {to}; it reads {graph:#?}"
        );
    }
    if let Some(cycle) = find_cycle(&graph) {
        let mut message = format!("store/ has an import cycle: {}\n", cycle.join(" -> "));
        for pair in cycle.windows(2) {
            let evidence = &graph[&pair[0]][&pair[1]];
            let evidence: Vec<&str> = evidence.iter().map(String::as_str).collect();
            message += &format!("  {} -> {}: {}\n", pair[0], pair[1], evidence.join(", "));
        }
        panic!("{message}break it by moving what both need below both (see ARCHITECTURE.md, store/)");
    }
}

#[test]
fn a_cycle_is_found_and_named_in_order() {
    let mut graph = Graph::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        graph
            .entry(from.to_owned())
            .or_default()
            .entry(to.to_owned())
            .or_default();
    }
    assert_eq!(find_cycle(&graph).unwrap(), ["a", "b", "c", "a"]);
    graph.get_mut("c").unwrap().remove("a");
    assert_eq!(find_cycle(&graph), None);
}

fn store_graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let store = src.join("store");
    let mut children = BTreeSet::new();
    for entry in fs::read_dir(&store).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if (path.extension().is_some_and(|e| e == "rs") && name != "mod") || (path.is_dir() && name != "migrations") {
            children.insert(name);
        }
    }
    let reexports = reexports(&fs::read_to_string(store.join("mod.rs")).unwrap(), &children);
    let mut graph = Graph::new();
    for file in rust_files(&store) {
        let relative = file.strip_prefix(&src).unwrap().with_extension("");
        let mut module: Vec<String> = relative.iter().map(|c| c.to_string_lossy().into_owned()).collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        let Some(node) = module.get(1).cloned() else { continue }; // store/mod.rs
        let text = fs::read_to_string(&file).unwrap();
        for path in paths(&code_of(&text)) {
            let Some(absolute) = resolve(&module, &path) else {
                continue;
            };
            let [krate, store, name, ..] = absolute.as_slice() else {
                continue;
            };
            if krate != "crate" || store != "store" {
                continue;
            }
            let target = if children.contains(name) {
                Some(name)
            } else {
                reexports.get(name)
            };
            if let Some(target) = target.filter(|t| **t != node) {
                let shown = format!("{}: {}", file.strip_prefix(&src).unwrap().display(), path.join("::"));
                graph
                    .entry(node.clone())
                    .or_default()
                    .entry(target.clone())
                    .or_default()
                    .insert(shown);
            }
        }
    }
    graph
}

/// Every `.rs` file under `dir` but test code.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if name.starts_with("test") {
            continue;
        }
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if name.ends_with(".rs") {
            files.push(path);
        }
    }
    files
}

/// `name -> child` for the `pub use child::…` declarations of `store/mod.rs`.
fn reexports(text: &str, children: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for path in use_paths(&code_of(text)) {
        if let [child, name] = path.as_slice()
            && children.contains(child)
        {
            map.insert(name.clone(), child.clone());
        }
    }
    map
}

/// The text without comment lines and without the inline test module.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests {").next().unwrap_or_default();
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path the code names: its `use` trees flattened (`a::{b, c::d}` is `a::b` and
/// `a::c::d`) and `x::y::z` wherever it is written.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = use_paths(code);
    for word in code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')) {
        if word.contains("::") {
            out.push(word.split("::").filter(|s| !s.is_empty()).map(str::to_owned).collect());
        }
    }
    out
}

/// The paths of the `use` declarations (`pub` or not) of `code`, flattened.
fn use_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let declaration = ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
            .into_iter()
            .find(|keyword| trimmed.starts_with(keyword));
        if let Some(keyword) = declaration {
            let start = offset + (line.len() - trimmed.len()) + keyword.len();
            if let Some(end) = code[start..].find(';') {
                flatten(&code[start..start + end], &mut Vec::new(), &mut out);
            }
        }
        offset += line.len();
    }
    out
}

/// Adds the paths of one `use` tree (`tree` follows `prefix`) to `out`.
fn flatten(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or_default();
        let mut full = prefix.clone();
        full.extend(
            path.split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
        out.push(full);
        return;
    };
    let depth = prefix.len();
    prefix.extend(
        tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
    );
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut level, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => level += 1,
            '}' => level -= 1,
            ',' if level == 0 => {
                flatten(&inner[start..i], prefix, out);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !inner[start..].trim().is_empty() {
        flatten(&inner[start..], prefix, out);
    }
    prefix.truncate(depth);
}

/// The absolute path (`crate::…`) that `path`, written in `module`, names; `None` for a path
/// that starts elsewhere (a dependency, `std`, a local name).
fn resolve(module: &[String], path: &[String]) -> Option<Vec<String>> {
    match path.first()?.as_str() {
        "crate" => Some(path.to_vec()),
        "super" | "self" => {
            let mut absolute: Vec<String> = std::iter::once("crate".to_owned())
                .chain(module.iter().cloned())
                .collect();
            let mut rest = path;
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "super" => drop(absolute.pop()),
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
            absolute.extend(rest.iter().cloned());
            Some(absolute)
        }
        _ => None,
    }
}

/// A cycle of `graph` as its nodes in order, the first repeated at the end.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit<'g>(
        node: &'g str,
        graph: &'g Graph,
        done: &mut BTreeSet<&'g str>,
        path: &mut Vec<&'g str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| *n == node) {
            let mut cycle: Vec<String> = path[at..].iter().map(|n| (*n).to_owned()).collect();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node);
        for next in graph.get(node).into_iter().flat_map(BTreeMap::keys) {
            if let Some(cycle) = visit(next, graph, done, path) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node);
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}
