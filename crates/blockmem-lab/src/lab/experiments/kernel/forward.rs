//! A cached file's bytes moved on to another file: through a user buffer (`pread` and
//! `pwrite` of 64 KiB, two copies: `cp`'s loop), from the file's mapping (`pwrite`
//! straight from it, one copy), and the calls that keep the bytes in the kernel:
//! `sendfile`, `copy_file_range` and `splice` through a pipe. What a program that
//! forwards data can do about the kernel's copies (seed 000 §1, seed 003's I/O).
//!
//! Both files live in the page cache: the destination is written over in place, so no
//! sample allocates pages, and nothing is synced. Every route's bytes are checked once,
//! untimed, into a zeroed destination; the timed transfers run the same code. The
//! filesystem is named in every record: where `copy_file_range` may share extents
//! (btrfs, XFS) it copies nothing, and on tmpfs and ext4 it copies in the kernel.

use std::os::fd::AsRawFd;

use serde_json::json;

use super::read::CachedFile;
use super::{check, record, Facts};
use crate::lab::experiments::{fmt_size, Ctx};
use crate::lab::runner::Record;

/// The part's name in the records.
pub const PART: &str = "forward";

/// Sizes (full run, `--quick`).
const SIZES: [&[usize]; 2] = [&[64 << 10, 1 << 20, 8 << 20], &[64 << 10, 1 << 20, 8 << 20]];

/// Transfers per route and size (full run, `--quick`).
const REPS: [usize; 2] = [15, 9];

/// The user buffer's size and `splice`'s step (a pipe's default capacity).
const CHUNK: usize = 64 << 10;

/// The ways of moving the file's bytes on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `pread` into a 64 KiB user buffer, `pwrite` from it.
    ReadWrite,
    /// `pwrite` from the file's mapping.
    MmapWrite,
    /// `sendfile` from the file to the other.
    Sendfile,
    /// `copy_file_range` between the files.
    CopyFileRange,
    /// `splice` from the file into a pipe and from the pipe into the other file.
    Splice,
}

impl Route {
    /// Every route, in table order.
    pub const ALL: [Route; 5] = [
        Route::ReadWrite,
        Route::MmapWrite,
        Route::Sendfile,
        Route::CopyFileRange,
        Route::Splice,
    ];

    /// The method name in the records.
    pub fn name(self) -> &'static str {
        match self {
            Route::ReadWrite => "pread+pwrite",
            Route::MmapWrite => "mmap+pwrite",
            Route::Sendfile => "sendfile",
            Route::CopyFileRange => "copy_file_range",
            Route::Splice => "splice",
        }
    }
}

/// What a transfer works with: the source, the destination, a user buffer, a pipe.
struct Ends<'a> {
    src: &'a CachedFile,
    dst: libc::c_int,
    buf: Vec<u8>,
    pipe: [libc::c_int; 2],
}

/// The result of a system call that moves bytes, or the error that stopped it.
fn moved(r: isize, what: &str) -> anyhow::Result<usize> {
    anyhow::ensure!(
        r > 0,
        "kernel: {what} moved nothing: {}",
        if r == 0 {
            "end of file".to_string()
        } else {
            std::io::Error::last_os_error().to_string()
        }
    );
    Ok(r as usize)
}

