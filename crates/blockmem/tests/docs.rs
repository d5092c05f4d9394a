//! The documents agree with the code.
//!
//! * The kernel tables of `README.md` and of the crate docs (`src/lib.rs`) are the
//!   code's kernel table ([`blockmem::kernel::table`]: name, ops, required CPU
//!   features, summary) rendered as Markdown, between `<!-- kernels:begin -->` and
//!   `<!-- kernels:end -->`.
//! * The rows the README quotes from the built-in table for Intel CPUs with AVX-512
//!   (between `<!-- builtin-rows:begin -->` and `<!-- builtin-rows:end -->`) are lines of
//!   its file, `crates/blockmem/tables/intel-avx512.profile`.
//! * `crates/blockmem/tables/` holds one file per built-in class, each the text compiled
//!   in, and every `docs/results/...` its comments cite exists.
//! * The README's environment table (between `<!-- env:begin -->` and
//!   `<!-- env:end -->`) names exactly the `BLOCKMEM_*` variables the workspace reads
//!   (every `"BLOCKMEM_…"` string literal in `crates/`).
//!
//! A failing test prints the expected text; `BLOCKMEM_BLESS=1 cargo test -p blockmem
//! --test docs` writes the kernel tables into both files.
#![cfg(target_arch = "x86_64")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The kernel table as Markdown, one line per kernel in table order.
fn kernel_table() -> Vec<String> {
    let mut out = vec![
        "| kernel | ops | CPU features | what it does |".to_string(),
        "|---|---|---|---|".to_string(),
    ];
    for k in blockmem::kernel::table() {
        let ops: Vec<&str> = k.ops().map(|op| op.name()).collect();
        let needs: Vec<&str> = k.requires.names().collect();
        out.push(format!(
            "| `{}` | {} | {} | {} |",
            k.name(),
            ops.join(", "),
            if needs.is_empty() {
                "—".to_string()
            } else {
                needs.join(", ")
            },
            k.summary
        ));
    }
    out
}

/// The lines between `<!-- NAME:begin -->` and `<!-- NAME:end -->`, each with
/// `prefix` (the line's comment marker) removed, and the byte range they occupy.
fn block(text: &str, name: &str, prefix: &str) -> Option<(Vec<String>, std::ops::Range<usize>)> {
    let begin = format!("{prefix}<!-- {name}:begin -->\n");
    let end = format!("{prefix}<!-- {name}:end -->");
    let start = text.find(&begin)? + begin.len();
    let stop = start + text[start..].find(&end)?;
    let lines = text[start..stop]
        .lines()
        .map(|l| l.strip_prefix(prefix).unwrap_or(l).trim_end().to_string())
        .collect();
    Some((lines, start..stop))
}

/// Checks (or with `BLOCKMEM_BLESS` set, rewrites) the kernel table of `file`, whose
/// lines carry `prefix`.
fn check_kernel_table(file: &str, prefix: &str) {
    let path = root().join(file);
    let text = read(&path);
    let (found, range) = block(&text, "kernels", prefix).unwrap_or_else(|| {
        panic!("{file}: no `{prefix}<!-- kernels:begin -->` … `{prefix}<!-- kernels:end -->` block")
    });
    let want = kernel_table();
    if found == want {
        return;
    }
    let rendered: String = want
        .iter()
        .map(|l| format!("{prefix}{l}").trim_end().to_string() + "\n")
        .collect();
    if std::env::var_os("BLOCKMEM_BLESS").is_some() {
        let mut new = text.clone();
        new.replace_range(range, &rendered);
        std::fs::write(&path, new).unwrap_or_else(|e| panic!("{file}: {e}"));
        return;
    }
    panic!(
        "{file}: the kernel table differs from blockmem::kernel::table(). Replace the lines \
         between the markers with:\n\n{rendered}\n(or run `BLOCKMEM_BLESS=1 cargo test -p \
         blockmem --test docs`)"
    );
}

#[test]
fn readme_kernel_table_is_the_codes() {
    check_kernel_table("README.md", "");
}

#[test]
fn crate_docs_kernel_table_is_the_codes() {
    check_kernel_table("crates/blockmem/src/lib.rs", "//! ");
}

