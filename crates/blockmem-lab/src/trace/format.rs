//! Reading trace files (the layout is documented where it is written: the shim's
//! `trace_file` module, and `docs` of [`crate::trace`]).
//!
//! A file is parsed once into its header, the byte ranges of its record blocks and
//! its trailer; records are decoded lazily, block by block, and merged across the
//! shim's buffers into start-time order by [`TraceFile::records`].
//!
//! Nothing read is trusted: the header is checked for sane sizes and counts, each
//! record block against the header and its own length, each record field against the
//! header as it is decoded (`check_record` holds the rule for each field). What fails
//! is skipped with a warning that names its byte offset.

use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;

const MAGIC: &[u8; 4] = b"BMTR";
const KIND_HEADER: u16 = 1;
const KIND_RECORDS: u16 = 2;
const KIND_TRAILER: u16 = 3;
const KIND_MAPS: u16 = 4;
const KIND_FATE: u16 = 5;
const KIND_IO: u16 = 6;
const BLOCK_HEAD: usize = 12;
/// The newest format version this reader understands (2: records carry call sites,
/// files carry maps blocks; 3: records carry the calling thread; 4: fate and I/O
/// blocks; 5: I/O ops `preadv` and `pwritev`).
pub const VERSION: u32 = 5;
/// The oldest format version this reader understands (1: no call sites).
pub const OLDEST_VERSION: u32 = 1;

/// Header flag: the process is a forked child.
pub const FLAG_FORKED: u32 = 1 << 0;

/// Largest call a record may name (1 TiB): no real call comes near it, so a larger
/// size is a corrupt record, and nothing downstream (the estimate's replay) ever sees it.
pub const MAX_CALL_BYTES: u64 = 1 << 40;
/// Most buffers a header may declare (the shim has 64).
const MAX_BUFFERS: u32 = 1 << 16;
/// Most bytes per buffer a header may declare (the shim's are 64 KiB).
const MAX_BUFFER_BYTES: u32 = 1 << 30;
/// Most spread lines a probe can report (a 4-bit field).
const MAX_SPREAD_LINES: u32 = 15;
/// Smallest encoded record: tag, start, cycles, size and destination, a byte each.
const MIN_RECORD: usize = 5;

/// The operation as the program named it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CallOp {
    /// `memcpy`, `mempcpy` and their fortified variants.
    Copy,
    /// `memmove`.
    Move,
    /// `memset`.
    Set,
    /// `bzero`.
    Zero,
}

impl CallOp {
    /// All four, in tag order.
    pub const ALL: [CallOp; 4] = [CallOp::Copy, CallOp::Move, CallOp::Set, CallOp::Zero];

    /// The name used in tables (as `BLOCKMEM_STATS` names it).
    pub fn name(self) -> &'static str {
        match self {
            CallOp::Copy => "copy",
            CallOp::Move => "move",
            CallOp::Set => "set",
            CallOp::Zero => "zero",
        }
    }

    /// True for the ops with a source.
    pub fn has_src(self) -> bool {
        matches!(self, CallOp::Copy | CallOp::Move)
    }

    fn from_tag(t: u8) -> CallOp {
        CallOp::ALL[(t & 3) as usize]
    }
}

/// What the sampled probes of one region found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RegionProbe {
    /// Cycles of the timed load of the region's first byte.
    pub first_cycles: u64,
    /// Lines probed across the block (first line and blockmem's own probe line
    /// excluded).
    pub lines: u8,
    /// Of those, lines that loaded within the hit threshold.
    pub cached: u8,
}

/// A sampled call's probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Probe {
    /// The source (copy and move).
    pub src: Option<RegionProbe>,
    /// The destination.
    pub dst: RegionProbe,
}

/// One call (ordered by start time first: the field order matters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Record {
    /// TSC at the call's start.
    pub tsc: u64,
    /// TSC cycles of the call, timer overhead included.
    pub cycles: u64,
    /// Bytes.
    pub n: u64,
    /// Destination address.
    pub dst: u64,
    /// Source address (0 for set and zero).
    pub src: u64,
    /// The op as named by the program.
    pub op: CallOp,
    /// Kernel slot (see [`Header::kernels`]).
    pub kernel: u8,
    /// Copy/move: the ranges overlap. Set: the fill byte is zero.
    pub flag: bool,
    /// Probes, on sampled calls.
    pub probe: Option<Probe>,
    /// The caller's return address (0: unknown, or a version 1 file).
    pub site: u64,
    /// The calling thread's kernel id (0: a file older than version 3).
    pub tid: u32,
}

/// An executable file mapping of the traced process (from a maps block).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Offset in the file of `start`.
    pub offset: u64,
    /// The object's path.
    pub path: String,
}

/// The profile the process ran with (from the header).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProfileInfo {
    /// Where it came from.
    pub source: String,
    /// Forced kernel (`BLOCKMEM_FORCE`).
    pub forced: Option<String>,
    /// Kernel choices summarising the decision table (see `PROFILE_KERNELS`).
    pub kernels: Vec<(String, String)>,
    /// Sizes summarising the decision table (see `PROFILE_SIZES`), and the
    /// copy and set fast-path limits.
    pub sizes: Vec<(String, u64)>,
}

impl ProfileInfo {
    /// A threshold by name.
    pub fn size(&self, name: &str) -> Option<u64> {
        self.sizes.iter().find(|s| s.0 == name).map(|s| s.1)
    }
}