impl Ends<'_> {
    /// Moves the whole file to offset 0 of the destination by `route`.
    fn transfer(&mut self, route: Route) -> anyhow::Result<()> {
        let (src, dst, n) = (self.src.fd(), self.dst, self.src.len());
        let mut done = 0usize;
        while done < n {
            let off = done as libc::off_t;
            let step = (n - done).min(CHUNK);
            // SAFETY: every pointer is a live buffer of at least the length passed
            // (`buf` holds CHUNK bytes, the mapping `n`), every descriptor ours.
            done += unsafe {
                match route {
                    Route::ReadWrite => {
                        let got = moved(
                            libc::pread(src, self.buf.as_mut_ptr().cast(), step, off),
                            "pread",
                        )?;
                        let mut w = 0;
                        while w < got {
                            w += moved(
                                libc::pwrite(
                                    dst,
                                    self.buf.as_ptr().add(w).cast(),
                                    got - w,
                                    off + w as libc::off_t,
                                ),
                                "pwrite",
                            )?;
                        }
                        got
                    }
                    Route::MmapWrite => moved(
                        libc::pwrite(dst, self.src.map().add(done).cast(), n - done, off),
                        "pwrite",
                    )?,
                    Route::Sendfile => {
                        let mut o = off;
                        libc::lseek(dst, off, libc::SEEK_SET);
                        moved(libc::sendfile(dst, src, &mut o, n - done), "sendfile")?
                    }
                    Route::CopyFileRange => {
                        let (mut i, mut o) = (off as libc::loff_t, off as libc::loff_t);
                        let r = libc::copy_file_range(src, &mut i, dst, &mut o, n - done, 0);
                        moved(r, "copy_file_range")?
                    }
                    Route::Splice => {
                        let mut i = off as libc::loff_t;
                        let got = moved(
                            libc::splice(
                                src,
                                &mut i,
                                self.pipe[1],
                                std::ptr::null_mut(),
                                step,
                                libc::SPLICE_F_MOVE,
                            ),
                            "splice from the file",
                        )?;
                        let mut o = off as libc::loff_t;
                        let mut w = 0;
                        while w < got {
                            w += moved(
                                libc::splice(
                                    self.pipe[0],
                                    std::ptr::null_mut(),
                                    dst,
                                    &mut o,
                                    got - w,
                                    libc::SPLICE_F_MOVE,
                                ),
                                "splice into the file",
                            )?;
                        }
                        got
                    }
                }
            };
        }
        Ok(())
    }

    /// Zeroes the destination, moves the file by `route` and compares.
    fn verify(&mut self, route: Route) -> anyhow::Result<bool> {
        let n = self.src.len();
        let zeros = vec![0u8; n];
        // SAFETY: `zeros` holds n bytes; `dst` is ours.
        let w = unsafe { libc::pwrite(self.dst, zeros.as_ptr().cast(), n, 0) };
        anyhow::ensure!(w == n as isize, "kernel: cannot clear the destination file");
        self.transfer(route)?;
        let mut back = vec![0u8; n];
        // SAFETY: `back` holds n bytes.
        let r = unsafe { libc::pread(self.dst, back.as_mut_ptr().cast(), n, 0) };
        Ok(r == n as isize && back == self.src.contents())
    }
}

impl Drop for Ends<'_> {
    fn drop(&mut self) {
        // SAFETY: the pipe this value made.
        unsafe {
            libc::close(self.pipe[0]);
            libc::close(self.pipe[1]);
        }
    }
}

/// The filesystem a descriptor's file is on, by `statfs` magic.
fn filesystem(fd: libc::c_int) -> &'static str {
    // SAFETY: `s` is a plain struct the call fills.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstatfs(fd, &mut s) } != 0 {
        return "unknown";
    }
    match s.f_type {
        0x0102_1994 => "tmpfs",
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x794C_7630 => "overlayfs",
        _ => "other",
    }
}

/// Runs the part: every route at every size, alternated, each verified once.
pub fn run(ctx: &mut Ctx<'_>, facts: &Facts) -> anyhow::Result<Vec<Record>> {
    let q = usize::from(ctx.quick);
    let sizes = ctx.sizes_or(SIZES[0], SIZES[1]);
    let reps = ctx.reps.unwrap_or(REPS[q]).max(1);
    let pb = ctx.bar(
        sizes.len() * Route::ALL.len(),
        super::NAME,
        "forwarded files",
    );
    let mut out = Vec::new();
    for (k, &n) in sizes.iter().enumerate() {
        let src = CachedFile::new(n, 0xf0a4 + k as u64)?;
        let dst_file = tempfile::tempfile()?;
        let mut pipe = [0; 2];
        // SAFETY: `pipe` has room for the two descriptors.
        anyhow::ensure!(
            unsafe { libc::pipe(pipe.as_mut_ptr()) } == 0,
            "kernel: cannot make a pipe: {}",
            std::io::Error::last_os_error()
        );
        let mut ends = Ends {
            src: &src,
            dst: dst_file.as_raw_fd(),
            buf: vec![0u8; CHUNK],
            pipe,
        };
        let fs = filesystem(ends.dst);
        let mut verified = [false; Route::ALL.len()];
        for (i, &route) in Route::ALL.iter().enumerate() {
            verified[i] = ends.verify(route)?;
        }
        let mut samples = vec![Vec::with_capacity(reps); Route::ALL.len()];
        for rep in 0..reps {
            for j in 0..Route::ALL.len() {
                let i = (j + rep) % Route::ALL.len();
                let t = std::time::Instant::now();
                ends.transfer(Route::ALL[i])?;
                samples[i].push(t.elapsed().as_secs_f64() * 1e9);
            }
        }
        for (i, s) in samples.into_iter().enumerate() {
            let name = Route::ALL[i].name();
            check(ctx, verified[i], format!("{PART} {name} {}", fmt_size(n)));
            let mut extras = facts.extras(PART);
            extras.insert("filesystem".into(), json!(fs));
            out.push(record(
                name,
                n,
                ("cached file", "cached file", "none"),
                s,
                &[],
                verified[i],
                extras,
            ));
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    Ok(out)
}
