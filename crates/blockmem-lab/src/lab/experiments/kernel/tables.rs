//! The experiment's tables and plots, from its records alone.

use std::path::Path as FsPath;

use anyhow::Result;
use plotters::prelude::*;

use super::forward::{Route, PART as FORWARD};
use super::ipc::{Channel, ONE_CPU, PART as IPC, TWO_CPUS};
use super::read::{CLASSIC, PART as READ};
use super::NAME;
use crate::lab::experiments::{distinct, fmt_size, records_of};
use crate::lab::plot::{lines, Series};
use crate::lab::report::Table;
use crate::lab::runner::Record;

fn part(recs: &[Record], name: &str) -> Vec<Record> {
    recs.iter()
        .filter(|r| r.extra_str("part") == name)
        .cloned()
        .collect()
}

/// `12.3 [8.1–13.0]`: GB/s at the median, the slowest and the fastest sample.
fn gbps_range(r: &Record) -> String {
    let n = r.size as f64;
    format!(
        "{:.2} [{:.2}–{:.2}]",
        r.gbps,
        n / r.summary.max,
        n / r.summary.min.max(1e-9)
    )
}

/// The tables: the read path and its spread, the IPC channels, what the consumer
/// pays, forwarding, the classic loops beside the lab's cells, and what they say.
pub fn tables(recs: &[Record]) -> Vec<Table> {
    let (recs, _) = records_of(recs, NAME);
    if recs.is_empty() {
        return Vec::new();
    }
    let read = part(&recs, READ);
    let all_ipc = part(&recs, IPC);
    let ipc: Vec<Record> = all_ipc
        .iter()
        .filter(|r| r.extra_str("placement") == TWO_CPUS)
        .cloned()
        .collect();
    let mut out = Vec::new();
    out.extend(read_table(&read));
    out.extend(spread_table(&read));
    out.extend(ipc_table(&ipc));
    out.extend(placement_table(&all_ipc));
    out.extend(consumer_table(&ipc));
    out.extend(forward_table(&part(&recs, FORWARD)));
    out.extend(classic_table(&part(&recs, CLASSIC), &read, &ipc));
    out.extend(finding_table(&read, &ipc, &part(&recs, FORWARD)));
    out
}

