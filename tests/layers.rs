//! The layer rules of ARCHITECTURE.md, checked on the source text.
//!
//! Every `crate::…`, `$crate::…`, `super::…` and `self::…` path in
//! `src/**/*.rs` (outside comments and test code) is resolved to the module
//! it names. Two rules must hold:
//!
//! 1. **No import from a layer above.** The layers, bottom to top: `core`,
//!    `store`, `service`, `adapter`; `testkit` sits above them all and only
//!    test code may use it. A module may import from its own layer and the
//!    layers below. Internal code names the layer paths, not the public
//!    re-exports of `lib.rs` (`crate::campaign`, `crate::CampaignService`):
//!    only the error type's root names and the `string_enum!` macro (which
//!    `#[macro_export]` puts at the root) may be named from the root.
//! 2. **No circle.** An import from module `a::x::…` into `a::y::…` is an
//!    edge `x → y` between the siblings `x` and `y` of `a`; these edges form
//!    no cycle. (A module and its own descendants may refer to each other:
//!    a parent declares and re-exports its children, a child uses `super`.)
//!
//! The checker is tested on small synthetic trees below, so it can fail.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Layer ranks, bottom to top.
const LAYERS: &[&str] = &["core", "store", "service", "adapter", "testkit"];

/// Names the crate root defines or re-exports that internal code may use.
const ROOT_NAMES: &[&str] = &["Error", "ErrorKind", "FieldError", "Result", "string_enum"];

type Module = Vec<String>;

/// One source file: its module path and its text (test code cut).
struct File {
    module: Module,
    name: String,
    text: String,
}

/// The module path of `rel` (a path under `src/`, with `/`).
fn module_of(rel: &str) -> Module {
    let rel = rel.strip_suffix(".rs").expect("a .rs file");
    let mut parts: Vec<String> = rel.split('/').map(str::to_owned).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Whether a file holds only tests (`tests.rs`, `*_tests.rs`, `proptests.rs`).
fn is_test_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name == "tests.rs" || name.ends_with("_tests.rs") || name == "proptests.rs"
}

