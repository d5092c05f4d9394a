//! `blockmem info [--json]`: what blockmem sees on this host.

use blockmem::cpu::{self, CacheKind, CpuInfo};
use blockmem::kernel::{self, Op};
use blockmem::{dispatch, Hint};
use serde_json::{json, Value};

/// Flags of `blockmem info`.
#[derive(clap::Args, Debug)]
pub struct InfoArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

fn fmt_bytes(n: usize) -> String {
    if n >= 1 << 30 && n % (1 << 30) == 0 {
        format!("{} GiB", n >> 30)
    } else if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

fn kind_name(k: CacheKind) -> &'static str {
    match k {
        CacheKind::Data => "data",
        CacheKind::Instruction => "instruction",
        CacheKind::Unified => "unified",
    }
}

/// Sizes the decision table shows.
const DECISION_SIZES: [usize; 5] = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20];

/// The whole report as JSON (the text form is rendered from the same value).
pub fn report(info: &CpuInfo) -> Value {
    let c = &info.caches;
    let per_level_leaf = match info.caches.per_level_leaf {
        Some(0x8000_001d) => "0x8000001d",
        Some(_) => "4",
        None => "none",
    };
    let levels: Vec<Value> = c
        .levels()
        .map(|l| {
            json!({
                "level": l.level, "kind": kind_name(l.kind), "size": l.size, "line": l.line,
                "ways": l.ways, "sets": l.sets, "shared_by": l.shared_by,
            })
        })
        .collect();
    let used = |u: cpu::UsedSize| json!({"size": u.size, "source": u.source.describe(info.vendor)});
    let kernels: Vec<Value> = kernel::table()
        .iter()
        .map(|k| {
            json!({
                "name": k.name(),
                "ops": k.ops().map(Op::name).collect::<Vec<_>>(),
                "requires": k.requires.names().collect::<Vec<_>>(),
                "available": k.is_available(),
                "summary": k.summary,
            })
        })
        .collect();
    let t = dispatch::thresholds();
    let mut decisions = Vec::new();
    for op in [Op::Copy, Op::Zero] {
        for &n in &DECISION_SIZES {
            for hint in Hint::ALL {
                decisions.push(json!({
                    "op": op.name(), "size": n, "hint": hint.name(),
                    "kernel": dispatch::choose(op, n, hint, false).name(),
                }));
            }
        }
    }
    json!({
        "cpu": {
            "vendor": info.vendor_str(),
            "brand": info.brand_str(),
            "family": info.family, "model": info.model, "stepping": info.stepping,
            "hypervisor": info.hypervisor,
            "features": info.features.names().collect::<Vec<_>>(),
            "features_enabled": cpu::features().names().collect::<Vec<_>>(),
        },
        "caches": {
            "per_level_leaf": per_level_leaf,
            "levels": levels,
            "legacy_0x80000006": {"l2": c.legacy_l2, "l3": c.legacy_l3},
            "used": {"l1d": used(c.used.l1d), "l2": used(c.used.l2), "llc": used(c.used.llc), "line": c.used.line},
        },
        "kernels": kernels,
        "profile": {
            "source": "cpuid-defaults",
            "note": "no calibration profile support yet: thresholds derive from the cache sizes in use",
            "stream_auto": t.stream_auto, "stream_no_reuse": t.stream_no_reuse, "stream_reuse": t.stream_reuse,
        },
        "decisions": decisions,
    })
}

/// Runs `blockmem info`.
pub fn run(args: &InfoArgs) -> anyhow::Result<()> {
    let info = cpu::detect();
    let r = report(&info);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let u = |v: &Value| v.as_u64().unwrap_or(0) as usize;
    println!(
        "CPU       {} ({}, family {:#x} model {:#x} stepping {}){}",
        s(&r["cpu"]["brand"]),
        s(&r["cpu"]["vendor"]),
        info.family,
        info.model,
        info.stepping,
        if info.hypervisor {
            ", under a hypervisor"
        } else {
            ""
        }
    );
    println!(
        "features  {}",
        info.features.names().collect::<Vec<_>>().join(" ")
    );
    println!();
    println!(
        "caches as CPUID leaf {} reports them:",
        s(&r["caches"]["per_level_leaf"])
    );
    for l in info.caches.levels() {
        println!(
            "  L{} {:<11} {:>9}  {:>2}-way  {:>5} sets  {} B lines  shared by {} threads",
            l.level,
            kind_name(l.kind),
            fmt_bytes(l.size),
            l.ways,
            l.sets,
            l.line,
            l.shared_by
        );
    }
    let c = &info.caches;
    println!(
        "legacy leaf 0x80000006:  L2 {}  L3 {}",
        if c.legacy_l2 > 0 {
            fmt_bytes(c.legacy_l2)
        } else {
            "-".into()
        },
        if c.legacy_l3 > 0 {
            fmt_bytes(c.legacy_l3)
        } else {
            "-".into()
        }
    );
    let top = info
        .caches
        .levels()
        .filter(|l| l.level >= 3)
        .map(|l| l.size)
        .max();
    if let (Some(top), true) = (top, c.legacy_l3 > 0) {
        if top != c.legacy_l3 {
            println!("  note: the legacy leaf disagrees with the per-level leaf on L3 ({} vs {}); blockmem uses the per-level leaf",
                fmt_bytes(c.legacy_l3), fmt_bytes(top));
        }
    }
    println!(
        "blockmem uses:  L1d {} ({})  L2 {} ({})  LLC {} ({})  line {} B",
        fmt_bytes(c.used.l1d.size),
        c.used.l1d.source.describe(info.vendor),
        fmt_bytes(c.used.l2.size),
        c.used.l2.source.describe(info.vendor),
        fmt_bytes(c.used.llc.size),
        c.used.llc.source.describe(info.vendor),
        c.used.line
    );
    println!();
    println!("kernels:");
    for k in kernel::table() {
        let ops: Vec<_> = k.ops().map(Op::name).collect();
        let req: Vec<_> = k.requires.names().collect();
        println!(
            "  {:<11} {:<9} {:<20} {:<16} {}",
            k.name(),
            if k.is_available() {
                "available"
            } else {
                "missing"
            },
            ops.join(","),
            if req.is_empty() {
                "-".to_string()
            } else {
                req.join(",")
            },
            k.summary
        );
    }
    println!();
    let p = &r["profile"];
    println!("profile: {} ({})", s(&p["source"]), s(&p["note"]));
    println!(
        "  stream (non-temporal) from: auto {}  noreuse {}  reuse {}",
        fmt_bytes(u(&p["stream_auto"])),
        fmt_bytes(u(&p["stream_no_reuse"])),
        fmt_bytes(u(&p["stream_reuse"]))
    );
    println!();
    println!("decisions (no overlap; sizes above the inline ladder):");
    print!("  {:<6} {:>8}", "op", "size");
    for h in Hint::ALL {
        print!("  {:<10}", h.name());
    }
    println!();
    for op in [Op::Copy, Op::Zero] {
        for &n in &DECISION_SIZES {
            print!("  {:<6} {:>8}", op.name(), fmt_bytes(n));
            for h in Hint::ALL {
                print!("  {:<10}", dispatch::choose(op, n, h, false).name());
            }
            println!();
        }
    }
    Ok(())
}