/// Where, on this host, the kernel's copy is the cost of I/O and what a program can do
/// about it, read from the run's own cells: per size, `read` against the same bytes
/// copied from a mapping, a pipe's message against the copies it makes, and the
/// fastest way to forward a file.
fn finding_table(read: &[Record], ipc: &[Record], forward: &[Record]) -> Option<Table> {
    let mut t = Table::new(
        "kernel: where the copy is the cost of I/O (this run)",
        "read: `read`'s median time over the same bytes copied from a mapping by libc, the median over page-cache and buffer states [fewest–most]; near 1 the kernel's copy is the cost, above it the call's own work; pipe: the copy's share of a hot message (user-copy×2's time over the pipe's); forward: the fastest route and its speed over pread+pwrite",
        ["what", "bytes", "figure", "so"].map(String::from).to_vec(),
    );
    let mmap_libc = read
        .iter()
        .map(|r| r.method.as_str())
        .find(|m| m.starts_with("mmap+") && m.ends_with("libc"));
    for n in distinct(read, |r| r.size) {
        let Some(lib) = mmap_libc else { break };
        let of = |m: &str, pc: &str, buf: &str| {
            read.iter()
                .find(|r| r.size == n && r.src == pc && r.dst == buf && r.method == m)
                .map(|r| r.summary.median)
        };
        let mut ratios: Vec<f64> = distinct(read, |r| (r.src.clone(), r.dst.clone()))
            .into_iter()
            .filter_map(|(pc, buf)| Some(of("read", &pc, &buf)? / of(lib, &pc, &buf)?))
            .collect();
        if ratios.is_empty() {
            continue;
        }
        ratios.sort_by(f64::total_cmp);
        let mid = ratios[ratios.len() / 2];
        let so = if mid <= 1.3 {
            "the copy is the cost: map the file instead of copying it"
        } else {
            "the call is the cost, not the copy: fewer, larger reads, or map the file"
        };
        t.rows.push(vec![
            "read".into(),
            fmt_size(n),
            format!(
                "{mid:.2}× [{:.2}–{:.2}]",
                ratios[0],
                ratios[ratios.len() - 1]
            ),
            so.into(),
        ]);
    }
    for n in distinct(ipc, |r| r.size) {
        let (Some(user), Some(pipe)) = (
            find(ipc, Channel::UserCopy.name(), n, "hot", "none"),
            find(ipc, Channel::Pipe.name(), n, "hot", "none"),
        ) else {
            continue;
        };
        let share = user.summary.median / pipe.summary.median;
        let fastest = ipc
            .iter()
            .filter(|r| r.size == n && r.src == "hot" && r.reuse == "none")
            .filter(|r| r.method != Channel::UserCopy.name())
            .min_by(|a, b| a.summary.median.total_cmp(&b.summary.median))
            .map_or("–", |r| r.method.as_str());
        let so = if share < 0.5 {
            format!("waking the other side is the cost: batch messages (fastest here: {fastest})")
        } else {
            format!("the copy is the cost: a channel that copies once (fastest here: {fastest})")
        };
        t.rows.push(vec![
            "pipe".into(),
            fmt_size(n),
            format!("{:.0}% copy", 100.0 * share),
            so,
        ]);
    }
    for n in distinct(forward, |r| r.size) {
        let of = |m: &str| forward.iter().find(|r| r.size == n && r.method == m);
        let (Some(base), Some(best)) = (
            of(Route::ReadWrite.name()),
            forward
                .iter()
                .filter(|r| r.size == n)
                .min_by(|a, b| a.summary.median.total_cmp(&b.summary.median)),
        ) else {
            continue;
        };
        t.rows.push(vec![
            "forward".into(),
            fmt_size(n),
            format!(
                "{} {:.2}×",
                best.method,
                base.summary.median / best.summary.median
            ),
            "the fastest route to move a cached file on".into(),
        ]);
    }
    (!t.rows.is_empty()).then_some(t)
}

fn read_table(recs: &[Record]) -> Option<Table> {
    let first = recs.first()?;
    let methods = distinct(recs, |r| r.method.clone());
    let mut header = vec!["bytes, page cache, buffer".to_string()];
    header.extend(methods.iter().cloned());
    let mut t = Table::new(
        "kernel read fast path: a file in the page cache into a user buffer (GB/s)",
        format!(
            "median [slowest–fastest sample] over {} rounds of fresh user buffers; page cache `evicted`: the file's lines flushed from the CPU caches (its pages stay in the page cache); mmap+X: the same bytes copied by X from a mapping of the file; {}",
            first.extra_f64("rounds").unwrap_or(0.0),
            first.extra_str("host_line")
        ),
        header,
    );
    for (n, pc, buf) in distinct(recs, |r| (r.size, r.src.clone(), r.dst.clone())) {
        let mut row = vec![format!("{}, {pc}, {buf}", fmt_size(n))];
        for m in &methods {
            row.push(
                recs.iter()
                    .find(|r| r.size == n && r.src == pc && r.dst == buf && &r.method == m)
                    .map_or("–".into(), gbps_range),
            );
        }
        t.rows.push(row);
    }
    Some(t)
}