/// The text without comments and without inline test modules: code after a
/// `#[cfg(…test…)]` line followed by `mod name {` is test code to the end of
/// that module (by brace depth).
fn production_text(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        if t.starts_with("#[cfg(") && t.contains("test") {
            // Other attributes may stand between the cfg and the module.
            while lines.peek().is_some_and(|l| {
                l.trim_start().starts_with("#[") || l.trim_start().starts_with("//")
            }) {
                lines.next();
            }
            if let Some(next) = lines.peek() {
                let n = next.trim_start();
                if (n.starts_with("mod ") || n.starts_with("pub(crate) mod ")) && n.ends_with('{') {
                    // Skip the whole module.
                    let mut depth = 0usize;
                    for l in lines.by_ref() {
                        depth += l.matches('{').count();
                        depth = depth.saturating_sub(l.matches('}').count());
                        if depth == 0 {
                            break;
                        }
                    }
                    continue;
                }
            }
        }
        let code = match t.find("//") {
            Some(i) if !t[..i].contains('"') => &t[..i],
            _ => t,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Every path starting at `crate`, `$crate`, `super` or `self`, with use
/// groups (`crate::{a::b, c}`) expanded one path per leaf.
fn paths(text: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if starts_word && chars[i].is_alphabetic() {
            let mut j = i;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            let word: String = chars[i..j].iter().collect();
            let after_colons = i >= 2 && chars[i - 1] == ':' && chars[i - 2] == ':';
            if matches!(word.as_str(), "crate" | "super" | "self")
                && !after_colons
                && chars[j..].starts_with(&[':', ':'])
            {
                let (trees, end) = parse_tree(&chars, i);
                out.extend(trees);
                i = end.max(j);
                continue;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Parses a path or use tree at `i`: `a::b::{c, d::e}`; returns the leaf
/// paths and the index after it.
fn parse_tree(chars: &[char], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        let start = i;
        while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
            i += 1;
        }
        if i == start {
            // `*` or nothing: the prefix itself.
            if i < chars.len() && chars[i] == '*' {
                i += 1;
            }
            return (vec![prefix], i);
        }
        prefix.push(chars[start..i].iter().collect::<String>());
        if !chars[i..].starts_with(&[':', ':']) {
            // `a::f(…)` calls a function `f` of `a`, which may share its
            // name with a module of `a` (`http::openapi()`).
            if i < chars.len() && chars[i] == '(' {
                prefix.pop();
            }
            return (vec![prefix], i);
        }
        i += 2;
        if i < chars.len() && chars[i] == '{' {
            i += 1;
            let mut leaves = Vec::new();
            loop {
                while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ',') {
                    i += 1;
                }
                if i >= chars.len() || chars[i] == '}' {
                    return (leaves, i + 1);
                }
                let (sub, end) = parse_tree(chars, i);
                for s in sub {
                    let mut p = prefix.clone();
                    // `self` inside a group names the prefix itself.
                    p.extend(s.into_iter().filter(|x| x != "self"));
                    leaves.push(p);
                }
                i = end;
                // Skip `as name`.
                while i < chars.len() && !matches!(chars[i], ',' | '}') {
                    i += 1;
                }
            }
        }
    }
}

/// A rule broken, for the message.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Violation(String);

/// Checks the files; returns every violation.
fn check(files: &[File]) -> Vec<Violation> {
    let modules: BTreeSet<Module> = files.iter().map(|f| f.module.clone()).collect();
    let mut bad = BTreeSet::new();
    let mut edges: BTreeMap<(Module, Module), String> = BTreeMap::new();
    for f in files {
        for path in paths(&f.text) {
            let Some(target) = resolve(&f.module, &path, &modules) else {
                bad.insert(Violation(format!(
                    "{}: `{}` goes through a facade of lib.rs; name the layer path",
                    f.name,
                    path.join("::")
                )));
                continue;
            };
            let (Some(from), Some(to)) = (rank(&f.module), rank(&target)) else {
                continue;
            };
            if to > from {
                bad.insert(Violation(format!(
                    "{}: `{}` imports from {} (above {})",
                    f.name,
                    path.join("::"),
                    LAYERS[to],
                    LAYERS[from]
                )));
            }
            let common = f
                .module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common < f.module.len() && common < target.len() {
                let a = f.module[..=common].to_vec();
                let b = target[..=common].to_vec();
                edges
                    .entry((a, b))
                    .or_insert_with(|| format!("{} (`{}`)", f.name, path.join("::")));
            }
        }
    }
    for cycle in cycles(&edges) {
        let names: Vec<String> = cycle.iter().map(|m| m.join("::")).collect();
        let why: Vec<&str> = cycle
            .iter()
            .zip(cycle.iter().cycle().skip(1))
            .filter_map(|(a, b)| edges.get(&(a.clone(), b.clone())).map(String::as_str))
            .collect();
        bad.insert(Violation(format!(
            "modules import in a circle: {} — {}",
            names.join(" → "),
            why.join("; ")
        )));
    }
    bad.into_iter().collect()
}

/// The module a path names (the longest known module prefix), or `None`
/// when it names something at the root other than [`ROOT_NAMES`].
fn resolve(from: &Module, path: &[String], modules: &BTreeSet<Module>) -> Option<Module> {
    let mut base: Module = Vec::new();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => rest = &path[1..],
        Some("self") => {
            base.clone_from(from);
            rest = &path[1..];
        }
        Some("super") => {
            base.clone_from(from);
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        _ => return Some(from.clone()),
    }
    // The longest prefix that is a module (of a file).
    let mut module = base.clone();
    let mut next = base;
    for seg in rest {
        next.push(seg.clone());
        if modules.contains(&next) {
            module.clone_from(&next);
        }
    }
    if module.is_empty() {
        // At the root: a layer module itself, or an allowed root name.
        match rest.first() {
            None => return Some(module),
            Some(name) if ROOT_NAMES.contains(&name.as_str()) => return Some(vec!["core".into()]),
            Some(name) if LAYERS.contains(&name.as_str()) => return Some(vec![name.clone()]),
            Some(_) => return None,
        }
    }
    Some(module)
}

fn rank(m: &Module) -> Option<usize> {
    LAYERS
        .iter()
        .position(|l| m.first().is_some_and(|f| f == l))
}

/// The strongly connected components of more than one module, each as a
/// cycle through its members in edge order.
fn cycles(edges: &BTreeMap<(Module, Module), String>) -> Vec<Vec<Module>> {
    let mut graph: BTreeMap<&Module, Vec<&Module>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        graph.entry(a).or_default().push(b);
        graph.entry(b).or_default();
    }
    let mut found = Vec::new();
    let mut reported: BTreeSet<BTreeSet<&Module>> = BTreeSet::new();
    for &start in graph.keys() {
        // Shortest path back to `start` (breadth first).
        let mut prev: BTreeMap<&Module, &Module> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut closed = None;
        while let Some(m) = queue.pop_front() {
            for &n in &graph[m] {
                if n == start {
                    closed = Some(m);
                    break;
                }
                if !prev.contains_key(n) {
                    prev.insert(n, m);
                    queue.push_back(n);
                }
            }
            if closed.is_some() {
                break;
            }
        }
        if let Some(mut m) = closed {
            let mut cycle = vec![m];
            while m != start {
                m = prev[m];
                cycle.push(m);
            }
            cycle.reverse();
            let set: BTreeSet<&Module> = cycle.iter().copied().collect();
            if reported.insert(set) {
                found.push(cycle.into_iter().cloned().collect());
            }
        }
    }
    found
}

fn load(dir: &Path, root: &Path, out: &mut Vec<File>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src is readable")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            load(&path, root, out);
            continue;
        }
        let rel = path
            .strip_prefix(root)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        if path.extension().is_none_or(|e| e != "rs")
            || rel == "lib.rs"
            || rel == "main.rs"
            || is_test_file(&rel)
        {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a readable source file");
        out.push(file(&rel, &text));
    }
}

