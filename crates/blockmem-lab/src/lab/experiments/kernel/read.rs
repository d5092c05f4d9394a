//! The read fast path (seed 000 §1): a file already in the page cache read into a user
//! buffer with `read` and `pread`, beside the same bytes copied from an `mmap` of the
//! file with libc's `memcpy` and blockmem's `auto`. The file's pages are made hot
//! (loaded through the mapping, the same physical lines the kernel copies from) or
//! evicted from the CPU caches (clflush through the mapping); the user buffer hot,
//! clean or dirty (the lab's state builder). Every round maps a fresh user buffer.
//!
//! [`classic`] is lmbench's `bw_file_rd` (io_only): the file re-read in 64 KiB reads
//! into one 64 KiB buffer, a file that fits the LLC and one four times it.

use std::io::Write as _;
use std::os::fd::AsRawFd;

use serde_json::json;

use super::{check, record, Facts};
use crate::lab::experiments::{fmt_size, Ctx};
use crate::lab::mem::Buffer;
use crate::lab::method::{Entry, Method};
use crate::lab::runner::Record;
use crate::lab::state::{Access, CacheState, Region};

/// The part's name in the records.
pub const PART: &str = "read";
/// The classic loops' part.
pub const CLASSIC: &str = "classic";

/// Sizes (full run, `--quick`).
const SIZES: [&[usize]; 2] = [
    &[4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20],
    &[4 << 10, 64 << 10, 1 << 20, 4 << 20],
];

/// Rounds (fresh user buffers) and repetitions per round (full run, `--quick`).
const ROUNDS: [usize; 2] = [8, 8];
const REPS: [usize; 2] = [6, 5];

/// lmbench's `bw_file_rd` transfer size.
const CLASSIC_CHUNK: usize = 64 << 10;

/// The ways of getting the file's bytes into the user buffer.
#[derive(Clone, Copy)]
enum Route {
    Read,
    Pread,
    /// Copied out of the file's mapping by a method (libc or auto).
    Mmap(Entry),
}

/// A file written once, synced and mapped: its pages are in the page cache (and
/// clean), its contents kept to verify against.
pub struct CachedFile {
    file: std::fs::File,
    map: *mut u8,
    len: usize,
    contents: Vec<u8>,
    _dir: tempfile::TempDir,
}

impl CachedFile {
    /// A file of `len` random bytes in a fresh temporary directory.
    pub fn new(len: usize, seed: u64) -> anyhow::Result<CachedFile> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("kernel-read.bin");
        let mut contents = vec![0u8; len];
        fastrand::Rng::with_seed(seed).fill(&mut contents);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        file.write_all(&contents)?;
        file.sync_all()?;
        // SAFETY: a shared read-only mapping of the file we own, checked below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                file.as_raw_fd(),
                0,
            )
        };
        anyhow::ensure!(
            map != libc::MAP_FAILED,
            "kernel: cannot map {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
        Ok(CachedFile {
            file,
            map: map.cast(),
            len,
            contents,
            _dir: dir,
        })
    }

    /// How many of its pages the page cache holds (`mincore`), and how many it has.
    pub fn resident_pages(&self) -> (usize, usize) {
        let pages = self.len.div_ceil(4096);
        let mut v = vec![0u8; pages];
        // SAFETY: `map` is our mapping of `len` bytes; `v` has one byte per page.
        let rc = unsafe { libc::mincore(self.map.cast(), self.len, v.as_mut_ptr()) };
        let resident = if rc == 0 {
            v.iter().filter(|&&b| b & 1 != 0).count()
        } else {
            0
        };
        (resident, pages)
    }

    /// The open file.
    pub(super) fn fd(&self) -> libc::c_int {
        self.file.as_raw_fd()
    }

    /// Its length.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Its read-only mapping, `len` bytes.
    pub(super) fn map(&self) -> *const u8 {
        self.map
    }

    /// What it holds.
    pub(super) fn contents(&self) -> &[u8] {
        &self.contents
    }
}

impl Drop for CachedFile {
    fn drop(&mut self) {
        // SAFETY: the mapping this value made.
        unsafe { libc::munmap(self.map.cast(), self.len) };
    }
}