/// A file's header.
#[derive(Clone, Debug, Serialize)]
pub struct Header {
    /// Format version.
    pub version: u32,
    /// Flag bits ([`FLAG_FORKED`], …).
    pub flags: u32,
    /// Process id.
    pub pid: u32,
    /// Parent process id (`getppid`).
    pub ppid: u32,
    /// For a forked child, the pid of the process that forked it.
    pub fork_parent: u32,
    /// Probes every N-th call (0: never).
    pub sample_every: u32,
    /// TSC frequency in kHz measured at load.
    pub tsc_khz: u64,
    /// TSC at the start (a forked child: just before the fork).
    pub start_tsc: u64,
    /// CLOCK_MONOTONIC at the start, ns.
    pub start_ns: u64,
    /// CLOCK_REALTIME at the start, ns.
    pub start_realtime_ns: u64,
    /// Cycles of an empty timed region.
    pub timer_overhead: u32,
    /// Probe hit threshold, cycles.
    pub hit_max: u32,
    /// Largest size the shim handles inline.
    pub inline_max: u32,
    /// Spread lines probed per region at most.
    pub spread_lines: u32,
    /// Buffers in the shim's pool.
    pub buffers: u32,
    /// Bytes per buffer.
    pub buffer_bytes: u32,
    /// The profile.
    pub profile: ProfileInfo,
    /// Kernel names by slot.
    pub kernels: Vec<String>,
    /// The program's `argv[0]`.
    pub argv0: String,
}

impl Header {
    /// True for a forked child.
    pub fn forked(&self) -> bool {
        self.flags & FLAG_FORKED != 0
    }

    /// A kernel slot's name.
    pub fn kernel_name(&self, slot: u8) -> &str {
        self.kernels.get(slot as usize).map_or("?", String::as_str)
    }
}

/// A file's trailer (present when the process exited through `exit`).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Trailer {
    /// TSC at exit.
    pub end_tsc: u64,
    /// CLOCK_MONOTONIC at exit, ns.
    pub end_ns: u64,
    /// Records the process appended.
    pub records: u64,
    /// Calls not recorded: every buffer tried was busy.
    pub no_buffer: u64,
    /// Calls not recorded: a forked child was creating its file.
    pub while_starting: u64,
    /// Records lost to failed writes.
    pub lost: u64,
    /// Buffers still busy at exit (not written).
    pub busy_at_exit: u64,
}

impl Trailer {
    /// Calls the process made that are not in the file.
    pub fn missing(&self) -> u64 {
        // Saturating: the counts come from the file.
        self.no_buffer
            .saturating_add(self.while_starting)
            .saturating_add(self.lost)
    }
}

/// What became of one watched destination (a fate block: the shim's `watch` module).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Watched {
    /// The call's start TSC.
    pub tsc: u64,
    /// Its destination and size.
    pub dst: u64,
    /// Bytes.
    pub n: u64,
    /// Its call site (raw return address).
    pub site: u64,
    /// Its thread.
    pub tid: u32,
    /// Its op.
    pub op: CallOp,
    /// Pages watched.
    pub pages: u32,
    /// Pages by the first later access, in [`PageFate::ALL`] order.
    pub fates: [u32; 8],
    /// Nanoseconds from the call to the first access (0: none).
    pub first_ns: u64,
}

/// The first later access to a watched page of a destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageFate {
    /// Read by an ordinary load.
    LoadRead,
    /// Written by an ordinary store.
    LoadWrite,
    /// Read by the kernel (the buffer of `write`, `send`, …).
    KernelRead,
    /// Written by the kernel (the buffer of `read`, `recv`, …).
    KernelWrite,
    /// Read by a later block operation (its source).
    BlockRead,
    /// Written by a later block operation (its destination).
    BlockWrite,
    /// Freed, unmapped or re-protected before any access.
    Released,
    /// Not accessed within the watch window (or before the process ended).
    Untouched,
}

impl PageFate {
    /// All, in the fate block's order.
    pub const ALL: [PageFate; 8] = [
        PageFate::LoadRead,
        PageFate::LoadWrite,
        PageFate::KernelRead,
        PageFate::KernelWrite,
        PageFate::BlockRead,
        PageFate::BlockWrite,
        PageFate::Released,
        PageFate::Untouched,
    ];

    /// True for the fates that read the destination again.
    pub fn reads(self) -> bool {
        matches!(
            self,
            PageFate::LoadRead | PageFate::KernelRead | PageFate::BlockRead
        )
    }
}

/// The program's I/O calls of one kind at one call site (an I/O block).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct IoCount {
    /// `read`, `write`, … (see [`IO_OPS`]).
    pub op: &'static str,
    /// Call site (raw return address; 0: not known).
    pub site: u64,
    /// Calls.
    pub calls: u64,
    /// Bytes transferred.
    pub bytes: u64,
    /// Bytes asked for.
    pub asked: u64,
    /// Calls that failed.
    pub errors: u64,
    /// TSC cycles in the calls.
    pub cycles: u64,
}

/// The I/O block's op numbers, by name.
pub const IO_OPS: [&str; 14] = [
    "read", "write", "pread", "pwrite", "readv", "writev", "recv", "send", "recvfrom", "sendto",
    "recvmsg", "sendmsg", "preadv", "pwritev",
];

impl IoCount {
    /// True for the calls whose buffer the kernel reads (output).
    pub fn is_output(&self) -> bool {
        IO_OPS
            .iter()
            .position(|o| *o == self.op)
            .is_some_and(|i| i % 2 == 1)
    }
}

fn parse_fate(p: &[u8]) -> Option<Watched> {
    let mut c = Cursor::new(p);
    let (tsc, dst, n, site, who, pages) =
        (c.u64()?, c.u64()?, c.u64()?, c.u64()?, c.u64()?, c.u32()?);
    let mut fates = [0u32; 8];
    for f in &mut fates {
        *f = c.u32()?;
    }
    let first_ns = c.u64()?;
    let total: u64 = fates.iter().map(|&f| u64::from(f)).sum();
    if pages == 0 || pages > 64 || total != u64::from(pages) || n > MAX_CALL_BYTES {
        return None;
    }
    Some(Watched {
        tsc,
        dst,
        n,
        site,
        tid: who as u32,
        op: CallOp::from_tag((who >> 32) as u8),
        pages,
        fates,
        first_ns,
    })
}

