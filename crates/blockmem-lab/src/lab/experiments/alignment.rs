//! `alignment`: destination offsets 0..=64 against a page-aligned source at 4 KiB (the
//! paper's size), hot→hot and clean→clean (seed 000 Tables 3–4, docs/SEEDS.md); then
//! the distance between source and destination modulo 4 KiB at 64 KiB hot→hot (4 KiB
//! aliasing: a load whose address matches an earlier, still-buffered store in the low
//! 12 bits is falsely held back, so a destination just ahead of the source mod 4 KiB is
//! slow).
//!
//! Source and destination live in separate page-aligned mappings, so the destination's
//! offset *is* their distance modulo 4 KiB.

use blockmem::kernel::Op;

use super::{libc_median, records_of, with_ratio, Ctx};
use crate::lab::report::Table;
use crate::lab::runner::{After, Cell, Record, Shape};
use crate::lab::state::CacheState::{self, Clean, Hot};

/// Name in JSON and on the command line.
pub const NAME: &str = "alignment";

/// Methods shown unless `--methods`.
pub const DEFAULT_METHODS: [&str; 7] = [
    "sse2",
    "avx2",
    "avx2_nt",
    "avx2_pf",
    "rep_movsb",
    "libc",
    "auto",
];

/// Distances (mod 4 KiB) for the aliasing sweep; 1 and 31 are the ends of the band
/// where `rep movsb` falls off a cliff on some CPUs (`blockmem::arch::x86_64::rep_movsb`).
pub const ALIAS_DISTANCES: [usize; 16] = [
    0, 1, 8, 16, 31, 32, 64, 128, 256, 512, 1024, 2048, 3072, 4032, 4064, 4088,
];

/// Runs both sweeps.
pub fn run(ctx: &mut Ctx<'_>) -> Vec<Record> {
    let methods = ctx.pick(Op::Copy, Some(&DEFAULT_METHODS));
    let offsets: Vec<usize> = if ctx.quick {
        vec![0, 1, 2, 4, 7, 8, 15, 16, 31, 32, 33, 48, 63, 64]
    } else {
        (0..=64).collect()
    };
    let n = ctx
        .sizes
        .and_then(|s| s.first().copied())
        .unwrap_or(4 << 10);
    let alias_n = ctx
        .sizes
        .and_then(|s| s.get(1).copied())
        .unwrap_or(64 << 10);
    // Each group is tagged with its sweep and offset.
    let mut groups: Vec<Vec<Cell>> = Vec::new();
    let mut tags: Vec<(&str, usize)> = Vec::new();
    let shape = |size: usize, state: CacheState| Shape {
        experiment: NAME,
        op: Op::Copy,
        size,
        src: state,
        dst: state,
        after: After::Nothing,
        reps: ctx.reps_for(size, 21, 21),
    };
    for state in [Hot, Clean] {
        for &off in &offsets {
            groups.push(shape(n, state).cells(&methods, off));
            tags.push(("dst_offset", off));
        }
    }
    for &dist in &ALIAS_DISTANCES {
        groups.push(shape(alias_n, Hot).cells(&methods, dist));
        tags.push(("distance_mod_4k", dist));
    }
    let results = ctx.measure_plan(&groups, NAME);
    results
        .into_iter()
        .zip(tags)
        .flat_map(|(recs, (sweep, off))| {
            recs.into_iter().flatten().map(move |mut r| {
                r.extras.insert("sweep".into(), sweep.into());
                r.extras.insert("dst_offset".into(), off.into());
                r
            })
        })
        .collect()
}

fn sweep_of(r: &Record) -> &str {
    r.extra_str("sweep")
}

fn off_of(r: &Record) -> u64 {
    r.extras
        .get("dst_offset")
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

/// Offset tables (hot, clean) and the aliasing table: GB/s with libc's ratio.
pub fn tables(recs: &[Record]) -> Vec<Table> {
    let (recs, methods) = records_of(recs, NAME);
    let mut out = Vec::new();
    let groups = [
        (
            "dst_offset",
            "hot",
            "destination offset vs aligned source, hot→hot",
        ),
        (
            "dst_offset",
            "clean",
            "destination offset vs aligned source, clean→clean",
        ),
        (
            "distance_mod_4k",
            "hot",
            "dst − src distance mod 4 KiB (4K aliasing), hot→hot",
        ),
    ];
    for (sweep, state, title) in groups {
        let sel: Vec<&Record> = recs
            .iter()
            .filter(|r| sweep_of(r) == sweep && r.dst == state)
            .collect();
        if sel.is_empty() {
            continue;
        }
        let mut header = vec![if sweep == "dst_offset" {
            "offset"
        } else {
            "distance"
        }
        .to_string()];
        header.extend(methods.iter().cloned());
        let size = sel[0].size;
        let mut t = Table::new(
            format!(
                "alignment, {} copy: {title}: GB/s (libc time / method time)",
                super::fmt_size(size)
            ),
            "seed 000 Tables 3–4",
            header,
        );
        let mut offs: Vec<u64> = sel.iter().map(|r| off_of(r)).collect();
        offs.dedup();
        offs.sort_unstable();
        offs.dedup();
        for o in offs {
            let same = |r: &Record| sweep_of(r) == sweep && r.dst == state && off_of(r) == o;
            let mut row = vec![o.to_string()];
            for m in &methods {
                row.push(match recs.iter().find(|r| &r.method == m && same(r)) {
                    Some(r) => with_ratio(
                        format!("{:.1}", r.gbps),
                        r.summary.median,
                        libc_median(&recs, same),
                    ),
                    None => "-".into(),
                });
            }
            t.rows.push(row);
        }
        out.push(t);
    }
    out
}