/// `pread` (or `read` after a seek to 0, with `seek`) of `n` bytes into `buf`, looping
/// over short reads; the bytes read.
///
/// # Safety
/// `buf` valid for `n` writes.
unsafe fn read_at_zero(fd: libc::c_int, buf: *mut u8, n: usize, seek: bool) -> usize {
    let mut done = 0;
    while done < n {
        // SAFETY: the caller's contract; `done < n`.
        let r = unsafe {
            let p = buf.add(done).cast();
            if seek {
                libc::read(fd, p, n - done)
            } else {
                libc::pread(fd, p, n - done, done as libc::off_t)
            }
        };
        if r <= 0 {
            break;
        }
        done += r as usize;
    }
    done
}

/// The methods of the part: name and path.
fn paths() -> Vec<(String, Route)> {
    let mut v = vec![
        ("read".to_string(), Route::Read),
        ("pread".to_string(), Route::Pread),
    ];
    for m in Method::libc().into_iter().chain([Method::auto()]) {
        if let Some(e) = m.entry(blockmem::kernel::Op::Copy) {
            v.push((format!("mmap+{}", m.name()), Route::Mmap(e)));
        }
    }
    v
}

/// One cell's samples: per method, per round.
struct Cell {
    n: usize,
    page_cache: CacheState,
    buffer: CacheState,
    samples: Vec<Vec<Vec<f64>>>,
    verified: Vec<bool>,
}

