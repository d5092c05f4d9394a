//! `blockmem info [--json]`: what blockmem sees on this host.

use blockmem::cpu::{self, CacheKind, CpuInfo};
use blockmem::kernel::{self, Op};
use blockmem::policy::{Probed, Probes};
use blockmem::profile::{self, Profile};
use blockmem::{dispatch, Hint};
use serde_json::{json, Value};
use std::path::PathBuf;

/// Where the library looks for its profile: `BLOCKMEM_PROFILE`, else
/// `$XDG_CACHE_HOME/blockmem/profile`, else `$HOME/.cache/blockmem/profile` (the same
/// rule as the core's loader). `None` when neither variable is set.
pub fn profile_path() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var("BLOCKMEM_PROFILE") {
        return Some(PathBuf::from(p));
    }
    if let Some(x) = var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(x).join("blockmem/profile"));
    }
    var("HOME").map(|h| PathBuf::from(h).join(".cache/blockmem/profile"))
}

/// The cache states of the decision table: (label, src, dst).
const STATES: [(&str, Probed, Probed); 4] = [
    ("hot/hot", Probed::Cached, Probed::Cached),
    ("cold/cold", Probed::Cold, Probed::Cold),
    ("hot/cold", Probed::Cached, Probed::Cold),
    ("cold/hot", Probed::Cold, Probed::Cached),
];

/// The kernel the library picks for a call of `n` bytes whose first source and
/// destination lines are in the given states (probes only count where the library
/// probes: from [`blockmem::policy::probe_from`] for the hint, where a result can
/// change the kernel).
pub fn decision(
    op: Op,
    n: usize,
    hint: Hint,
    src: Probed,
    dst: Probed,
    p: &Profile,
) -> &'static str {
    let probes = if n >= blockmem::policy::probe_from(p, hint, blockmem::cpu::features()) {
        Probes {
            // As the dispatcher: the source is probed only where its kernel differs.
            src: if op == Op::Copy && blockmem::policy::probes_source(p, n, dst) {
                src
            } else {
                Probed::Unknown
            },
            dst,
        }
    } else {
        Probes::NONE
    };
    dispatch::choose_probed(op, n, hint, false, probes).name()
}

/// Flags of `blockmem info`.
#[derive(clap::Args, Debug)]
pub struct InfoArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

fn fmt_bytes(n: usize) -> String {
    profile::Size(n).to_string()
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

/// How an `Auto` call of each size is dispatched, smallest first: `(from, below,
/// route)` with `below` = `usize::MAX` for the last stretch. Routes: `inline` (the
/// size ladder), a kernel name (a segment that runs it without the policy), `policy`
/// (the policy's path: probes where they pay, then `decide`). `copies`: copy and move,
/// else set and zero.
pub fn routes(copies: bool) -> Vec<(usize, usize, String)> {
    let op = if copies { Op::Copy } else { Op::Set };
    let inline = dispatch::inline_max(op);
    let (copy_below, copy_k, set_below, set_k) = dispatch::fast_path();
    let (copy_rep, set_rep) = dispatch::rep_segments();
    let (copy_tail, set_tail) = dispatch::fast_tails();
    let (_, robust_below, robust_k) = dispatch::robust_segment();
    let (fast_below, fast_k, rep_below, rep_k, tail_below) = if copies {
        (
            copy_below,
            copy_k,
            copy_rep,
            blockmem::KernelId::RepMovsb,
            copy_tail,
        )
    } else {
        (
            set_below,
            set_k,
            set_rep,
            blockmem::KernelId::RepStosb,
            set_tail,
        )
    };
    let mut out = vec![(0, inline + 1, "inline".to_string())];
    let mut at = inline + 1;
    let mut push = |below: usize, route: &str| {
        if below > at {
            out.push((at, below, route.to_string()));
            at = below;
        }
    };
    if fast_below != 0 {
        push(fast_below, fast_k.name());
        push(rep_below, rep_k.name());
        push(tail_below, fast_k.name());
        // The robust segment starts where the ones before end (`robust_segment`).
        if copies {
            push(robust_below, robust_k.name());
        }
    }
    push(usize::MAX, "policy");
    out
}

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
    let p = dispatch::profile();
    let (source, error) = dispatch::status();
    let mut decisions = Vec::new();
    for op in [Op::Copy, Op::Zero] {
        for &n in &DECISION_SIZES {
            for (label, src, dst) in STATES {
                if op == Op::Zero && src != dst {
                    continue;
                }
                for hint in Hint::ALL {
                    decisions.push(json!({
                        "op": op.name(), "size": n, "hint": hint.name(),
                        "src": if op == Op::Zero { "-" } else { label.split('/').next().unwrap() },
                        "dst": label.split('/').nth(1).unwrap(),
                        "kernel": decision(op, n, hint, src, dst, &p),
                    }));
                }
            }
        }
    }
    let mut text = String::new();
    profile::render(&mut text, &p, &[]).expect("render to String");
    let keys: serde_json::Map<String, Value> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty() && !l.starts_with("version"))
        .filter_map(|l| l.split_once(" = "))
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
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
            "source": source.name(),
            "path": profile_path().map(|p| p.display().to_string()),
            "error": error.map(|e| e.to_string()),
            "keys": keys,
            "probe_from": Hint::ALL.iter().map(|&h| {
                let n = dispatch::probe_from(h);
                (h.name().to_string(), if n == usize::MAX { Value::Null } else { json!(n) })
            }).collect::<serde_json::Map<String, Value>>(),
        },
        "dispatch": {
            "copy": route_json(true),
            "set": route_json(false),
        },
        "decisions": decisions,
    })
}