fn parse_io(p: &[u8], out: &mut Vec<IoCount>) -> Option<()> {
    let mut c = Cursor::new(p);
    let count = c.u32()?;
    for _ in 0..count {
        let op = *IO_OPS.get(c.u32()? as usize)?;
        out.push(IoCount {
            op,
            site: c.u64()?,
            calls: c.u64()?,
            bytes: c.u64()?,
            asked: c.u64()?,
            errors: c.u64()?,
            cycles: c.u64()?,
        });
    }
    c.done().then_some(())
}

/// One record block: the buffer it came from and where its records are.
#[derive(Clone, Debug)]
struct Block {
    buffer: u32,
    count: u32,
    /// Where the block starts in the file (its magic), for messages.
    at: usize,
    range: std::ops::Range<usize>,
}

/// A parsed trace file.
pub struct TraceFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// The header.
    pub header: Header,
    /// The trailer, if the process exited normally.
    pub trailer: Option<Trailer>,
    /// Problems found while parsing (a cut-off last block, unknown block kinds).
    pub warnings: Vec<String>,
    /// Executable mappings from the maps blocks (start and exit), without repeats.
    pub mappings: Vec<Mapping>,
    /// The watched destinations' fates (version 4, with the trace I/O library).
    pub watched: Vec<Watched>,
    /// The program's I/O calls by site (version 4, with the trace I/O library).
    pub io: Vec<IoCount>,
    data: Vec<u8>,
    blocks: Vec<Block>,
}