#[test]
fn readme_builtin_rows_are_lines_of_the_intel_avx512_file() {
    let readme = read(&root().join("README.md"));
    let (lines, _) = block(&readme, "builtin-rows", "")
        .expect("README.md: no `<!-- builtin-rows:begin -->` … `<!-- builtin-rows:end -->` block");
    let class = blockmem::builtin::Class::IntelAvx512;
    // The file's rows, `KEY = ROW` with the key's alignment padding dropped.
    let file_rows: Vec<(&str, &str)> = class
        .text()
        .lines()
        .filter_map(|l| l.split_once(" = "))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    let rows: Vec<&String> = lines.iter().filter(|l| !l.starts_with("```")).collect();
    assert!(
        !rows.is_empty(),
        "README.md: the builtin-rows block is empty"
    );
    for line in rows {
        let (key, row) = line
            .split_once(" = ")
            .unwrap_or_else(|| panic!("README.md: {line:?} is not `KEY = ROW`"));
        let want = file_rows
            .iter()
            .find(|(k, _)| *k == key)
            .unwrap_or_else(|| panic!("README.md: no row {key:?} in tables/intel-avx512.profile"));
        assert_eq!(
            row, want.1,
            "README.md: row {key} of crates/blockmem/tables/intel-avx512.profile is now\n{key} = {}",
            want.1
        );
    }
}

#[test]
fn every_table_file_is_a_class_and_its_evidence_exists() {
    let dir = root().join("crates/blockmem/tables");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            e.expect("directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    files.sort();
    let mut classes: Vec<String> = blockmem::builtin::Class::ALL
        .iter()
        .map(|c| format!("{}.profile", c.name()))
        .collect();
    classes.sort();
    assert_eq!(
        files, classes,
        "crates/blockmem/tables/ holds one file per builtin::Class"
    );
    for c in blockmem::builtin::Class::ALL {
        let text = c.text();
        assert_eq!(
            read(&dir.join(format!("{}.profile", c.name()))),
            text,
            "{}",
            c.name()
        );
        let (parsed, _) = blockmem::profile::parse(text.as_bytes(), c.table())
            .unwrap_or_else(|e| panic!("tables/{}.profile: {e}", c.name()));
        assert_eq!(&parsed, c.table(), "{}", c.name());
        let cited: Vec<&str> = text
            .match_indices("docs/results/")
            .map(|(i, _)| {
                let rest = &text[i..];
                &rest[..rest
                    .find(|ch: char| ch.is_whitespace())
                    .unwrap_or(rest.len())]
            })
            .collect();
        assert!(
            !cited.is_empty(),
            "tables/{}.profile cites no docs/results",
            c.name()
        );
        for path in cited {
            assert!(
                root().join(path).exists(),
                "tables/{}.profile: {path} does not exist",
                c.name()
            );
        }
    }
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The `BLOCKMEM_[A-Z_]*` names that directly follow `opening` in `text`: those in
/// string literals when `opening` is `"`, those in code spans when it is a backtick.
fn blockmem_names(text: &str, opening: char) -> BTreeSet<String> {
    let pattern = format!("{opening}BLOCKMEM_");
    let mut names = BTreeSet::new();
    for (i, _) in text.match_indices(&pattern) {
        let rest = &text[i + opening.len_utf8()..];
        let len = rest
            .find(|c: char| !(c.is_ascii_uppercase() || c == '_'))
            .unwrap_or(rest.len());
        // `"BLOCKMEM_"` alone is a prefix test, not a variable.
        if !rest[..len].ends_with('_') {
            names.insert(rest[..len].to_string());
        }
    }
    names
}

#[test]
fn readme_lists_exactly_the_environment_variables_the_code_reads() {
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    let read_by_code: BTreeSet<String> = files
        .iter()
        .flat_map(|f| blockmem_names(&read(f), '"'))
        .collect();
    assert!(
        read_by_code.contains("BLOCKMEM_PROFILE"),
        "the scan found no variable: {read_by_code:?}"
    );
    let readme = read(&root().join("README.md"));
    let (lines, _) = block(&readme, "env", "")
        .expect("README.md: no `<!-- env:begin -->` … `<!-- env:end -->` block");
    // The variable a row documents: the first code span of the row.
    let documented: BTreeSet<String> = lines
        .iter()
        .filter(|l| l.starts_with("| `BLOCKMEM_"))
        .flat_map(|l| blockmem_names(l, '`').into_iter().take(1))
        .collect();
    let missing: Vec<_> = read_by_code.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&read_by_code).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "README.md's environment table: read by the code but not documented: {missing:?}; \
         documented but read nowhere: {extra:?}"
    );
}