/// Per size, each route's GB/s and its speed over the copy through a user buffer.
fn forward_table(recs: &[Record]) -> Option<Table> {
    let first = recs.first()?;
    let mut header = vec!["bytes".to_string()];
    header.extend(Route::ALL.iter().map(|r| r.name().to_string()));
    let mut t = Table::new(
        "kernel forward: a cached file's bytes moved on to another cached file (GB/s)",
        format!(
            "median [slowest–fastest transfer], and × pread+pwrite (its median time over the route's; > 1: faster than the copy through a 64 KiB user buffer); the destination written over in place on {}; {}",
            first.extra_str("filesystem"),
            first.extra_str("host_line")
        ),
        header,
    );
    for n in distinct(recs, |r| r.size) {
        let of = |m: &str| recs.iter().find(|r| r.size == n && r.method == m);
        let base = of(Route::ReadWrite.name()).map(|r| r.summary.median);
        let mut row = vec![fmt_size(n)];
        for route in Route::ALL {
            row.push(of(route.name()).map_or("–".into(), |r| match base {
                Some(b) => format!("{} ({:.2}×)", gbps_range(r), b / r.summary.median),
                None => gbps_range(r),
            }));
        }
        t.rows.push(row);
    }
    Some(t)
}

fn spread_table(recs: &[Record]) -> Option<Table> {
    recs.first()?;
    let methods = distinct(recs, |r| r.method.clone());
    let mut header = vec!["bytes, page cache, buffer".to_string()];
    header.extend(methods.iter().cloned());
    let mut t = Table::new(
        "kernel read fast path: run-to-run spread (seed 000 §1 found up to 10×)",
        "per method: slowest / fastest sample, p90 / p10, and the slowest round's median / the fastest round's (each round a fresh user buffer: other physical pages)",
        header,
    );
    for (n, pc, buf) in distinct(recs, |r| (r.size, r.src.clone(), r.dst.clone())) {
        let mut row = vec![format!("{}, {pc}, {buf}", fmt_size(n))];
        for m in &methods {
            row.push(
                recs.iter()
                    .find(|r| r.size == n && r.src == pc && r.dst == buf && &r.method == m)
                    .map_or("–".into(), |r| {
                        let f = |k: &str| r.extra_f64(k).unwrap_or(f64::NAN);
                        format!(
                            "{:.1}× / {:.2}× / {:.2}×",
                            f("spread_max_over_min"),
                            f("spread_p90_over_p10"),
                            f("spread_rounds")
                        )
                    }),
            );
        }
        t.rows.push(row);
    }
    Some(t)
}

fn find<'a>(recs: &'a [Record], ch: &str, n: usize, temp: &str, reuse: &str) -> Option<&'a Record> {
    recs.iter()
        .find(|r| r.method == ch && r.size == n && r.src == temp && r.reuse == reuse)
}

fn ipc_table(recs: &[Record]) -> Option<Table> {
    let first = recs.first()?;
    let chans: Vec<&str> = Channel::ALL
        .iter()
        .filter(|c| **c != Channel::ShmInPlace)
        .map(|c| c.name())
        .collect();
    let mut header = vec!["message, temperature".to_string()];
    header.extend(chans.iter().map(|c| c.to_string()));
    header.extend(["copy share: pipe", "copy share: unix", "fastest"].map(String::from));
    let same = first.extras.get("same_cpu").and_then(|v| v.as_bool()) == Some(true);
    let mut t = Table::new(
        "kernel IPC: two processes, one message at a time (ns per message, GB/s)",
        format!(
            "median over batches; consumer on CPU {}, producer on CPU {}{}; copy share: user-copy×2's time / the channel's (the part of the cost that is the copy, if the kernel copied as fast as libc); {}",
            first.extras["cpus"][0],
            first.extras["cpus"][1],
            if same { " (the same CPU: one allowed)" } else { "" },
            first.extra_str("host_line")
        ),
        header,
    );
    for (n, temp) in distinct(recs, |r| (r.size, r.src.clone())) {
        let mut row = vec![format!("{}, {temp}", fmt_size(n))];
        for c in &chans {
            row.push(find(recs, c, n, &temp, "none").map_or("–".into(), |r| {
                format!("{:.0} ns ({:.2})", r.summary.median, r.gbps)
            }));
        }
        let reference = find(recs, Channel::UserCopy.name(), n, &temp, "none");
        for c in ["pipe", "unix"] {
            row.push(match (reference, find(recs, c, n, &temp, "none")) {
                (Some(u), Some(r)) => {
                    format!("{:.0}%", 100.0 * u.summary.median / r.summary.median)
                }
                _ => "–".into(),
            });
        }
        let fastest = recs
            .iter()
            .filter(|r| r.size == n && r.src == temp && r.reuse == "none")
            .filter(|r| r.method != Channel::UserCopy.name())
            .min_by(|a, b| a.summary.median.total_cmp(&b.summary.median));
        row.push(fastest.map_or("–".into(), |r| r.method.clone()));
        t.rows.push(row);
    }
    Some(t)
}

