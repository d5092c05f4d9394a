//! `blockmem info [--json]`: what blockmem sees on this host.

use blockmem::cpu::{self, CacheKind, CpuInfo};
use blockmem::dispatch;
use blockmem::kernel::{self, Op};
use blockmem::policy::Step;
use blockmem::profile;
use serde_json::{json, Value};
use std::fmt::Write as _;
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

/// Flags of `blockmem info`.
#[derive(clap::Args, Debug)]
pub struct InfoArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Print the built-in table of this CPU's class, as compiled in from
    /// `crates/blockmem/tables/CLASS.profile` (a profile, with its evidence).
    #[arg(long, conflicts_with = "json")]
    pub builtin: bool,
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

/// The decision table in force as JSON: every row of the table in use (as written)
/// and as compiled for this CPU (kernels it cannot run replaced by their stand-ins,
/// forced kernel applied, equal neighbours merged).
pub fn table_json() -> Value {
    let t = dispatch::table();
    let plan = dispatch::plan();
    let rows: Vec<Value> = t
        .keyed_rows()
        .map(|(fam, hint, st, row)| row_json(fam, hint, st, row, plan.row(fam, hint, st)))
        .collect();
    // The contended rows that differ from their twins.
    let contended: Vec<Value> = t
        .keyed_contended_rows()
        .filter(|&(fam, hint, st, row)| row != t.row(fam, hint, st))
        .map(|(fam, hint, st, row)| {
            let prow = plan.row_under(blockmem::policy::Load::Contended, fam, hint, st);
            row_json(fam, hint, st, row, prow)
        })
        .collect();
    let mut text = String::new();
    profile::render(&mut text, t, &[], &|_, _, _| None).expect("render to a String");
    json!({
        "builtin_class": dispatch::builtin_class().name(),
        "llc_effective": plan.llc_effective(),
        "probe_hit_max": plan.probe_hit_max(),
        "loop_temporal_max": profile::LOOP_OPS
            .iter()
            .map(|&op| (op.name().to_string(), json!(plan.loop_temporal_max(op))))
            .collect::<serde_json::Map<_, _>>(),
        "forced": dispatch::forced().map(|k| k.name()),
        "rows": rows,
        "contended_calls": plan.contended_calls(),
        "contended_rows": contended,
        "text": text,
    })
}

/// One row as written and as compiled (`prow`).
fn row_json(
    fam: profile::Family,
    hint: blockmem::Hint,
    st: profile::State,
    row: &profile::Row,
    prow: &blockmem::policy::PlanRow,
) -> Value {
    let written: Vec<Value> = row
        .bands()
        .iter()
        .map(|b| json!({"from": b.from, "action": b.action.name()}))
        .collect();
    let [op_a, op_b] = fam.ops();
    let compiled: Vec<Value> = prow
        .bands()
        .map(|(from, ks)| {
            let mut band = match ks {
                None => json!({"from": from, "action": "probe"}),
                Some((a, b)) if a == b => json!({"from": from, "action": a.name()}),
                Some((a, b)) => json!({"from": from, "action": a.name(),
                    op_a.name(): a.name(), op_b.name(): b.name()}),
            };
            // The ops whose band recalls: a destination blockmem wrote lately
            // takes the cached row's kernel.
            let recalls: Vec<&str> = [(op_a, false), (op_b, true)]
                .into_iter()
                .filter(|&(_, second)| matches!(prow.step(from, second), Step::Recall(_)))
                .map(|(op, _)| op.name())
                .collect();
            if !recalls.is_empty() {
                band["recalls"] = json!(recalls);
            }
            band
        })
        .collect();
    json!({
        "family": fam.name(), "hint": hint.name(), "state": st.name(),
        "bands": written, "compiled": compiled,
    })
}

/// A compiled row as one line: `avx2 · 4KiB rep_movsb · 1MiB probe`.
fn row_line(bands: &[Value]) -> String {
    bands
        .iter()
        .map(|b| {
            let mut action = b["action"].as_str().unwrap_or("?").to_string();
            if b.get("recalls").is_some() {
                action.push_str(" (recalls)");
            }
            match b["from"].as_u64().unwrap_or(0) {
                0 => action,
                from => format!("{} {action}", fmt_bytes(from as usize)),
            }
        })
        .collect::<Vec<_>>()
        .join(" · ")
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
    let (source, error) = dispatch::status();
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
            "inline_max": {"copy": dispatch::inline_max(Op::Copy), "set": dispatch::inline_max(Op::Set)},
            "loop_bounds_from_file": loop_bounds_from_file(source, info),
        },
        "table": table_json(),
    })
}

/// For a profile the library loaded from a file, which of its loop bounds
/// (`OP.loop_temporal_max`) the file names, by op (`null` for a built-in table or a
/// file that cannot be read or parsed again).
fn loop_bounds_from_file(source: blockmem::autoload::Source, info: &CpuInfo) -> Value {
    use blockmem::autoload::Source;
    let path = match source {
        Source::Env | Source::DefaultPath => profile_path(),
        _ => None,
    };
    let defaults = blockmem::builtin::Class::of(info.features, info.family).table();
    let parsed = path
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|text| profile::parse(&text, defaults).ok());
    match parsed {
        Some((_, prov)) => profile::LOOP_OPS
            .iter()
            .map(|&op| (op.name().to_string(), json!(prov.loop_bound_from_file(op))))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        None => Value::Null,
    }
}

