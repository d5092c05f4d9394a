//! Real programs give byte-identical results with and without the shim, and the
//! statistics line proves the shim did their copies: python3, sort, gzip | gunzip,
//! tar, sqlite3, git. Inputs are generated deterministically and sized to keep the
//! suite quick (the 100 MB sort is the big one).

mod common;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::*;

/// Deterministic bytes (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Text lines of random words (compressible, sortable).
fn text(bytes: usize, seed: u64) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "cache",
        "line",
        "copy",
        "stream",
        "prefetch",
        "dirty",
        "clean",
        "hot",
        "temporal",
        "store",
        "block",
        "zero",
        "kernel",
        "policy",
        "memmove",
        "alignment",
    ];
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(bytes + 128);
    while out.len() < bytes {
        let words = 1 + rng.below(12);
        for w in 0..words {
            if w > 0 {
                out.push(b' ');
            }
            out.extend_from_slice(WORDS[rng.below(16) as usize].as_bytes());
            if rng.below(4) == 0 {
                write!(out, "{}", rng.below(1_000_000)).unwrap();
            }
        }
        out.push(b'\n');
    }
    out
}

/// Random bytes (incompressible).
fn noise(bytes: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    (0..bytes.div_ceil(8))
        .flat_map(|_| rng.next().to_le_bytes())
        .take(bytes)
        .collect()
}

/// Runs `build(false)` and `build(true)` (the latter under the shim with statistics),
/// checks both succeeded, returns (plain, shimmed) outputs and the statistics lines.
fn both(build: impl Fn(bool) -> Command) -> (Output, Output, Vec<Stats>) {
    let plain_out = run_ok(&mut build(false));
    let shim_out = run_ok(&mut build(true));
    let stats = stats_lines(&shim_out.stderr);
    (plain_out, shim_out, stats)
}

fn command(program: &str, shimmed: bool) -> Command {
    if shimmed {
        let mut c = under_shim(program);
        c.env("BLOCKMEM_STATS", "1");
        c
    } else {
        plain(program)
    }
}

