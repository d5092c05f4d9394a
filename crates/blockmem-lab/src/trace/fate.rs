//! Destination fate (seed 003 Table 3: reused, unused, retargeted; the seeds are
//! summarised in docs/SEEDS.md), from the calls alone.
//!
//! Definition. Every byte a call writes (its destination range) is *live* from that
//! call on. Each later call, in start-time order within the same process, first reads
//! its source range, then writes its destination range:
//!
//! * a live byte inside a later call's **source** range is *used as a source* (the
//!   copy's data was copied on: seed 003's "reused", as far as block operations can
//!   see);
//! * a live byte inside a later call's **destination** range, not read before, is
//!   *overwritten* (seed 003's "retargeted");
//! * a live byte that neither happens to within the **window** is *not seen again*
//!   (seed 003's "unused" — by block operations; the program may still read it with
//!   ordinary loads, which a shim cannot see). The window is a volume of
//!   block-operation traffic *between* the write and the later call (bytes read plus
//!   bytes written by the calls in between), by default the effective LLC of the
//!   profile the program ran with: after that much other traffic the destination would
//!   have left the cache even if the program touched nothing else, so a later use
//!   would not have found it there. (The write's own size does not count: a block
//!   larger than the cache copied on by the very next call is *used as a source*.)
//!   Bytes still live when the process ends are *not seen again* too.
//!
//! Each byte gets exactly one fate, decided by the first of those events; results are
//! counted in bytes (seed 003 counts cache lines) per op of the call that wrote them,
//! per call site of that call (an index the caller assigns; see `sites`), and per
//! group (another index the caller assigns: the analysis groups the temporal writes of
//! each thread, to count the bytes that polluted the cache).
//! Overlap is exact address-range overlap, not line granularity.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use super::format::CallOp;

/// What became of destination bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Fates {
    /// Read by a later call as its source.
    pub used_as_source: u64,
    /// Written by a later call before being read.
    pub overwritten: u64,
    /// Neither within the window (or before the process ended).
    pub not_seen_again: u64,
}

impl Fates {
    /// All destination bytes counted.
    pub fn total(&self) -> u64 {
        self.used_as_source
            .saturating_add(self.overwritten)
            .saturating_add(self.not_seen_again)
    }

    fn add(&mut self, fate: Fate, bytes: u64) {
        match fate {
            Fate::Source => self.used_as_source = self.used_as_source.saturating_add(bytes),
            Fate::Overwritten => self.overwritten = self.overwritten.saturating_add(bytes),
            Fate::Unseen => self.not_seen_again = self.not_seen_again.saturating_add(bytes),
        }
    }

    /// Adds another set of counts.
    pub fn merge(&mut self, o: &Fates) {
        self.used_as_source = self.used_as_source.saturating_add(o.used_as_source);
        self.overwritten = self.overwritten.saturating_add(o.overwritten);
        self.not_seen_again = self.not_seen_again.saturating_add(o.not_seen_again);
    }
}

#[derive(Clone, Copy)]
enum Fate {
    Source,
    Overwritten,
    Unseen,
}

/// The site number of calls whose site is not known (not counted per site).
pub const NO_SITE: u32 = u32::MAX;
/// The group number of calls not counted per group.
pub const NO_GROUP: u32 = u32::MAX;

/// A live piece of a destination: `[start, end)` written by call `id` of op `op`.
#[derive(Clone, Copy, Debug)]
struct Piece {
    end: u64,
    id: u64,
    op: CallOp,
    site: u32,
    group: u32,
}

/// The tracker for one process (addresses are per process).
pub struct FateTracker {
    /// Live pieces by start address; disjoint.
    live: BTreeMap<u64, Piece>,
    /// Writes in order: (id, start, end, traffic when written).
    writes: VecDeque<(u64, u64, u64, u64)>,
    traffic: u64,
    window: u64,
    next_id: u64,
    /// Fates per op of the writing call, indexed like [`CallOp::ALL`].
    pub by_op: [Fates; 4],
    /// Fates per call site of the writing call, by the index given to [`Self::call`].
    pub by_site: Vec<Fates>,
    /// Fates per group of the writing call, by the index given to [`Self::call`].
    pub by_group: Vec<Fates>,
    /// Keys being retired or split (kept to avoid an allocation per call).
    scratch: Vec<u64>,
}