/// Part 1: every size × page-cache state × buffer state, the methods interleaved per
/// repetition, in rounds of fresh user buffers.
pub fn run(ctx: &mut Ctx<'_>, facts: &Facts) -> anyhow::Result<Vec<Record>> {
    let q = usize::from(ctx.quick);
    let sizes = ctx.sizes_or(SIZES[0], SIZES[1]);
    let max = sizes.iter().copied().max().unwrap_or(4096);
    let (rounds, reps) = (ROUNDS[q], ctx.reps.unwrap_or(REPS[q]).max(1));
    let file = CachedFile::new(max, 0x5eed_f11e)?;
    let methods = paths();
    let mut cells: Vec<Cell> = Vec::new();
    for &n in &sizes {
        for page_cache in [CacheState::Hot, CacheState::Clean] {
            for buffer in CacheState::ALL {
                cells.push(Cell {
                    n,
                    page_cache,
                    buffer,
                    samples: vec![vec![Vec::new(); rounds]; methods.len()],
                    verified: vec![true; methods.len()],
                });
            }
        }
    }
    let pb = ctx.bar(
        rounds * cells.len(),
        &format!("{} {PART}", super::NAME),
        "cells",
    );
    for round in 0..rounds {
        let mut buf = Buffer::new(max);
        for cell in cells.iter_mut() {
            // An untimed call of each method opens the cell: what the kernel keeps of
            // the file (its page-cache index, its folios) is then as warm as the
            // cell's own states leave it, not as the previous cell did.
            for &(_, route) in &methods {
                let _ = time_one(ctx, &file, &mut buf, cell, route);
            }
            for _ in 0..reps {
                for j in ctx.runner.method_order(methods.len()) {
                    let (ns, ok) = time_one(ctx, &file, &mut buf, cell, methods[j].1);
                    cell.samples[j][round].push(ns);
                    cell.verified[j] &= ok;
                }
            }
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    let (resident, pages) = file.resident_pages();
    let mut out = Vec::new();
    for cell in cells {
        for (j, (name, _)) in methods.iter().enumerate() {
            check(
                ctx,
                cell.verified[j],
                format!("{} {PART} {name} {}", super::NAME, fmt_size(cell.n)),
            );
            let mut e = facts.extras(PART);
            e.insert("page_cache".into(), json!(state_word(cell.page_cache)));
            e.insert("buffer".into(), json!(cell.buffer.name()));
            e.insert("rounds".into(), json!(rounds));
            e.insert("file_pages_resident".into(), json!([resident, pages]));
            let all: Vec<f64> = cell.samples[j].iter().flatten().copied().collect();
            out.push(record(
                name,
                cell.n,
                (state_word(cell.page_cache), cell.buffer.name(), "none"),
                all,
                &cell.samples[j],
                cell.verified[j],
                e,
            ));
        }
    }
    Ok(out)
}

/// The page cache's state as the records name it: `hot`, or `evicted` (from the CPU
/// caches; still in the page cache).
pub fn state_word(s: CacheState) -> &'static str {
    if s == CacheState::Hot {
        "hot"
    } else {
        "evicted"
    }
}

/// Poisons the buffer, makes the states, times one call, verifies.
fn time_one(
    ctx: &mut Ctx<'_>,
    file: &CachedFile,
    buf: &mut Buffer,
    cell: &Cell,
    route: Route,
) -> (f64, bool) {
    let n = cell.n;
    let want = &file.contents[..n];
    {
        let d = buf.as_mut_slice();
        for i in (0..n).step_by(4096 + 64).chain([n - 1]) {
            d[i] = !want[i];
        }
    }
    let regions = [
        Region {
            ptr: file.map,
            len: n,
            state: cell.page_cache,
            access: Access::Read,
        },
        Region {
            ptr: buf.as_mut_ptr(),
            len: n,
            state: cell.buffer,
            access: Access::Write,
        },
    ];
    let dst = buf.as_mut_ptr();
    let fd = file.fd();
    if matches!(route, Route::Read) {
        // SAFETY: our descriptor.
        unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
    }
    // SAFETY: the file's mapping (read-only, only loaded and flushed) and our buffer,
    // `n` bytes each, neither overlapping the eviction buffers.
    unsafe { ctx.runner.states.prepare(&regions) };
    let mut got = n;
    let ns = ctx.runner.timer.time(|| {
        // SAFETY: `dst` holds `max ≥ n` bytes; the mapping holds `n`.
        unsafe {
            match route {
                Route::Read => got = read_at_zero(fd, dst, n, true),
                Route::Pread => got = read_at_zero(fd, dst, n, false),
                Route::Mmap(e) => e.call(dst, file.map, 0, n),
            }
        }
    });
    (ns, got == n && &buf.as_slice()[..n] == want)
}

/// lmbench's `bw_file_rd` (io_only): the first `bytes` of the file read again and
/// again in 64 KiB reads into one buffer; one sample per pass, as ns per read.
pub fn classic(ctx: &mut Ctx<'_>, facts: &Facts) -> anyhow::Result<Vec<Record>> {
    let q = usize::from(ctx.quick);
    let llc = ctx.runner.states.hier.llc_effective;
    let big = (4 * llc).clamp(8 << 20, 64 << 20) / CLASSIC_CHUNK * CLASSIC_CHUNK;
    let small = (llc / 4).clamp(256 << 10, 1 << 20) / CLASSIC_CHUNK * CLASSIC_CHUNK;
    let file = CachedFile::new(big, 0xb_f11e)?;
    let passes = ctx.reps.unwrap_or([21, 15][q]).max(1);
    let mut out = Vec::new();
    let mut buf = Buffer::new(CLASSIC_CHUNK);
    for (bytes, what) in [(small, "file fits the LLC"), (big, "file 4× the LLC")] {
        let chunks = bytes / CLASSIC_CHUNK;
        let fd = file.fd();
        let mut samples = Vec::new();
        let mut ok = true;
        // One untimed pass first (it warms what a loop keeps warm), then the timed
        // ones, then a full comparison of every chunk.
        for pass in 0..=passes + 1 {
            let full = pass == passes + 1;
            let t0 = std::time::Instant::now();
            // SAFETY: our descriptor.
            unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
            for c in 0..chunks {
                // SAFETY: `buf` holds a chunk.
                let got = unsafe { read_at_zero(fd, buf.as_mut_ptr(), CLASSIC_CHUNK, true) };
                let at = c * CLASSIC_CHUNK;
                let want = &file.contents[at..at + CLASSIC_CHUNK];
                ok &= got == CLASSIC_CHUNK && buf.as_slice()[..8] == want[..8];
                if full {
                    ok &= buf.as_slice()[..CLASSIC_CHUNK] == *want;
                }
            }
            if pass > 0 && !full {
                samples.push(t0.elapsed().as_nanos() as f64 / chunks as f64);
            }
        }
        check(
            ctx,
            ok,
            format!("{} bw_file_rd {}", super::NAME, fmt_size(bytes)),
        );
        let mut e = facts.extras(CLASSIC);
        e.insert("loop".into(), json!("bw_file_rd"));
        e.insert("file_bytes".into(), json!(bytes));
        e.insert("what".into(), json!(what));
        out.push(record(
            "bw_file_rd",
            CLASSIC_CHUNK,
            (
                if bytes == small { "hot" } else { "evicted" },
                "hot",
                "none",
            ),
            samples,
            &[],
            ok,
            e,
        ));
    }
    Ok(out)
}