/// The shim did real work: some process made `min_calls` calls through it.
fn assert_shim_worked(what: &str, stats: &[Stats], min_calls: u64) {
    let total: u64 = stats.iter().map(Stats::calls).sum();
    assert!(
        total >= min_calls,
        "{what}: only {total} calls through the shim:\n{}",
        stats
            .iter()
            .map(|s| s.line.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!(
        "{what}: {} process(es), {total} calls; largest: {}",
        stats.len(),
        stats
            .iter()
            .max_by_key(|s| s.calls())
            .map_or("", |s| &s.line)
    );
}

fn require(tool: &str) {
    assert!(
        have(tool),
        "{tool} is not installed: run scripts/deps.sh (the test suite needs it)"
    );
}

#[test]
fn python_copies_slices_and_joins() {
    require("python3");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/copies.py");
    let (a, b, stats) = both(|shim| {
        let mut c = command("python3", shim);
        c.arg("-I").arg(&script);
        c
    });
    assert!(a.stdout.ends_with(b"\n") && a.stdout.len() > 100);
    assert_eq!(a.stdout, b.stdout, "python3 output differs under the shim");
    assert_shim_worked("python3", &stats, 1000);
    // The 256 MiB copies went through blockmem too.
    let bytes: u64 = stats.iter().map(|s| s.op("copy").1 + s.op("move").1).sum();
    assert!(
        bytes > 1 << 30,
        "python copied only {bytes} bytes through the shim"
    );
}

#[test]
fn sort_100_mb() {
    require("sort");
    let dir = scratch("real-sort");
    let input = dir.join("input.txt");
    fs::write(&input, text(100 << 20, 1)).unwrap();
    let outputs = [dir.join("plain.txt"), dir.join("shim.txt")];
    let (_, _, stats) = both(|shim| {
        let mut c = command("sort", shim);
        c.env("LC_ALL", "C")
            .arg("-o")
            .arg(&outputs[shim as usize])
            .arg(&input);
        c
    });
    let (a, b) = (
        fs::read(&outputs[0]).unwrap(),
        fs::read(&outputs[1]).unwrap(),
    );
    assert_eq!(
        a.len() as u64,
        fs::metadata(&input).unwrap().len(),
        "sort lost bytes"
    );
    assert!(a == b, "sort output differs under the shim");
    assert_shim_worked("sort", &stats, 1000);
    for f in [&input, &outputs[0], &outputs[1]] {
        let _ = fs::remove_file(f);
    }
}

#[test]
fn gzip_gunzip_round_trip() {
    require("gzip");
    let dir = scratch("real-gzip");
    let input = dir.join("input");
    let mut data = text(12 << 20, 2);
    data.extend(noise(4 << 20, 3));
    data.extend(text(4 << 20, 4));
    fs::write(&input, &data).unwrap();
    // gzip -n: no name or time stamp in the header, so the bytes must match exactly.
    let (a, b, stats) = both(|shim| {
        let mut c = command("gzip", shim);
        c.args(["-n", "-c"]).arg(&input);
        c
    });
    assert!(a.stdout == b.stdout, "gzip output differs under the shim");
    assert_shim_worked("gzip", &stats, 100);
    // And back, through a pipe, both sides under the shim.
    let mut gunzip = under_shim("gunzip")
        .env("BLOCKMEM_STATS", "1")
        .arg("-c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = gunzip.stdin.take().unwrap();
    let compressed = b.stdout.clone();
    let writer = std::thread::spawn(move || stdin.write_all(&compressed));
    let out = gunzip.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success());
    assert!(
        out.stdout == data,
        "gunzip under the shim did not restore the input"
    );
    assert_shim_worked("gunzip", &stats_lines(&out.stderr), 100);
}

/// A tree of directories and files of many sizes.
fn make_tree(root: &Path, seed: u64) -> usize {
    let mut rng = Rng(seed);
    let _ = fs::remove_dir_all(root);
    let mut files = 0;
    for d in 0..12 {
        let dir = root.join(format!("dir{d:02}/sub{}", d % 3));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..30 {
            let size = match rng.below(10) {
                0 => 0,
                1..=6 => rng.below(4096) as usize,
                7 | 8 => rng.below(256 << 10) as usize,
                _ => rng.below(1 << 20) as usize,
            };
            let body = if f % 2 == 0 {
                text(size, seed + files as u64)
            } else {
                noise(size, seed + files as u64)
            };
            fs::write(dir.join(format!("file{f:02}.dat")), &body[..size]).unwrap();
            files += 1;
        }
    }
    files
}

/// Every file under `root`, relative path and contents, sorted.
fn read_tree(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn tar_create_and_extract() {
    require("tar");
    let dir = scratch("real-tar");
    let tree = dir.join("tree");
    let files = make_tree(&tree, 5);
    // Reproducible archives: fixed order, times and owners.
    let (a, b, stats) = both(|shim| {
        let mut c = command("tar", shim);
        c.args([
            "--sort=name",
            "--mtime=@0",
            "--owner=0",
            "--group=0",
            "--numeric-owner",
            "-cf",
            "-",
            "-C",
        ])
        .arg(&tree)
        .arg(".");
        c
    });
    assert!(a.stdout.len() > 1 << 20);
    assert!(a.stdout == b.stdout, "tar archive differs under the shim");
    assert_shim_worked("tar -c", &stats, 100);

    let archive = dir.join("tree.tar");
    fs::write(&archive, &b.stdout).unwrap();
    let out_dir = dir.join("extracted");
    let _ = fs::remove_dir_all(&out_dir);
    fs::create_dir_all(&out_dir).unwrap();
    let out = run_ok(
        under_shim("tar")
            .env("BLOCKMEM_STATS", "1")
            .arg("-xf")
            .arg(&archive)
            .arg("-C")
            .arg(&out_dir),
    );
    assert_shim_worked("tar -x", &stats_lines(&out.stderr), 100);
    let (original, extracted) = (read_tree(&tree), read_tree(&out_dir));
    assert_eq!(original.len(), files);
    assert!(
        original == extracted,
        "extracted tree differs from the original"
    );
}

#[test]
fn sqlite_table_of_blobs() {
    require("sqlite3");
    let dir = scratch("real-sqlite");
    // Deterministic blobs of 0..8 KiB built from zeroblob/hex/replace, updates that
    // rewrite and move pages, deletes, a vacuum, and queries over the contents.
    let script = r#"
PRAGMA page_size = 4096;
CREATE TABLE blobs(id INTEGER PRIMARY KEY, tag TEXT, body BLOB);
WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 6000)
INSERT INTO blobs
  SELECT x, 'tag' || (x % 97),
         CAST(replace(hex(zeroblob((x * 7919) % 8192)), '00', char(65 + x % 26, 97 + x % 23)) AS BLOB)
  FROM n;
CREATE INDEX by_tag ON blobs(tag);
UPDATE blobs SET body = body || body WHERE id % 7 = 0;
UPDATE blobs SET body = substr(body, 100) WHERE id % 11 = 0;
DELETE FROM blobs WHERE id % 13 = 0;
VACUUM;
SELECT count(*), sum(length(body)), max(length(body)) FROM blobs;
SELECT tag, count(*), sum(length(body)) FROM blobs GROUP BY tag ORDER BY tag LIMIT 20;
SELECT id, length(body), hex(substr(body, 1, 12)), hex(substr(body, -12)) FROM blobs
  WHERE id % 500 = 1 ORDER BY id;
SELECT group_concat(hex(substr(body, length(body) / 2, 4)), '') FROM
  (SELECT body FROM blobs WHERE id % 37 = 0 ORDER BY id);
"#;
    let (a, b, stats) = both(|shim| {
        let db = dir.join(if shim { "shim.db" } else { "plain.db" });
        let _ = fs::remove_file(&db);
        let mut c = command("sqlite3", shim);
        c.arg(&db).arg(script);
        c
    });
    assert!(
        a.stdout.len() > 1000,
        "{}",
        String::from_utf8_lossy(&a.stdout)
    );
    assert_eq!(
        String::from_utf8_lossy(&a.stdout),
        String::from_utf8_lossy(&b.stdout),
        "sqlite3 output differs under the shim"
    );
    assert_shim_worked("sqlite3", &stats, 10_000);
    // The databases themselves, dumped as SQL, are identical too.
    let dump = |name: &str| run_ok(plain("sqlite3").arg(dir.join(name)).arg(".dump")).stdout;
    assert!(
        dump("plain.db") == dump("shim.db"),
        "database contents differ"
    );
}

#[test]
fn git_init_add_commit_log() {
    require("git");
    let root = scratch("real-git");
    let (a, b, stats) = both(|shim| {
        let repo = root.join(if shim { "shim" } else { "plain" });
        make_tree(&repo, 9);
        let script = r#"
set -e
git init -q -b main .
git add -A
git commit -q -m "generated tree"
for f in dir03/sub0/file04.dat dir07/sub1/file10.dat dir11/sub2/file00.dat; do
  printf 'changed %s\n' "$f" >> "$f"
done
git rm -q -r dir05
git add -A
git commit -q -m "edit some files, drop dir05"
git gc -q
git fsck --strict --no-progress
git log --stat --format='%H %an %ad %s' --date=raw
git diff --stat HEAD~1 HEAD
git cat-file -p HEAD^{tree} | head -5
git rev-parse HEAD
"#;
        let mut c = command("bash", shim);
        c.arg("-c")
            .arg(script)
            .current_dir(&repo)
            .env("HOME", &root)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "blockmem")
            .env("GIT_AUTHOR_EMAIL", "blockmem@example.invalid")
            .env("GIT_COMMITTER_NAME", "blockmem")
            .env("GIT_COMMITTER_EMAIL", "blockmem@example.invalid")
            .env("GIT_AUTHOR_DATE", "1700000000 +0000")
            .env("GIT_COMMITTER_DATE", "1700000000 +0000")
            .env("GIT_PAGER", "cat")
            .env("LC_ALL", "C");
        c
    });
    assert!(a.stdout.len() > 1000);
    assert_eq!(
        String::from_utf8_lossy(&a.stdout),
        String::from_utf8_lossy(&b.stdout),
        "git output (commit ids included) differs under the shim"
    );
    assert_shim_worked("git", &stats, 10_000);
    // Same objects: the packed repositories hold the same data.
    let objects = |name: &str| {
        let out = run_ok(
            plain("git")
                .args(["cat-file", "--batch-all-objects", "--batch-check"])
                .current_dir(root.join(name)),
        );
        out.stdout
    };
    assert!(objects("plain") == objects("shim"));
}

/// A rejected profile is reported once per process tree: a shell script under the shim
/// whose commands are processes of their own (a nested shell, `env`, `ls`, a loop)
/// prints the warning once, from the shell, while every process's statistics line
/// still says the profile was rejected. A child given another bad profile reports
/// that one.
#[test]
fn a_bad_profile_is_reported_once_per_process_tree() {
    let dir = scratch("warn-once");
    let bad = dir.join("bad-profile");
    let other = dir.join("other-bad-profile");
    fs::write(&bad, "version = 9\n").unwrap();
    fs::write(&other, "version = 8\n").unwrap();
    let script = "/bin/true; ls / > /dev/null; env /bin/true; sh -c '/bin/true; /bin/true'; \
                  for i in 1 2 3; do /bin/true; done; BLOCKMEM_PROFILE=\"$OTHER\" /bin/true";
    let out = run_ok(
        under_shim("sh")
            .args(["-c", script])
            .env("BLOCKMEM_PROFILE", &bad)
            .env("OTHER", &other)
            .env("BLOCKMEM_STATS", "1"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("blockmem: profile "))
        .collect();
    let named = |p: &Path| format!("blockmem: profile {} rejected: ", p.display());
    assert_eq!(warnings.len(), 2, "{err}");
    assert!(warnings[0].starts_with(&named(&bad)), "{err}");
    assert!(warnings[1].starts_with(&named(&other)), "{err}");
    // At least 8 processes: /bin/true, ls, env (which execs /bin/true), the inner sh
    // (which execs its last command) and its first, the loop's three, the last (which
    // the outer sh may exec).
    let stats = stats_lines(&out.stderr);
    assert!(stats.len() >= 8, "{} statistics lines: {err}", stats.len());
    assert!(
        stats.iter().all(|s| s.line.contains("(rejected: ")),
        "{err}"
    );
}