fn consumer_table(recs: &[Record]) -> Option<Table> {
    recs.first()?;
    let chans: Vec<&str> = Channel::ALL.iter().map(|c| c.name()).collect();
    let mut header = vec!["message, temperature".to_string()];
    header.extend(chans.iter().map(|c| c.to_string()));
    let mut t = Table::new(
        "kernel IPC: what the consumer pays to read what it received",
        "per channel: ns per message of the consumer's sum of every word of it, timed apart right after it arrived (median over batches; under 1 KiB it is within the timer's resolution), and that read's GB/s; pipe, unix, vmsplice: the kernel's cached stores wrote the buffer; shm-ring, user-copy×2: libc's memcpy; shm-inplace: the producer, on the other CPU, wrote the shared slot (no copy on the consumer's side)",
        header,
    );
    for (n, temp) in distinct(recs, |r| (r.size, r.src.clone())) {
        let mut row = vec![format!("{}, {temp}", fmt_size(n))];
        for c in &chans {
            row.push(find(recs, c, n, &temp, "read").map_or("–".into(), |r| {
                match r.extra_f64("read_ns_per_msg") {
                    Some(ns) if ns >= 1.0 => format!("{ns:.0} ns, {:.1} GB/s", n as f64 / ns),
                    Some(_) => "< 1 ns".into(),
                    None => "–".into(),
                }
            }));
        }
        t.rows.push(row);
    }
    Some(t)
}

fn placement_table(recs: &[Record]) -> Option<Table> {
    let one: Vec<&Record> = recs
        .iter()
        .filter(|r| r.extra_str("placement") == ONE_CPU && r.reuse == "none")
        .collect();
    one.first()?;
    let chans = distinct(recs, |r| r.method.clone());
    let chans: Vec<&String> = chans
        .iter()
        .filter(|c| one.iter().any(|r| &&r.method == c))
        .collect();
    let mut header = vec!["message (hot)".to_string()];
    header.extend(chans.iter().map(|c| format!("{c}: two CPUs / one CPU")));
    let mut t = Table::new(
        "kernel IPC: the pair on two CPUs or on one",
        "ns per message on two CPUs / on one (both pinned to the consumer's CPU), hot, consumer checking only; > 1: sharing one CPU is faster (a blocked reader is woken by a context switch, not by an interrupt to another CPU)",
        header,
    );
    for n in distinct(recs, |r| r.size) {
        let mut row = vec![fmt_size(n)];
        for c in &chans {
            let at = |pl: &str| {
                recs.iter().find(|r| {
                    &&r.method == c
                        && r.size == n
                        && r.src == "hot"
                        && r.reuse == "none"
                        && r.extra_str("placement") == pl
                })
            };
            row.push(match (at(TWO_CPUS), at(ONE_CPU)) {
                (Some(a), Some(b)) => format!(
                    "{:.0} / {:.0} ns = {:.2}",
                    a.summary.median,
                    b.summary.median,
                    a.summary.median / b.summary.median
                ),
                _ => "–".into(),
            });
        }
        t.rows.push(row);
    }
    Some(t)
}