fn route_json(copies: bool) -> Vec<Value> {
    routes(copies)
        .into_iter()
        .map(|(from, below, route)| {
            json!({
                "from": from,
                "below": if below == usize::MAX { Value::Null } else { json!(below) },
                "route": route,
            })
        })
        .collect()
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
    let pr = &r["profile"];
    let path = pr["path"]
        .as_str()
        .unwrap_or("(no HOME or XDG_CACHE_HOME: none)");
    match (pr["error"].as_str(), s(&pr["source"]).as_str()) {
        (Some(e), _) => println!(
            "profile: {path}: rejected, {e}; using CPUID defaults (fix the file or re-run `blockmem calibrate`)"
        ),
        (None, "cpuid-defaults") => {
            println!("profile: none at {path}; using CPUID defaults (run `blockmem calibrate` to measure this host)")
        }
        (None, src) => println!("profile: {path} ({src})"),
    }
    for (k, v) in pr["keys"].as_object().into_iter().flatten() {
        // The file's "no limit" (usize::MAX) as `Size` shows it to people.
        let v = v.as_str().unwrap_or("");
        let v = match v.parse::<usize>() {
            Ok(usize::MAX) => profile::Size(usize::MAX).to_string(),
            _ => v.to_string(),
        };
        println!("  {k:<22} {v}");
    }
    let from: Vec<String> = Hint::ALL
        .iter()
        .map(|h| {
            let v = &pr["probe_from"][h.name()];
            let at = v
                .as_u64()
                .map_or("never".to_string(), |n| fmt_bytes(n as usize));
            format!("{} {at}", h.name())
        })
        .collect();
    println!(
        "  probes from: {} (the first size where a probe result can change the kernel)",
        from.join(", ")
    );
    println!();
    println!("dispatch of an Auto call, by size (a kernel: run without consulting the policy):");
    for (name, key) in [("copy/move", "copy"), ("set/zero", "set")] {
        let parts: Vec<String> = r["dispatch"][key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|seg| {
                let route = s(&seg["route"]);
                match u(&seg["from"]) {
                    0 => format!("{route} up to {}", u(&seg["below"]).saturating_sub(1)),
                    from => format!("{route} from {}", fmt_bytes(from)),
                }
            })
            .collect();
        println!("  {name:<10} {}", parts.join(", "));
    }
    println!();
    println!("decisions (first source/destination line hot or cold; no overlap):");
    print!("  {:<5} {:>8}  {:<10}", "op", "size", "src/dst");
    for h in Hint::ALL {
        print!("  {:<11}", h.name());
    }
    println!();
    for d in r["decisions"].as_array().unwrap().chunks(3) {
        let state = format!("{}/{}", s(&d[0]["src"]), s(&d[0]["dst"]));
        print!(
            "  {:<5} {:>8}  {:<10}",
            s(&d[0]["op"]),
            fmt_bytes(u(&d[0]["size"])),
            state
        );
        for x in d {
            print!("  {:<11}", s(&x["kernel"]));
        }
        println!();
    }
    Ok(())
}