/// A cursor over bytes with little-endian and varint reads.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(b: &'a [u8]) -> Self {
        Cursor { b, at: 0 }
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|s| s[0])
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|s| u16::from_le_bytes([s[0], s[1]]))
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|s| u32::from_le_bytes(s.try_into().unwrap()))
    }

    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|s| u64::from_le_bytes(s.try_into().unwrap()))
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.u8()?;
            if shift < 64 {
                v |= u64::from(b & 0x7f) << shift;
            }
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn zigzag(&mut self) -> Option<i64> {
        let v = self.varint()?;
        Some((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn string(&mut self, len: usize) -> Option<String> {
        self.take(len)
            .map(|s| String::from_utf8_lossy(s).into_owned())
    }

    fn done(&self) -> bool {
        self.at >= self.b.len()
    }
}

const SOURCES: [&str; 6] = [
    "not-loaded",
    "built-in",
    "BLOCKMEM_PROFILE",
    "default-path",
    "installed",
    "built-in (AT_SECURE)",
];
/// A summary of the decision table in use (the shim's `trace::summary_kernels`): the
/// kernels of 1 MiB calls to a cached and a cold destination, and of the streaming
/// bands.
const PROFILE_KERNELS: [&str; 6] = [
    "copy_cached_1mib",
    "copy_cold_1mib",
    "copy_stream",
    "set_cached_1mib",
    "set_stream",
    "zero_stream",
];
/// The sizes from which the table streams or probes (`usize::MAX`: never), the LLC it
/// was measured with, and where the first band of the unknown rows ends.
const PROFILE_SIZES: [&str; 10] = [
    "copy_auto_streams_unprobed_from",
    "copy_auto_streams_cold_from",
    "copy_noreuse_streams_cold_from",
    "copy_reuse_streams_cold_from",
    "copy_auto_probes_from",
    "set_auto_probes_from",
    "set_auto_streams_cold_from",
    "llc_effective",
    "copy_first_band_below",
    "set_first_band_below",
];

fn parse_header(p: &[u8]) -> Option<Header> {
    let mut c = Cursor::new(p);
    let version = c.u32()?;
    let flags = c.u32()?;
    let pid = c.u32()?;
    let ppid = c.u32()?;
    let fork_parent = c.u32()?;
    let sample_every = c.u32()?;
    let tsc_khz = c.u64()?;
    let start_tsc = c.u64()?;
    let start_ns = c.u64()?;
    let start_realtime_ns = c.u64()?;
    let timer_overhead = c.u32()?;
    let hit_max = c.u32()?;
    let inline_max = c.u32()?;
    let spread_lines = c.u32()?;
    let buffers = c.u32()?;
    let buffer_bytes = c.u32()?;
    let source = c.u8()?;
    let forced = c.u8()?;
    let kernel_slots: Vec<u8> = (0..6).map(|_| c.u8()).collect::<Option<_>>()?;
    let sizes: Vec<u64> = (0..10).map(|_| c.u64()).collect::<Option<_>>()?;
    let count = c.u8()?;
    let mut kernels = Vec::new();
    for _ in 0..count {
        let len = c.u8()? as usize;
        kernels.push(c.string(len)?);
    }
    let len = c.u16()? as usize;
    let argv0 = c.string(len)?;
    let name = |slot: u8| {
        kernels
            .get(slot as usize)
            .cloned()
            .unwrap_or_else(|| format!("slot {slot}"))
    };
    let profile = ProfileInfo {
        source: SOURCES
            .get(source as usize)
            .map_or("?".into(), |s| s.to_string()),
        forced: (forced != 0).then(|| name(forced)),
        kernels: PROFILE_KERNELS
            .iter()
            .zip(&kernel_slots)
            .map(|(k, &s)| (k.to_string(), name(s)))
            .collect(),
        sizes: PROFILE_SIZES
            .iter()
            .zip(&sizes)
            .map(|(k, &v)| (k.to_string(), v))
            .collect(),
    };
    Some(Header {
        version,
        flags,
        pid,
        ppid,
        fork_parent,
        sample_every,
        tsc_khz,
        start_tsc,
        start_ns,
        start_realtime_ns,
        timer_overhead,
        hit_max,
        inline_max,
        spread_lines,
        buffers,
        buffer_bytes,
        profile,
        kernels,
        argv0,
    })
}

/// A maps block's payload: `u8 when`, then `/proc/self/maps` lines. Lines that do not
/// parse, and mappings already in `out`, are skipped.
fn parse_maps(p: &[u8], out: &mut Vec<Mapping>) -> Option<()> {
    let text = String::from_utf8_lossy(p.get(1..)?);
    for line in text.lines() {
        let mut f = line.split_ascii_whitespace();
        let (Some(range), Some(_perms), Some(offset)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let path = f.skip(2).collect::<Vec<_>>().join(" ");
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let hex = |s: &str| u64::from_str_radix(s, 16).ok();
        let (Some(start), Some(end), Some(offset)) = (hex(a), hex(b), hex(offset)) else {
            continue;
        };
        let m = Mapping {
            start,
            end,
            offset,
            path,
        };
        if start < end && !m.path.is_empty() && !out.contains(&m) {
            out.push(m);
        }
    }
    Some(())
}

fn parse_trailer(p: &[u8]) -> Option<Trailer> {
    let mut c = Cursor::new(p);
    Some(Trailer {
        end_tsc: c.u64()?,
        end_ns: c.u64()?,
        records: c.u64()?,
        no_buffer: c.u64()?,
        while_starting: c.u64()?,
        lost: c.u64()?,
        busy_at_exit: c.u64()?,
    })
}

/// The state of [`TraceFile::parse`]: what the blocks read so far gave.
struct Parser {
    what: String,
    header: Option<Header>,
    trailer: Option<Trailer>,
    blocks: Vec<Block>,
    warnings: Vec<String>,
    mappings: Vec<Mapping>,
    watched: Vec<Watched>,
    io: Vec<IoCount>,
}

/// A block's framing at `at`: magic (for the caller to check), kind and payload
/// length, or None if fewer than [`BLOCK_HEAD`] bytes are left.
fn frame(data: &[u8], at: usize) -> Option<(&[u8], u16, usize)> {
    let mut c = Cursor::new(data.get(at..)?);
    let (magic, kind, _flags, len) = (c.take(4)?, c.u16()?, c.u16()?, c.u32()?);
    Some((magic, kind, len as usize))
}

/// Why a header cannot be trusted, if it cannot.
fn check_header(h: &Header) -> Option<String> {
    if !(OLDEST_VERSION..=VERSION).contains(&h.version) {
        return Some(format!(
            "trace format version {} (this blockmem reads versions {OLDEST_VERSION} to {VERSION}); report it with the blockmem that wrote it",
            h.version
        ));
    }
    if h.buffers == 0 || h.buffers > MAX_BUFFERS {
        return Some(format!(
            "{} buffers (a trace has 1 to {MAX_BUFFERS})",
            h.buffers
        ));
    }
    if (h.buffer_bytes as usize) < 8 + MIN_RECORD || h.buffer_bytes > MAX_BUFFER_BYTES {
        return Some(format!(
            "{} bytes per buffer (a trace has {} to {MAX_BUFFER_BYTES})",
            h.buffer_bytes,
            8 + MIN_RECORD
        ));
    }
    if h.spread_lines > MAX_SPREAD_LINES {
        return Some(format!(
            "{} spread lines (at most {MAX_SPREAD_LINES})",
            h.spread_lines
        ));
    }
    if h.kernels.is_empty() {
        return Some("no kernel names".into());
    }
    None
}

impl Parser {
    /// Reads the block at `at`; returns where the next one starts, or None at the end
    /// of what can be read (a warning says why when bytes are left over).
    fn block(&mut self, data: &[u8], at: usize) -> Result<Option<usize>> {
        let what = &self.what;
        if at >= data.len() {
            return Ok(None);
        }
        let Some((magic, kind, len)) = frame(data, at) else {
            self.warnings.push(format!(
                "{what}: byte {at}: {} stray bytes at the end (cut-off block)",
                data.len() - at
            ));
            return Ok(None);
        };
        if magic != MAGIC {
            if self.header.is_none() {
                bail!("{what}: byte {at}: expected a block (BMTR), found garbage");
            }
            self.warnings.push(format!(
                "{what}: byte {at}: expected a block (BMTR), found garbage; the rest of the file ({} bytes) is ignored",
                data.len() - at
            ));
            return Ok(None);
        }
        let start = at + BLOCK_HEAD;
        let Some(payload) = start.checked_add(len).and_then(|end| data.get(start..end)) else {
            self.warnings.push(format!(
                "{what}: byte {at}: the last block is cut off ({} of {len} bytes)",
                data.len() - start
            ));
            return Ok(None);
        };
        match kind {
            KIND_HEADER if self.header.is_none() => self.header(payload, at)?,
            _ if self.header.is_none() => {
                bail!("{what}: byte {at}: the first block is not a header (kind {kind})")
            }
            KIND_RECORDS => self.records(payload, at, start),
            KIND_MAPS => {
                if parse_maps(payload, &mut self.mappings).is_none() {
                    self.warnings
                        .push(format!("{what}: byte {at}: an empty or cut-off maps block"));
                }
            }
            KIND_FATE => match parse_fate(payload) {
                Some(w) => self.watched.push(w),
                None => self
                    .warnings
                    .push(format!("{what}: byte {at}: a fate block that does not add up; ignored")),
            },
            KIND_IO => {
                if parse_io(payload, &mut self.io).is_none() {
                    self.warnings
                        .push(format!("{what}: byte {at}: a cut-off I/O block"));
                }
            }
            KIND_TRAILER if self.trailer.is_none() => {
                self.trailer = parse_trailer(payload);
                if self.trailer.is_none() {
                    self.warnings
                        .push(format!("{what}: byte {at}: trailer block too short; ignored"));
                }
            }
            other => self.warnings.push(format!(
                "{what}: byte {at}: skipped a block of kind {other} (unknown, or a second header or trailer)"
            )),
        }
        Ok(Some(start + len))
    }

    fn header(&mut self, payload: &[u8], at: usize) -> Result<()> {
        let what = &self.what;
        let h = parse_header(payload)
            .with_context(|| format!("{what}: byte {at}: header block is too short"))?;
        if let Some(why) = check_header(&h) {
            bail!("{what}: byte {at}: header: {why}");
        }
        self.header = Some(h);
        Ok(())
    }

    /// Keeps a record block whose buffer and count fit the header and its length.
    fn records(&mut self, payload: &[u8], at: usize, start: usize) {
        let h = self.header.as_ref().expect("checked by the caller");
        let mut c = Cursor::new(payload);
        let why = match (c.u32(), c.u32()) {
            (Some(buffer), Some(count)) => {
                let room = (payload.len() - 8) / MIN_RECORD;
                if buffer >= h.buffers {
                    Some(format!(
                        "buffer index {buffer}, but the header declares {} buffers",
                        h.buffers
                    ))
                } else if payload.len() > h.buffer_bytes as usize {
                    Some(format!(
                        "{} bytes, more than a buffer holds ({})",
                        payload.len(),
                        h.buffer_bytes
                    ))
                } else if count as usize > room {
                    Some(format!(
                        "{count} records declared, but its {} bytes hold at most {room}",
                        payload.len() - 8
                    ))
                } else {
                    self.blocks.push(Block {
                        buffer,
                        count,
                        at,
                        range: start + 8..start + payload.len(),
                    });
                    None
                }
            }
            _ => Some("no buffer index and record count".into()),
        };
        if let Some(why) = why {
            self.warnings.push(format!(
                "{}: byte {at}: record block skipped: {why}",
                self.what
            ));
        }
    }
}

impl TraceFile {
    /// Reads and checks a trace file.
    pub fn open(path: &Path) -> Result<TraceFile> {
        let data = crate::input::read(path)?;
        Self::parse(path, data)
    }

    /// Parses a trace file's bytes. The header must come first and be sane; every
    /// later block is checked against it and against the file before it is kept, and
    /// one that does not fit is skipped with a warning naming its byte offset (so a
    /// damaged file reports what could be read). Records are checked field by field
    /// when decoded ([`TraceFile::records`]).
    pub fn parse(path: &Path, data: Vec<u8>) -> Result<TraceFile> {
        let what = path.display().to_string();
        if data.get(..4) != Some(MAGIC) {
            bail!("{what}: not a blockmem trace (no BMTR magic at the start)");
        }
        let mut p = Parser {
            what,
            header: None,
            trailer: None,
            blocks: Vec::new(),
            warnings: Vec::new(),
            mappings: Vec::new(),
            watched: Vec::new(),
            io: Vec::new(),
        };
        let mut at = 0usize;
        while let Some(end) = p.block(&data, at)? {
            at = end;
        }
        let header = p
            .header
            .with_context(|| format!("{}: no header block", p.what))?;
        let mut f = TraceFile {
            path: path.to_path_buf(),
            header,
            trailer: p.trailer,
            warnings: p.warnings,
            mappings: p.mappings,
            watched: p.watched,
            io: p.io,
            data,
            blocks: p.blocks,
        };
        f.check_counts();
        Ok(f)
    }

    /// Warns when the record blocks hold more records than the trailer says the
    /// process wrote.
    fn check_counts(&mut self) {
        let Some(t) = self.trailer else { return };
        let stored = self.record_count();
        if stored > t.records {
            self.warnings.push(format!(
                "{}: the record blocks hold {stored} records but the trailer says {} were written (the file was changed after it was written)",
                self.path.display(),
                t.records
            ));
        }
    }

    /// True if the records carry call sites (format version 2 and later).
    pub fn has_sites(&self) -> bool {
        self.header.version >= 2
    }

    /// True if the records carry the calling thread (format version 3 and later).
    pub fn has_threads(&self) -> bool {
        self.header.version >= 3
    }

    /// Records in the file, as stored (sum of the blocks' counts).
    pub fn record_count(&self) -> u64 {
        self.blocks.iter().map(|b| u64::from(b.count)).sum()
    }

    /// Every record, in start-time order (the buffers' streams merged by TSC; within
    /// a buffer, in the order they were appended). Errors name the file and block.
    pub fn records(&self) -> Merged<'_> {
        let mut streams: Vec<Vec<&Block>> = Vec::new();
        let mut index: Vec<u32> = Vec::new();
        for b in &self.blocks {
            match index.iter().position(|&i| i == b.buffer) {
                Some(k) => streams[k].push(b),
                None => {
                    index.push(b.buffer);
                    streams.push(vec![b]);
                }
            }
        }
        let mut m = Merged {
            file: self,
            streams: streams
                .into_iter()
                .map(|blocks| Stream {
                    blocks,
                    next_block: 0,
                    cursor: None,
                    prev: Prev::default(),
                })
                .collect(),
            heap: BinaryHeap::new(),
            error: None,
        };
        for i in 0..m.streams.len() {
            m.refill(i);
        }
        m
    }
}

struct Stream<'a> {
    blocks: Vec<&'a Block>,
    next_block: usize,
    cursor: Option<(Cursor<'a>, u32)>,
    prev: Prev,
}

/// The previous record's fields that the next one is encoded against (reset at every
/// block), and whether records carry a site and a thread.
#[derive(Clone, Copy, Default)]
struct Prev {
    tsc: u64,
    dst: u64,
    src: u64,
    site: u64,
    tid: u64,
    sites: bool,
    tids: bool,
}

/// The merge of a file's buffer streams (see [`TraceFile::records`]).
pub struct Merged<'a> {
    file: &'a TraceFile,
    streams: Vec<Stream<'a>>,
    heap: BinaryHeap<std::cmp::Reverse<(u64, usize, Record)>>,
    /// The first problem found while decoding, naming its byte offset (the rest of
    /// that block is skipped; the other blocks are still read).
    pub error: Option<String>,
}

/// What every record is checked against: the header's kernel table and probe width.
#[derive(Clone, Copy, Debug)]
struct Limits {
    kernels: usize,
    spread_lines: u8,
}

impl Limits {
    fn of(h: &Header) -> Limits {
        Limits {
            kernels: h.kernels.len(),
            spread_lines: h.spread_lines.min(MAX_SPREAD_LINES) as u8,
        }
    }
}

const CUT: &str = "the block ends in the middle of a record";

fn region(c: &mut Cursor<'_>) -> Option<RegionProbe> {
    let first_cycles = c.varint()?;
    let spread = c.u8()?;
    Some(RegionProbe {
        first_cycles,
        lines: spread & 15,
        cached: spread >> 4,
    })
}

/// Decodes one record and checks every field against `lim`; `prev` (the deltas'
/// bases) advances only for a record that passed. The error says which field is wrong.
fn decode(c: &mut Cursor<'_>, prev: &mut Prev, lim: &Limits) -> Result<Record, String> {
    let tag = c.u8().ok_or(CUT)?;
    let op = CallOp::from_tag(tag);
    let mut kernel = tag >> 4;
    if kernel == 15 {
        kernel = c.u8().ok_or(CUT)?;
    }
    let tsc = prev.tsc.wrapping_add(c.zigzag().ok_or(CUT)? as u64);
    let cycles = c.varint().ok_or(CUT)?;
    let n = c.varint().ok_or(CUT)?;
    let dst = prev.dst.wrapping_add(c.zigzag().ok_or(CUT)? as u64);
    let src = if op.has_src() {
        prev.src.wrapping_add(c.zigzag().ok_or(CUT)? as u64)
    } else {
        0
    };
    let site = if prev.sites {
        prev.site.wrapping_add(c.zigzag().ok_or(CUT)? as u64)
    } else {
        0
    };
    let tid = if prev.tids {
        prev.tid.wrapping_add(c.zigzag().ok_or(CUT)? as u64)
    } else {
        0
    };
    let tid = u32::try_from(tid).map_err(|_| format!("thread id {tid} (over 2^32)"))?;
    let probe = if tag & 4 != 0 {
        let src = if op.has_src() {
            Some(region(c).ok_or(CUT)?)
        } else {
            None
        };
        Some(Probe {
            src,
            dst: region(c).ok_or(CUT)?,
        })
    } else {
        None
    };
    let r = Record {
        tsc,
        cycles,
        n,
        dst,
        src,
        op,
        kernel,
        flag: tag & 8 != 0,
        probe,
        site,
        tid,
    };
    check_record(&r, lim)?;
    prev.tsc = tsc;
    prev.dst = dst;
    if op.has_src() {
        prev.src = src;
    }
    prev.site = site;
    prev.tid = u64::from(tid);
    Ok(r)
}

/// Why a decoded record cannot be a call the shim recorded, if it cannot.
fn check_record(r: &Record, lim: &Limits) -> Result<(), String> {
    if r.kernel as usize >= lim.kernels {
        return Err(format!(
            "kernel slot {} (the header names {})",
            r.kernel, lim.kernels
        ));
    }
    if r.n > MAX_CALL_BYTES {
        return Err(format!("size {} bytes (over the 1 TiB limit)", r.n));
    }
    if r.dst.checked_add(r.n).is_none() || r.src.checked_add(r.n).is_none() {
        return Err(format!(
            "a {}-byte range at 0x{:x} / 0x{:x} wraps around the address space",
            r.n, r.dst, r.src
        ));
    }
    // The shim sets the flag of a copy or move exactly when the ranges overlap.
    if r.op.has_src() && r.flag && r.dst.abs_diff(r.src) >= r.n {
        return Err(format!(
            "marked overlapping, but its {}-byte ranges are 0x{:x} apart",
            r.n,
            r.dst.abs_diff(r.src)
        ));
    }
    for p in r.probe.iter().flat_map(|p| p.src.iter().chain([&p.dst])) {
        if p.lines > lim.spread_lines || p.cached > p.lines {
            return Err(format!(
                "probe of {} lines with {} cached (at most {} lines)",
                p.lines, p.cached, lim.spread_lines
            ));
        }
    }
    Ok(())
}

impl Merged<'_> {
    /// Pushes stream `i`'s next record onto the heap. A record that fails its checks
    /// ends its block (the deltas of the rest depend on it) with a warning naming its
    /// byte offset.
    fn refill(&mut self, i: usize) {
        let data = &self.file.data;
        let lim = Limits::of(&self.file.header);
        let s = &mut self.streams[i];
        loop {
            if s.cursor.is_none() {
                let Some(b) = s.blocks.get(s.next_block) else {
                    return;
                };
                s.next_block += 1;
                s.cursor = Some((Cursor::new(&data[b.range.clone()]), b.count));
                s.prev = Prev {
                    sites: self.file.has_sites(),
                    tids: self.file.has_threads(),
                    ..Prev::default()
                };
            }
            let b = s.blocks[s.next_block - 1];
            let (c, left) = s.cursor.as_mut().expect("set above");
            let at = b.range.start + c.at;
            let problem = if *left == 0 {
                (!c.done())
                    .then(|| format!("{} bytes after the block's last record", c.b.len() - c.at))
            } else {
                match decode(c, &mut s.prev, &lim) {
                    Ok(r) => {
                        *left -= 1;
                        self.heap.push(std::cmp::Reverse((r.tsc, i, r)));
                        return;
                    }
                    Err(why) => Some(format!(
                        "record {} of the block at byte {}: {why}; the rest of the block is skipped",
                        b.count - *left,
                        b.at
                    )),
                }
            };
            if let Some(why) = problem {
                if self.error.is_none() {
                    self.error = Some(format!("{}: byte {at}: {why}", self.file.path.display()));
                }
            }
            s.cursor = None;
        }
    }
}