impl FateTracker {
    /// A tracker whose window is `window` bytes of later traffic (`u64::MAX`: to the
    /// end of the process).
    pub fn new(window: u64) -> FateTracker {
        FateTracker {
            live: BTreeMap::new(),
            writes: VecDeque::new(),
            traffic: 0,
            window: window.max(1),
            next_id: 0,
            by_op: [Fates::default(); 4],
            by_site: Vec::new(),
            by_group: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// One call, in start-time order, from call site number `site`, counted in group
    /// `group` ([`NO_GROUP`]: none).
    pub fn call(&mut self, op: CallOp, site: u32, group: u32, dst: u64, src: Option<u64>, n: u64) {
        if n == 0 {
            return;
        }
        if site != NO_SITE && self.by_site.len() <= site as usize {
            self.by_site.resize(site as usize + 1, Fates::default());
        }
        if group != NO_GROUP && self.by_group.len() <= group as usize {
            self.by_group.resize(group as usize + 1, Fates::default());
        }
        // Retire what the calls since its write moved more than the window past,
        // then read, then write; this call's own traffic counts for later calls.
        self.expire();
        if let Some(s) = src {
            self.take(s, s.saturating_add(n), Fate::Source);
        }
        let end = dst.saturating_add(n);
        self.take(dst, end, Fate::Overwritten);
        self.traffic = self
            .traffic
            .saturating_add(if src.is_some() { 2 * n } else { n });
        let id = self.next_id;
        self.next_id += 1;
        self.live.insert(
            dst,
            Piece {
                end,
                id,
                op,
                site,
                group,
            },
        );
        self.writes.push_back((id, dst, end, self.traffic));
    }

    /// Ends the process: whatever is live was not seen again.
    pub fn finish(&mut self) {
        for (start, p) in std::mem::take(&mut self.live) {
            self.settle(&p, Fate::Unseen, p.end - start);
        }
        self.writes.clear();
    }

    /// Live bytes (for tests).
    pub fn live_bytes(&self) -> u64 {
        self.live.iter().map(|(s, p)| p.end - s).sum()
    }

    /// Retires writes older than the window: their live pieces were not seen again.
    fn expire(&mut self) {
        while let Some(&(id, start, end, at)) = self.writes.front() {
            if self.traffic - at <= self.window {
                break;
            }
            self.writes.pop_front();
            // Usually the write is still one piece, at its start.
            if let Some(p) = self.live.get(&start) {
                if p.id == id && p.end == end {
                    let p = self.live.remove(&start).expect("just found");
                    self.settle(&p, Fate::Unseen, p.end - start);
                    continue;
                }
            }
            let mut gone = std::mem::take(&mut self.scratch);
            gone.clear();
            gone.extend(
                self.live
                    .range(start..end)
                    .filter(|(_, p)| p.id == id)
                    .map(|(&s, _)| s),
            );
            for &s in &gone {
                if let Some(p) = self.live.remove(&s) {
                    self.settle(&p, Fate::Unseen, p.end - s);
                }
            }
            self.scratch = gone;
        }
    }

    /// Counts `bytes` of piece `p` as having met `fate`.
    fn settle(&mut self, p: &Piece, fate: Fate, bytes: u64) {
        self.by_op[p.op as usize].add(fate, bytes);
        if let Some(f) = self.by_site.get_mut(p.site as usize) {
            f.add(fate, bytes);
        }
        if let Some(f) = self.by_group.get_mut(p.group as usize) {
            f.add(fate, bytes);
        }
    }

    /// Gives every live byte in `[a, b)` the fate `fate`, keeping the parts outside.
    fn take(&mut self, a: u64, b: u64, fate: Fate) {
        if a >= b {
            return;
        }
        // Pieces are disjoint and sorted, so the ones overlapping `[a, b)` are those
        // starting below `b`, walking down until one ends at or before `a`: one seek.
        let mut hit = std::mem::take(&mut self.scratch);
        hit.clear();
        hit.extend(
            self.live
                .range(..b)
                .rev()
                .take_while(|(_, p)| p.end > a)
                .map(|(&s, _)| s),
        );
        for &s in &hit {
            let Some(p) = self.live.remove(&s) else {
                continue;
            };
            let (lo, hi) = (s.max(a), p.end.min(b));
            self.settle(&p, fate, hi - lo);
            if s < a {
                self.live.insert(s, Piece { end: a, ..p });
            }
            if p.end > b {
                self.live.insert(b, Piece { end: p.end, ..p });
            }
        }
        self.scratch = hit;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COPY: usize = CallOp::Copy as usize;
    const SET: usize = CallOp::Set as usize;

    #[test]
    fn source_overwrite_and_unseen() {
        let mut t = FateTracker::new(u64::MAX);
        // A written, then copied on; B written, then half overwritten by a set.
        t.call(CallOp::Copy, 0, NO_GROUP, 0x1000, Some(0x9000), 4096);
        t.call(CallOp::Copy, 0, NO_GROUP, 0x5000, Some(0x1000), 4096);
        t.call(CallOp::Copy, 0, NO_GROUP, 0x3000, Some(0xa000), 1000);
        t.call(CallOp::Set, 0, NO_GROUP, 0x3000, None, 500);
        t.finish();
        let c = t.by_op[COPY];
        assert_eq!(c.used_as_source, 4096);
        assert_eq!(c.overwritten, 500);
        // B's other 500 bytes, and all of the second copy's destination.
        assert_eq!(c.not_seen_again, 500 + 4096);
        assert_eq!(t.by_op[SET].not_seen_again, 500);
        assert_eq!(t.live_bytes(), 0);
    }

    #[test]
    fn partial_overlaps_split_pieces() {
        let mut t = FateTracker::new(u64::MAX);
        t.call(CallOp::Copy, 0, NO_GROUP, 100, Some(10_000), 100); // [100, 200)
        t.call(CallOp::Copy, 0, NO_GROUP, 20_000, Some(150), 20); // reads [150, 170)
        t.call(CallOp::Copy, 0, NO_GROUP, 120, Some(30_000), 10); // overwrites [120, 130)
        t.call(CallOp::Copy, 0, NO_GROUP, 40_000, Some(140), 20); // reads [140, 150) and [150, 160): already taken
        t.finish();
        let c = t.by_op[COPY];
        assert_eq!(c.used_as_source, 20 + 10);
        assert_eq!(c.overwritten, 10);
        // Every destination byte has exactly one fate.
        assert_eq!(c.total(), 100 + 20 + 10 + 20);
    }

    #[test]
    fn the_window_retires_old_destinations() {
        // Window 10 KiB: after 12 KiB of traffic the first destination is gone.
        let mut t = FateTracker::new(10 << 10);
        t.call(CallOp::Set, 0, NO_GROUP, 0, None, 1024);
        t.call(CallOp::Set, 0, NO_GROUP, 1 << 20, None, 12 << 10);
        t.call(CallOp::Copy, 0, NO_GROUP, 2 << 20, Some(0), 1024); // too late
        t.finish();
        assert_eq!(t.by_op[SET].used_as_source, 0);
        assert_eq!(t.by_op[SET].not_seen_again, 1024 + (12 << 10));
    }

    #[test]
    fn an_overlapping_move_reads_before_it_writes() {
        let mut t = FateTracker::new(u64::MAX);
        t.call(CallOp::Copy, 0, NO_GROUP, 1000, Some(50_000), 100); // [1000, 1100)
        t.call(CallOp::Move, 0, NO_GROUP, 1010, Some(1000), 100); // reads [1000, 1100), writes [1010, 1110)
        t.finish();
        assert_eq!(t.by_op[COPY].used_as_source, 100);
        assert_eq!(t.by_op[CallOp::Move as usize].not_seen_again, 100);
    }

    #[test]
    fn groups_count_their_own_writes() {
        let mut t = FateTracker::new(u64::MAX);
        t.call(CallOp::Copy, 0, 1, 0x1000, Some(0x9000), 100); // group 1, copied on
        t.call(CallOp::Copy, 0, 0, 0x2000, Some(0x1000), 100); // group 0, never read
        t.call(CallOp::Set, 0, NO_GROUP, 0x3000, None, 50);
        t.finish();
        assert_eq!(t.by_group.len(), 2);
        assert_eq!(t.by_group[1].used_as_source, 100);
        assert_eq!(t.by_group[0].not_seen_again, 100);
        assert_eq!(t.by_group[0].total() + t.by_group[1].total(), 200);
    }
}