fn file(rel: &str, text: &str) -> File {
    let mut module = module_of(rel);
    // Files declared with `#[path]` from a non-mod.rs sibling are that
    // sibling's children.
    for (child, parent) in PATH_CHILDREN {
        if rel.ends_with(child) {
            module.pop();
            module.push((*parent).to_owned());
            module.push(
                child
                    .trim_end_matches(".rs")
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .to_owned(),
            );
        }
    }
    File {
        module,
        name: format!("src/{rel}"),
        text: production_text(text),
    }
}

/// `#[path]` children: (file, the module that declares it, a sibling).
const PATH_CHILDREN: &[(&str, &str)] = &[
    ("service/campaign/combine.rs", "service"),
    ("service/campaign/preview.rs", "service"),
];

#[test]
fn the_source_tree_keeps_the_layer_rules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    load(&root, &root, &mut files);
    assert!(files.len() > 100, "read {} files", files.len());
    let bad = check(&files);
    assert!(
        bad.is_empty(),
        "{} layer rule(s) broken:\n{}",
        bad.len(),
        bad.iter()
            .map(|v| v.0.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

// The checker itself, on synthetic trees.

fn tree(files: &[(&str, &str)]) -> Vec<Violation> {
    let files: Vec<File> = files
        .iter()
        .filter(|(rel, _)| !is_test_file(rel))
        .map(|(rel, text)| file(rel, text))
        .collect();
    check(&files)
}

#[test]
fn an_import_from_a_layer_above_is_reported() {
    let bad = tree(&[
        ("core/engine/mod.rs", "use crate::store::Page;\n"),
        ("store/mod.rs", "pub struct Page;\n"),
    ]);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].0.contains("src/core/engine/mod.rs"), "{bad:?}");
    assert!(
        bad[0].0.contains("imports from store (above core)"),
        "{bad:?}"
    );
}

#[test]
fn grouped_and_super_paths_are_resolved() {
    let bad = tree(&[
        ("service/mod.rs", "pub mod campaign;\n"),
        (
            "service/campaign.rs",
            "use crate::{Error, adapter::http::{Api, self}};\n",
        ),
        ("adapter/http/mod.rs", "pub struct Api;\n"),
        (
            "core/campaign/model.rs",
            "use super::super::super::adapter::http;\n",
        ),
    ]);
    // `Api` and `self` of the group, and the `super` chain.
    assert_eq!(bad.len(), 3, "{bad:?}");
    assert!(bad.iter().all(|v| v.0.contains("above")), "{bad:?}");
}

#[test]
fn a_facade_path_is_reported() {
    let bad = tree(&[
        (
            "service/campaign/mod.rs",
            "use crate::campaign::Campaign;\nuse crate::Error;\n",
        ),
        ("core/campaign/mod.rs", "pub struct Campaign;\n"),
    ]);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].0.contains("facade"), "{bad:?}");
}

#[test]
fn a_circle_between_siblings_is_reported() {
    let bad = tree(&[
        (
            "adapter/http/openapi/mod.rs",
            "use crate::adapter::http::ops::Health;\n",
        ),
        ("adapter/http/ops.rs", "use super::openapi::doc;\n"),
        (
            "adapter/http/mod.rs",
            "mod ops;\nmod openapi;\npub use ops::Health;\npub fn openapi() {}\n",
        ),
        ("adapter/http/metrics.rs", "fn f() { super::openapi(); }\n"),
    ]);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].0.contains("circle"), "{bad:?}");
    assert!(bad[0].0.contains("adapter::http::openapi"), "{bad:?}");
    assert!(bad[0].0.contains("adapter::http::ops"), "{bad:?}");
}

#[test]
fn parents_children_comments_and_tests_do_not_count() {
    let bad = tree(&[
        (
            "core/engine/mod.rs",
            "mod index;\nuse index::Index;\n// crate::adapter::http\n",
        ),
        (
            "core/engine/index.rs",
            "use super::Engine;\n#[cfg(test)]\nmod tests {\n    use crate::store::Page;\n}\n",
        ),
        ("core/consent/rules_tests.rs", "use crate::adapter::http;\n"),
    ]);
    assert!(bad.is_empty(), "{bad:?}");
}