impl Iterator for Merged<'_> {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        let std::cmp::Reverse((_, i, r)) = self.heap.pop()?;
        self.refill(i);
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn zigzag(out: &mut Vec<u8>, now: u64, before: u64) {
        let d = now.wrapping_sub(before) as i64;
        varint(out, ((d << 1) ^ (d >> 63)) as u64);
    }

    fn block(out: &mut Vec<u8>, kind: u16, payload: &[u8]) {
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(payload);
    }

    /// A header payload as the shim wrote it in format version 1 (records without
    /// call sites): old traces must still decode.
    pub(crate) fn header_payload(pid: u32, argv0: &str) -> Vec<u8> {
        let mut h = Vec::new();
        for v in [OLDEST_VERSION, 0, pid, 1, 0, 4] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        for v in [2_000_000u64, 1000, 5, 6] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        for v in [30u32, 150, 128, 8, 64, 65536] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h.extend_from_slice(&[1, 0, 4, 4, 5, 11, 5, 5]);
        for v in 0..10u64 {
            h.extend_from_slice(&(v << 20).to_le_bytes());
        }
        let names = ["inline", "portable", "avx2", "libc"];
        h.push(names.len() as u8);
        for n in names {
            h.push(n.len() as u8);
            h.extend_from_slice(n.as_bytes());
        }
        h.extend_from_slice(&(argv0.len() as u16).to_le_bytes());
        h.extend_from_slice(argv0.as_bytes());
        h
    }

    #[test]
    fn decodes_a_handmade_file_and_merges_buffers_by_time() {
        let mut f = Vec::new();
        block(&mut f, KIND_HEADER, &header_payload(42, "prog"));
        // Buffer 3: two records, t = 100 and 300; buffer 9: one at 200, sampled.
        let mut r = Vec::new();
        r.extend_from_slice(&3u32.to_le_bytes());
        r.extend_from_slice(&2u32.to_le_bytes());
        r.push(2 << 4); // copy, kernel slot 2
        zigzag(&mut r, 100, 0);
        varint(&mut r, 77);
        varint(&mut r, 4096);
        zigzag(&mut r, 0x7000, 0);
        zigzag(&mut r, 0x9000, 0);
        r.push(3 | 8); // zero, fill byte 0, kernel slot 0
        zigzag(&mut r, 300, 100);
        varint(&mut r, 5);
        varint(&mut r, 16);
        zigzag(&mut r, 0x6000, 0x7000); // negative delta
        block(&mut f, KIND_RECORDS, &r);
        let mut r = Vec::new();
        r.extend_from_slice(&9u32.to_le_bytes());
        r.extend_from_slice(&1u32.to_le_bytes());
        r.push(1 | 4 | 15 << 4); // move, sampled, escaped kernel
        r.push(3);
        zigzag(&mut r, 200, 0);
        varint(&mut r, 300);
        varint(&mut r, 1000);
        zigzag(&mut r, 0x100, 0);
        zigzag(&mut r, 0x180, 0);
        varint(&mut r, 250);
        r.push(5 | 2 << 4);
        varint(&mut r, 60);
        r.push(7 | 7 << 4);
        block(&mut f, KIND_RECORDS, &r);
        let mut t = Vec::new();
        for v in [900u64, 5, 3, 0, 0, 0, 0] {
            t.extend_from_slice(&v.to_le_bytes());
        }
        block(&mut f, KIND_TRAILER, &t);

        let tf = TraceFile::parse(Path::new("mem"), f).unwrap();
        assert_eq!(tf.header.pid, 42);
        assert_eq!(tf.header.argv0, "prog");
        assert_eq!(tf.header.kernels, ["inline", "portable", "avx2", "libc"]);
        assert_eq!(
            tf.header.profile.size("copy_auto_probes_from"),
            Some(4 << 20)
        );
        assert_eq!(tf.trailer.unwrap().records, 3);
        let recs: Vec<Record> = tf.records().collect();
        assert_eq!(
            recs.iter().map(|r| r.tsc).collect::<Vec<_>>(),
            [100, 200, 300]
        );
        assert_eq!(
            (recs[0].op, recs[0].kernel, recs[0].n),
            (CallOp::Copy, 2, 4096)
        );
        assert_eq!((recs[0].dst, recs[0].src), (0x7000, 0x9000));
        assert_eq!(recs[1].op, CallOp::Move);
        assert_eq!(recs[1].kernel, 3);
        let p = recs[1].probe.unwrap();
        assert_eq!(
            p.src,
            Some(RegionProbe {
                first_cycles: 250,
                lines: 5,
                cached: 2
            })
        );
        assert_eq!(p.dst.cached, 7);
        assert_eq!(
            (recs[2].op, recs[2].flag, recs[2].dst),
            (CallOp::Zero, true, 0x6000)
        );
        assert_eq!(recs[2].src, 0);
    }

    #[test]
    fn version_2_records_carry_sites_and_maps_blocks_resolve_them() {
        let mut f = Vec::new();
        let mut h = header_payload(7, "prog");
        h[..4].copy_from_slice(&2u32.to_le_bytes());
        block(&mut f, KIND_HEADER, &h);
        let mut m = vec![1u8];
        m.extend_from_slice(b"5000-6000 r-xp 00001000 08:01 42 /usr/bin/prog\n");
        block(&mut f, KIND_MAPS, &m);
        let mut r = Vec::new();
        r.extend_from_slice(&0u32.to_le_bytes());
        r.extend_from_slice(&2u32.to_le_bytes());
        for (t, site, prev) in [(10u64, 0x51a4u64, 0u64), (20, 0x51a4, 0x51a4)] {
            r.push(2); // set, kernel slot 0
            zigzag(&mut r, t, t - 10);
            varint(&mut r, 5);
            varint(&mut r, 64);
            zigzag(&mut r, 0x9000, if prev == 0 { 0 } else { 0x9000 });
            zigzag(&mut r, site, prev);
        }
        block(&mut f, KIND_RECORDS, &r);
        let tf = TraceFile::parse(Path::new("v2"), f).unwrap();
        assert!(tf.has_sites());
        let sites: Vec<u64> = tf.records().map(|r| r.site).collect();
        assert_eq!(sites, [0x51a4, 0x51a4]);
        assert_eq!(
            tf.mappings,
            [Mapping {
                start: 0x5000,
                end: 0x6000,
                offset: 0x1000,
                path: "/usr/bin/prog".into()
            }]
        );
    }

    #[test]
    fn version_4_fate_and_io_blocks_are_read_and_checked() {
        let mut f = Vec::new();
        let mut h = header_payload(7, "prog");
        h[..4].copy_from_slice(&4u32.to_le_bytes());
        block(&mut f, KIND_HEADER, &h);
        let fate = |fates: [u32; 8], pages: u32| {
            let mut p = Vec::new();
            for v in [100u64, 0x10000, 1 << 20, 0x4011dc, 42] {
                p.extend_from_slice(&v.to_le_bytes());
            }
            p.extend_from_slice(&pages.to_le_bytes());
            for v in fates {
                p.extend_from_slice(&v.to_le_bytes());
            }
            p.extend_from_slice(&2500u64.to_le_bytes());
            p
        };
        block(&mut f, KIND_FATE, &fate([10, 0, 4, 0, 0, 0, 0, 2], 16));
        // Pages that do not add up: skipped with a warning.
        block(&mut f, KIND_FATE, &fate([10, 0, 0, 0, 0, 0, 0, 0], 16));
        let mut io = Vec::new();
        io.extend_from_slice(&1u32.to_le_bytes());
        io.extend_from_slice(&1u32.to_le_bytes()); // write
        for v in [0x401200u64, 3, 3 << 20, 3 << 20, 1, 777] {
            io.extend_from_slice(&v.to_le_bytes());
        }
        block(&mut f, KIND_IO, &io);
        let tf = TraceFile::parse(Path::new("v4"), f).unwrap();
        assert_eq!(tf.watched.len(), 1);
        let w = tf.watched[0];
        assert_eq!(
            (w.dst, w.n, w.site, w.tid, w.op),
            (0x10000, 1 << 20, 0x4011dc, 42, CallOp::Copy)
        );
        assert_eq!((w.pages, w.fates[2], w.first_ns), (16, 4, 2500));
        assert_eq!(tf.warnings.len(), 1, "{:?}", tf.warnings);
        assert_eq!(tf.io.len(), 1);
        let c = tf.io[0];
        assert_eq!(
            (c.op, c.site, c.calls, c.bytes, c.errors),
            ("write", 0x401200, 3, 3 << 20, 1)
        );
        assert!(c.is_output());
    }

    #[test]
    fn version_3_records_carry_threads_and_version_2_ones_read_as_thread_0() {
        // Two threads' records interleaved in one buffer: the tid is a delta too.
        let records = |with_tids: bool| {
            let mut r = Vec::new();
            r.extend_from_slice(&0u32.to_le_bytes());
            r.extend_from_slice(&3u32.to_le_bytes());
            let mut prev_tid = 0;
            for (t, tid) in [(10u64, 4242u64), (20, 4250), (30, 4242)] {
                r.push(2); // set, kernel slot 0
                zigzag(&mut r, t, t - 10);
                varint(&mut r, 5);
                varint(&mut r, 64);
                zigzag(&mut r, 0x9000, if t == 10 { 0 } else { 0x9000 });
                zigzag(&mut r, 0, 0); // site
                if with_tids {
                    zigzag(&mut r, tid, prev_tid);
                    prev_tid = tid;
                }
            }
            r
        };
        for (version, want) in [(3u32, [4242, 4250, 4242]), (2, [0, 0, 0])] {
            let mut f = Vec::new();
            let mut h = header_payload(7, "prog");
            h[..4].copy_from_slice(&version.to_le_bytes());
            block(&mut f, KIND_HEADER, &h);
            block(&mut f, KIND_RECORDS, &records(version >= 3));
            let tf = TraceFile::parse(Path::new("v"), f).unwrap();
            assert_eq!(tf.has_threads(), version >= 3);
            let mut it = tf.records();
            let tids: Vec<u32> = it.by_ref().map(|r| r.tid).collect();
            assert!(it.error.is_none(), "{:?}", it.error);
            assert_eq!(tids, want, "version {version}");
        }
    }

    #[test]
    fn rejects_other_files_and_reports_truncation() {
        assert!(TraceFile::parse(Path::new("x"), b"hello".to_vec()).is_err());
        let mut f = Vec::new();
        block(&mut f, KIND_HEADER, &header_payload(1, ""));
        let mut r = Vec::new();
        r.extend_from_slice(&0u32.to_le_bytes());
        r.extend_from_slice(&1u32.to_le_bytes());
        r.push(0);
        block(&mut f, KIND_RECORDS, &r);
        f.truncate(f.len() - 1);
        let tf = TraceFile::parse(Path::new("x"), f).unwrap();
        assert_eq!(tf.warnings.len(), 1, "{:?}", tf.warnings);
        assert!(tf.trailer.is_none());
    }
}