fn classic_table(classic: &[Record], read: &[Record], ipc: &[Record]) -> Option<Table> {
    classic.first()?;
    let mut t = Table::new(
        "kernel: the classic loops beside the lab's cells, same run",
        "lmbench-style fixed loops (bw_file_rd: 64 KiB reads of a cached file into one buffer; bw_pipe, bw_unix: 64 KiB messages between two unpinned processes) against the lab's matching cell (pinned, verified per message); GB/s median [slowest–fastest]; classic / lab > 1: the classic loop reports more bandwidth",
        ["loop", "classic", "lab cell", "lab", "classic / lab"]
            .map(String::from)
            .to_vec(),
    );
    for c in classic {
        let (label, lab) = match c.extra_str("loop") {
            "bw_file_rd" => (
                format!("read 64 KiB, page cache {}, buffer hot", c.src),
                read.iter().find(|r| {
                    r.method == "read" && r.size == c.size && r.src == c.src && r.dst == "hot"
                }),
            ),
            l => {
                let ch = if l == "bw_pipe" { "pipe" } else { "unix" };
                (
                    format!("{ch} 64 KiB, hot, two CPUs"),
                    find(ipc, ch, c.size, "hot", "none"),
                )
            }
        };
        let what = match c.extras.get("file_bytes").and_then(|v| v.as_u64()) {
            Some(b) => format!("{} ({} file)", c.method, fmt_size(b as usize)),
            None => format!(
                "{} ({:.0}% of passes ended on one CPU)",
                c.method,
                100.0 * c.extra_f64("same_cpu_batches").unwrap_or(f64::NAN)
            ),
        };
        let ratio = lab.map_or("–".into(), |l| {
            format!("{:.2}", l.summary.median / c.summary.median)
        });
        t.rows.push(vec![
            what,
            gbps_range(c),
            label,
            lab.map_or("–".into(), gbps_range),
            ratio,
        ]);
    }
    Some(t)
}

/// `kernel-read.svg` (GB/s against size, buffer hot, page cache hot and evicted) and
/// `kernel-ipc.svg` (GB/s against message size, hot and cold, consumer checking only).
pub fn plot(recs: &[&Record], dir: &FsPath) -> Result<Vec<String>> {
    let owned: Vec<Record> = recs.iter().map(|r| (*r).clone()).collect();
    let mut files = Vec::new();
    let read: Vec<Record> = part(&owned, READ)
        .into_iter()
        .filter(|r| r.dst == "hot")
        .collect();
    if !read.is_empty() {
        let f = "kernel-read.svg";
        two_panels(
            &dir.join(f),
            &read,
            ["hot", "evicted"],
            "page cache",
            "bytes",
        )?;
        files.push(f.to_string());
    }
    let ipc: Vec<Record> = part(&owned, IPC)
        .into_iter()
        .filter(|r| r.reuse == "none")
        .collect();
    if !ipc.is_empty() {
        let f = "kernel-ipc.svg";
        two_panels(
            &dir.join(f),
            &ipc,
            ["hot", "cold"],
            "messages",
            "message size",
        )?;
        files.push(f.to_string());
    }
    Ok(files)
}

/// Two panels side by side, one per source state, GB/s against size per method.
fn two_panels(
    path: &FsPath,
    recs: &[Record],
    states: [&str; 2],
    what: &str,
    x: &str,
) -> Result<()> {
    let root = SVGBackend::new(path, (1200, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    for (a, st) in root.split_evenly((1, 2)).iter().zip(states) {
        let series: Vec<Series> = distinct(recs, |r| r.method.clone())
            .into_iter()
            .map(|m| Series {
                points: recs
                    .iter()
                    .filter(|r| r.method == m && r.src == st)
                    .map(|r| (r.size as f64, r.gbps))
                    .collect(),
                name: m,
            })
            .collect();
        lines(
            a,
            &format!("{NAME}: {what} {st}"),
            x,
            "GB/s",
            &series,
            true,
            true,
        )?;
    }
    root.present().map_err(|e| anyhow::anyhow!("{e:?}"))?;
    Ok(())
}