/// Runs `blockmem info`.
pub fn run(args: &InfoArgs) -> anyhow::Result<()> {
    if args.builtin {
        crate::output::print(dispatch::builtin_class().text())?;
        return Ok(());
    }
    let info = cpu::detect();
    let r = report(&info);
    if args.json {
        crate::output::print(&(serde_json::to_string_pretty(&r)? + "\n"))?;
        return Ok(());
    }
    // The text is assembled, then printed in one write (see `crate::output`).
    let mut out = String::new();
    macro_rules! say {
        ($($arg:tt)*) => {{
            let _ = writeln!(out, $($arg)*);
        }};
    }
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let u = |v: &Value| v.as_u64().unwrap_or(0) as usize;
    say!(
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
    say!(
        "features  {}",
        info.features.names().collect::<Vec<_>>().join(" ")
    );
    say!();
    say!(
        "caches as CPUID leaf {} reports them:",
        s(&r["caches"]["per_level_leaf"])
    );
    for l in info.caches.levels() {
        say!(
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
    say!(
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
            say!("  note: the legacy leaf disagrees with the per-level leaf on L3 ({} vs {}); blockmem uses the per-level leaf",
                fmt_bytes(c.legacy_l3), fmt_bytes(top));
        }
    }
    say!(
        "blockmem uses:  L1d {} ({})  L2 {} ({})  LLC {} ({})  line {} B",
        fmt_bytes(c.used.l1d.size),
        c.used.l1d.source.describe(info.vendor),
        fmt_bytes(c.used.l2.size),
        c.used.l2.source.describe(info.vendor),
        fmt_bytes(c.used.llc.size),
        c.used.llc.source.describe(info.vendor),
        c.used.line
    );
    say!();
    say!("kernels:");
    for k in kernel::table() {
        let ops: Vec<_> = k.ops().map(Op::name).collect();
        let req: Vec<_> = k.requires.names().collect();
        say!(
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
    say!();
    let pr = &r["profile"];
    let path = pr["path"]
        .as_str()
        .unwrap_or("(no HOME or XDG_CACHE_HOME: none)");
    let class = s(&r["table"]["builtin_class"]);
    match (pr["error"].as_str(), s(&pr["source"]).as_str()) {
        (Some(e), _) => say!(
            "profile: {path}: rejected, {e}; using the built-in table ({class}) (fix the file or re-run `blockmem calibrate`)"
        ),
        (None, "built-in") => say!(
            "profile: none at {path}; using the built-in table for {class} CPUs (`blockmem info --builtin` prints it; run `blockmem calibrate` to measure this host)"
        ),
        (None, src) => say!("profile: {path} ({src}; rows it lacks from the built-in {class} table)"),
    }
    let lacking: Vec<&str> = profile::LOOP_OPS
        .iter()
        .map(|op| op.name())
        .filter(|name| pr["loop_bounds_from_file"][name] == false)
        .collect();
    if !lacking.is_empty() {
        say!(
            "  it names no {} loop bound (OP.loop_temporal_max), so the built-in table's is used; re-run `blockmem calibrate` to measure this host's (a profile written by an earlier blockmem)",
            lacking.join(" or ")
        );
    }
    let t = &r["table"];
    say!(
        "decision table in force (calls up to {} bytes (copy) / {} (set) run inline first; effective LLC {}; a probe hit is <= {} cycles; a block streamed lately and met again soon is written temporally up to {} (copy) / {} (set){}):",
        u(&pr["inline_max"]["copy"]),
        u(&pr["inline_max"]["set"]),
        fmt_bytes(u(&t["llc_effective"])),
        u(&t["probe_hit_max"]),
        fmt_bytes(u(&t["loop_temporal_max"]["copy"])),
        fmt_bytes(u(&t["loop_temporal_max"]["set"])),
        t["forced"].as_str().map(|k| format!("; forced kernel {k}")).unwrap_or_default()
    );
    // A row's key (with `suffix`) and its compiled bands, one line.
    let line = |row: &Value, suffix: &str, width: usize| {
        let key = format!(
            "{}.{}.{}{suffix}",
            s(&row["family"]),
            s(&row["hint"]),
            s(&row["state"])
        );
        let compiled = row["compiled"].as_array().map_or(&[][..], |v| v.as_slice());
        format!("  {key:<width$} {}", row_line(compiled))
    };
    for row in t["rows"].as_array().into_iter().flatten() {
        say!("{}", line(row, "", 22));
    }
    let contended = t["contended_rows"]
        .as_array()
        .map_or(&[][..], |v| v.as_slice());
    if !contended.is_empty() {
        say!(
            "  while {} or more large calls are in flight (this one included), the contended rows:",
            u(&t["contended_calls"])
        );
    }
    for row in contended {
        say!("{}", line(row, ".contended", 32));
    }
    let recalling = t["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["compiled"].as_array().into_iter().flatten())
        .any(|b| b.get("recalls").is_some());
    if recalling {
        say!("  (recalls): a destination whose page such a band wrote within the last few microseconds runs the cached row's kernel (it is in cache); any other, the band's own");
    }
    crate::output::print(&out)?;
    Ok(())
}
