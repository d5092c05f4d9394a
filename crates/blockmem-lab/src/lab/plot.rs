//! SVG plots: with `plotters`, bandwidth / cycles-per-byte curves against size (one
//! panel per cache state, one line per method) and heat maps of every method's ratio
//! to libc (the temperature matrix, pollution, fleet) on a diverging scale around 1
//! with its legend; by hand, the headline's chart of `auto`'s ratio to libc in every
//! cell ([`ratio_chart`]), whose points carry their cell's name as a tooltip.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::experiments::{distinct, fmt_size, Experiment};
use super::report::esc;
use super::runner::Record;
use super::stats::paired_median_ratio;
use super::summary::{Headline, OpSummary, SLOW};

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plot: {e:?}")
}

/// A tick label with as many decimals as its magnitude needs.
fn fmt_num(y: f64) -> String {
    let a = y.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{y:.0}")
    } else if a >= 10.0 {
        format!("{y:.1}")
    } else if a >= 1.0 {
        format!("{y:.2}")
    } else {
        format!("{y:.3}")
    }
}

/// One curve.
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Points (x, y), x ascending; non-finite or non-positive y (on a log axis) are
    /// dropped.
    pub points: Vec<(f64, f64)>,
}

/// A line chart panel: log-2 size axis when `size_x`, log y when `log_y`.
pub fn lines(
    area: &Area<'_>,
    title: &str,
    xdesc: &str,
    ydesc: &str,
    series: &[Series],
    size_x: bool,
    log_y: bool,
) -> Result<()> {
    let pts = || {
        series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| p.1.is_finite() && (!log_y || p.1 > 0.0))
    };
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts() {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        return Ok(());
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if log_y {
        y0 /= 1.3;
        y1 *= 1.3;
    } else {
        y0 = 0.0;
        y1 = if y1 > 0.0 { y1 * 1.1 } else { 1.0 };
    }
    let mut b = ChartBuilder::on(area);
    b.caption(title, ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(56);
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(xdesc)
                .y_desc(ydesc)
                .x_label_formatter(&|x: &f64| {
                    if size_x {
                        fmt_size(*x as usize)
                    } else {
                        format!("{x:.0}")
                    }
                })
                .y_label_formatter(&|y: &f64| fmt_num(*y))
                .draw()
                .map_err(err)?;
            for (i, s) in series.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                let p: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .copied()
                    .filter(|p| p.1.is_finite() && (!log_y || p.1 > 0.0))
                    .collect();
                chart
                    .draw_series(LineSeries::new(p.clone(), color.stroke_width(2)))
                    .map_err(err)?
                    .label(s.name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                    });
                chart
                    .draw_series(p.into_iter().map(|q| Circle::new(q, 2, color.filled())))
                    .map_err(err)?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 11))
                .draw()
                .map_err(err)?;
        }};
    }
    match (size_x, log_y) {
        (true, true) => body!(b
            .build_cartesian_2d(
                (x0..x1).log_scale().base(4.0),
                (y0..y1).log_scale().base(2.0)
            )
            .map_err(err)?),
        (true, false) => body!(b
            .build_cartesian_2d((x0..x1).log_scale().base(4.0), y0..y1)
            .map_err(err)?),
        (false, true) => body!(b
            .build_cartesian_2d(x0..x1, (y0..y1).log_scale().base(2.0))
            .map_err(err)?),
        (false, false) => body!(b.build_cartesian_2d(x0..x1, y0..y1).map_err(err)?),
    }
    Ok(())
}

/// How a heat map colours its values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    /// Ratios to libc (> 1: better than libc): diverging around 1.0, red below, blue
    /// above, white at 1, with a legend.
    RatioToLibc,
    /// Absolute values, by log(value) between the map's min and max, green = good
    /// (high when `higher_better`): used only where the run has no libc to divide by.
    Sequential {
        /// Whether high values are good.
        higher_better: bool,
    },
}

/// Colours of the diverging scale: slower than libc, equal, faster.
const SLOWER: (f64, f64, f64) = (178.0, 24.0, 43.0);
const EQUAL: (f64, f64, f64) = (247.0, 247.0, 247.0);
const FASTER: (f64, f64, f64) = (33.0, 102.0, 172.0);

/// The ratio shown at full colour (and its inverse): the smallest of 1.25, 1.5, 2, 4
/// and 8 that holds every value, so noise around 1 stays pale.
pub fn ratio_range(values: impl Iterator<Item = f64>) -> f64 {
    let m = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v.ln().abs())
        .fold(0.0, f64::max);
    [1.25f64, 1.5, 2.0, 4.0, 8.0]
        .into_iter()
        .find(|c| c.ln() >= m - 1e-12)
        .unwrap_or(8.0)
}

/// Position of `ratio` on the diverging scale: −1 (`1/range` or less) to 1 (`range` or
/// more), 0 at 1.
pub fn diverging_t(ratio: f64, range: f64) -> f64 {
    (ratio.ln() / range.ln()).clamp(-1.0, 1.0)
}

/// The colour of a ratio on the diverging scale (see [`Scale::RatioToLibc`]).
pub fn diverging(ratio: f64, range: f64) -> RGBColor {
    let t = diverging_t(ratio, range);
    let (to, f) = if t < 0.0 { (SLOWER, -t) } else { (FASTER, t) };
    let mix = |a: f64, b: f64| (a + (b - a) * f).round() as u8;
    RGBColor(mix(EQUAL.0, to.0), mix(EQUAL.1, to.1), mix(EQUAL.2, to.2))
}

fn fmt_ratio(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}×")
    } else {
        format!("{r:.2}×")
    }
}

/// A heat map: `values[row][col]`, each cell coloured by `scale` and labelled with
/// `fmt(value)`; ratio maps get a legend of their colour scale.
pub fn heatmap(
    path: &Path,
    title: &str,
    rows: &[String],
    cols: &[String],
    values: &[Vec<Option<f64>>],
    scale: Scale,
    fmt: &dyn Fn(f64) -> String,
) -> Result<()> {
    let (cw, ch, left, top) = (96i32, 24i32, 110i32, 64i32);
    let legend_h = if scale == Scale::RatioToLibc { 64 } else { 0 };
    let w = (left + cw * cols.len() as i32 + 20) as u32;
    let h = (top + ch * rows.len() as i32 + 20 + legend_h) as u32;
    let root = SVGBackend::new(path, (w.max(460), h)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    root.draw(&Text::new(title.to_string(), (10, 8), ("sans-serif", 16)))
        .map_err(err)?;
    let finite: Vec<f64> = values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let lo = finite.iter().copied().fold(f64::MAX, f64::min).ln();
    let hi = finite.iter().copied().fold(f64::MIN, f64::max).ln();
    let range = ratio_range(finite.iter().copied());
    for (j, c) in cols.iter().enumerate() {
        root.draw(&Text::new(
            c.clone(),
            (left + cw * j as i32 + 4, top - 20),
            ("sans-serif", 12),
        ))
        .map_err(err)?;
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + ch * i as i32;
        root.draw(&Text::new(r.clone(), (6, y + 6), ("sans-serif", 12)))
            .map_err(err)?;
        for (j, v) in values[i].iter().enumerate() {
            let x = left + cw * j as i32;
            let (fill, label, dark) = match (v, scale) {
                (Some(v), Scale::RatioToLibc) if v.is_finite() && *v > 0.0 => (
                    diverging(*v, range),
                    fmt(*v),
                    diverging_t(*v, range).abs() > 0.55,
                ),
                (Some(v), Scale::Sequential { higher_better }) if v.is_finite() && *v > 0.0 => {
                    let mut t = if hi > lo {
                        (v.ln() - lo) / (hi - lo)
                    } else {
                        0.5
                    };
                    if !higher_better {
                        t = 1.0 - t;
                    }
                    // red (bad) → yellow → green (good)
                    let (r, g) = if t < 0.5 {
                        (230.0, 90.0 + 300.0 * t)
                    } else {
                        (230.0 - 340.0 * (t - 0.5), 240.0)
                    };
                    (RGBColor(r as u8, g.min(240.0) as u8, 100), fmt(*v), false)
                }
                _ => (RGBColor(235, 235, 235), "-".to_string(), false),
            };
            root.draw(&Rectangle::new(
                [(x, y), (x + cw - 2, y + ch - 2)],
                fill.filled(),
            ))
            .map_err(err)?;
            let ink = if dark { WHITE } else { BLACK };
            root.draw(&Text::new(
                label,
                (x + 6, y + 6),
                ("sans-serif", 12).into_font().color(&ink),
            ))
            .map_err(err)?;
        }
    }
    if scale == Scale::RatioToLibc {
        legend(&root, 10, top + ch * rows.len() as i32 + 16, range)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// Round ratios to mark on a legend of `range` ([`ratio_range`]'s values).
fn legend_ticks(range: f64) -> Vec<f64> {
    let up: &[f64] = match range {
        r if r <= 1.25 => &[1.1, 1.25],
        r if r <= 1.5 => &[1.25, 1.5],
        r if r <= 2.0 => &[1.5, 2.0],
        r if r <= 4.0 => &[2.0, 4.0],
        _ => &[2.0, 4.0, 8.0],
    };
    let mut v: Vec<f64> = up.iter().rev().map(|r| 1.0 / r).collect();
    v.push(1.0);
    v.extend(up);
    v
}

/// `0.5×`, `0.8×`, `1×`, `1.25×`, `0.125×`: a tick's ratio without trailing zeros.
fn tick_label(r: f64) -> String {
    let s = format!("{r:.3}");
    format!("{}×", s.trim_end_matches('0').trim_end_matches('.'))
}

/// The diverging scale's legend at (`x`, `y`): a strip from `1/range` to `range`
/// with ticks, "slower than libc" at the left and "faster" at the right.
fn legend(root: &Area<'_>, x: i32, y: i32, range: f64) -> Result<()> {
    let (steps, sw, sh) = (21, 16i32, 12i32);
    let font = ("sans-serif", 11);
    root.draw(&Text::new("slower than libc", (x, y), font))
        .map_err(err)?;
    let strip_x = x + 100;
    for i in 0..steps {
        let t = -1.0 + 2.0 * i as f64 / (steps - 1) as f64;
        let r = range.powf(t);
        let x0 = strip_x + sw * i;
        root.draw(&Rectangle::new(
            [(x0, y), (x0 + sw, y + sh)],
            diverging(r, range).filled(),
        ))
        .map_err(err)?;
    }
    root.draw(&Text::new(
        "faster than libc",
        (strip_x + sw * steps + 8, y),
        font,
    ))
    .map_err(err)?;
    for r in legend_ticks(range) {
        let t = diverging_t(r, range);
        let tx = strip_x + ((t + 1.0) / 2.0 * (sw * (steps - 1)) as f64) as i32 + sw / 2;
        root.draw(&PathElement::new(
            vec![(tx, y + sh), (tx, y + sh + 4)],
            BLACK,
        ))
        .map_err(err)?;
        root.draw(&Text::new(tick_label(r), (tx - 10, y + sh + 6), font))
            .map_err(err)?;
    }
    root.draw(&Text::new(
        "(libc time / method time)",
        (strip_x, y + sh + 22),
        font,
    ))
    .map_err(err)?;
    Ok(())
}

/// libc's time over `r`'s in the same cell: paired by repetition where the samples
/// pair (`samples`: the sample list to compare), else the ratio of `median`s.
fn vs_libc(
    libc: &Record,
    r: &Record,
    samples: &dyn Fn(&Record) -> Vec<f64>,
    median: &dyn Fn(&Record) -> Option<f64>,
) -> Option<f64> {
    paired_median_ratio(&samples(libc), &samples(r)).or_else(|| {
        let (l, m) = (median(libc)?, median(r)?);
        (l > 0.0 && m > 0.0).then(|| l / m)
    })
}

/// A number list extra (`app_read_samples_ns`).
fn extra_samples(r: &Record, k: &str) -> Vec<f64> {
    r.extras
        .get(k)
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
        .unwrap_or_default()
}

/// A record's value to show.
type Value<'f> = &'f dyn Fn(&Record) -> Option<f64>;

/// One heat map over `methods` × `cols`: with libc in the run, every other method's
/// ratio to libc ([`Scale::RatioToLibc`]); without it, `absolute` values on the
/// sequential scale. `find(method, col)` is the record of a cell.
#[allow(clippy::too_many_arguments)]
fn ratio_or_absolute_map<'a, C>(
    path: &Path,
    (ratio_title, absolute_title): (&str, &str),
    methods: &[String],
    cols: &[C],
    labels: &[String],
    find: &dyn Fn(&str, &C) -> Option<&'a Record>,
    ratio: &dyn Fn(&Record, &Record) -> Option<f64>,
    absolute: (Value<'_>, bool),
) -> Result<()> {
    let has_libc = methods.iter().any(|m| m == "libc");
    if has_libc {
        let rows: Vec<String> = methods.iter().filter(|m| *m != "libc").cloned().collect();
        let values: Vec<Vec<Option<f64>>> = rows
            .iter()
            .map(|m| {
                cols.iter()
                    .map(|c| ratio(find("libc", c)?, find(m, c)?))
                    .collect()
            })
            .collect();
        heatmap(
            path,
            ratio_title,
            &rows,
            labels,
            &values,
            Scale::RatioToLibc,
            &fmt_ratio,
        )
    } else {
        let values: Vec<Vec<Option<f64>>> = methods
            .iter()
            .map(|m| {
                cols.iter()
                    .map(|c| find(m, c).and_then(absolute.0))
                    .collect()
            })
            .collect();
        heatmap(
            path,
            absolute_title,
            methods,
            labels,
            &values,
            Scale::Sequential {
                higher_better: absolute.1,
            },
            &|v| format!("{v:.1}"),
        )
    }
}

fn by_method_vs_size(recs: &[&Record], y: impl Fn(&Record) -> f64) -> Vec<Series> {
    let owned: Vec<Record> = recs.iter().map(|r| (*r).clone()).collect();
    distinct(&owned, |r| r.method.clone())
        .into_iter()
        .map(|m| Series {
            points: recs
                .iter()
                .filter(|r| r.method == m)
                .map(|r| (r.size as f64, y(r)))
                .collect(),
            name: m,
        })
        .collect()
}

fn panels(
    path: &Path,
    (w, h): (u32, u32),
    grid: (usize, usize),
    mut each: impl FnMut(usize, &Area<'_>) -> Result<()>,
) -> Result<()> {
    let root = SVGBackend::new(path, (w, h)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    for (i, a) in root.split_evenly(grid).iter().enumerate() {
        each(i, a)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// Writes the plots of one experiment into `dir`, returning their file names.
pub fn plot(exp: Experiment, recs: &[Record], dir: &Path) -> Result<Vec<String>> {
    let recs: Vec<&Record> = recs.iter().filter(|r| r.experiment == exp.name()).collect();
    if recs.is_empty() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    let cpb = |r: &Record| r.extra_f64("cycles_per_byte").unwrap_or(f64::NAN);
    match exp {
        Experiment::Sizes => {
            use super::experiments::sizes::PAIRS;
            for (file, ydesc, logy, gb) in [
                ("sizes.svg", "cycles / byte", true, false),
                ("sizes-gbps.svg", "GB/s", false, true),
            ] {
                panels(&dir.join(file), (1400, 1000), (2, 2), |i, a| {
                    let (s, d) = PAIRS[i];
                    let sel: Vec<&Record> = recs
                        .iter()
                        .copied()
                        .filter(|r| r.src == s.name() && r.dst == d.name())
                        .collect();
                    let series = by_method_vs_size(&sel, |r| if gb { r.gbps } else { cpb(r) });
                    lines(
                        a,
                        &format!("copy, src {s} → dst {d}"),
                        "size",
                        ydesc,
                        &series,
                        true,
                        logy,
                    )
                })?;
                files.push(file.to_string());
            }
        }
        Experiment::Temperature => {
            let owned: Vec<Record> = recs.iter().map(|r| (*r).clone()).collect();
            let methods = distinct(&owned, |r| r.method.clone());
            let states = ["hot", "clean", "dirty"];
            let cols: Vec<(&str, &str)> = states
                .iter()
                .flat_map(|s| states.iter().map(move |d| (*s, *d)))
                .collect();
            let labels: Vec<String> = cols.iter().map(|(s, d)| format!("{s}→{d}")).collect();
            for n in distinct(&owned, |r| r.size) {
                let file = format!("temperature-{}.svg", fmt_size(n).replace(' ', ""));
                let find = |m: &str, c: &(&str, &str)| {
                    owned
                        .iter()
                        .find(|r| r.method == m && r.size == n && r.src == c.0 && r.dst == c.1)
                };
                ratio_or_absolute_map(
                    &dir.join(&file),
                    (
                        &format!(
                            "temperature: {} copy, libc time / method time (src→dst)",
                            fmt_size(n)
                        ),
                        &format!("temperature: {} copy, GB/s (src→dst)", fmt_size(n)),
                    ),
                    &methods,
                    &cols,
                    &labels,
                    &find,
                    &|l, r| vs_libc(l, r, &|x| x.samples_ns.clone(), &|x| Some(x.summary.median)),
                    (&|r| Some(r.gbps), true),
                )?;
                files.push(file);
            }
        }
        Experiment::Reuse => {
            panels(&dir.join("reuse.svg"), (1400, 520), (1, 2), |i, a| {
                let s = ["hot", "clean"][i];
                // The read-back cells (the loop cells are in the experiment's table).
                let sel: Vec<&Record> = recs
                    .iter()
                    .copied()
                    .filter(|r| r.src == s && r.reuse == "read")
                    .collect();
                let series = by_method_vs_size(&sel, cpb);
                lines(
                    a,
                    &format!("copy {s}→clean, then read dst: total"),
                    "size",
                    "cycles / byte (copy + read)",
                    &series,
                    true,
                    true,
                )
            })?;
            files.push("reuse.svg".into());
        }
        Experiment::Zero => {
            // The single calls: the loop cells (`again`) have their own table.
            let recs: Vec<&Record> = recs
                .iter()
                .copied()
                .filter(|r| r.reuse != "again")
                .collect();
            let owned: Vec<Record> = recs.iter().map(|r| (*r).clone()).collect();
            let ops = distinct(&owned, |r| r.op.clone());
            let grid = (ops.len(), 2);
            panels(
                &dir.join("zero.svg"),
                (1400, 520 * ops.len() as u32),
                grid,
                |i, a| {
                    let (op, d) = (&ops[i / 2], ["hot", "clean"][i % 2]);
                    let sel: Vec<&Record> = recs
                        .iter()
                        .copied()
                        .filter(|r| &r.op == op && r.dst == d)
                        .collect();
                    lines(
                        a,
                        &format!("{op}, dst {d}"),
                        "size",
                        "GB/s",
                        &by_method_vs_size(&sel, |r| r.gbps),
                        true,
                        false,
                    )
                },
            )?;
            files.push("zero.svg".into());
        }
        Experiment::Alignment => {
            let groups = [
                ("dst_offset", "hot"),
                ("dst_offset", "clean"),
                ("distance_mod_4k", "hot"),
            ];
            panels(&dir.join("alignment.svg"), (1500, 480), (1, 3), |i, a| {
                let (sw, st) = groups[i];
                let sel: Vec<Record> = recs
                    .iter()
                    .filter(|r| r.dst == st && r.extra_str("sweep") == sw)
                    .map(|r| (*r).clone())
                    .collect();
                let series: Vec<Series> = distinct(&sel, |r| r.method.clone())
                    .into_iter()
                    .map(|m| Series {
                        points: sel
                            .iter()
                            .filter(|r| r.method == m)
                            .map(|r| (r.extra_f64("dst_offset").unwrap_or(0.0), r.gbps))
                            .collect(),
                        name: m,
                    })
                    .collect();
                let title = if sw == "dst_offset" {
                    format!("dst offset, {st}→{st}")
                } else {
                    "dst−src mod 4 KiB, hot→hot".to_string()
                };
                lines(a, &title, "bytes", "GB/s", &series, false, false)
            })?;
            files.push("alignment.svg".into());
        }
        Experiment::Pollution => {
            let owned: Vec<Record> = recs.iter().map(|r| (*r).clone()).collect();
            let methods = distinct(&owned, |r| r.method.clone());
            let cols: Vec<(usize, usize)> = distinct(&owned, |r| {
                (r.extra_f64("app_ws").unwrap_or(0.0) as usize, r.size)
            });
            let labels: Vec<String> = cols
                .iter()
                .map(|(w, n)| format!("{}/{}", fmt_size(*w), fmt_size(*n)))
                .collect();
            let find = |m: &str, c: &(usize, usize)| {
                owned.iter().find(|r| {
                    r.method == m && r.size == c.1 && r.extra_f64("app_ws") == Some(c.0 as f64)
                })
            };
            ratio_or_absolute_map(
                &dir.join("pollution.svg"),
                (
                    "pollution: libc's working-set re-read time / the method's, after the copy (ws / copy size)",
                    "pollution: extra µs to re-read the working set (ws / copy size)",
                ),
                &methods,
                &cols,
                &labels,
                &find,
                &|l, r| {
                    vs_libc(
                        l,
                        r,
                        &|x| extra_samples(x, "app_read_samples_ns"),
                        &|x| x.extra_f64("app_read_ns"),
                    )
                },
                (
                    &|r| r.extra_f64("app_extra_ns").map(|v| (v / 1000.0).max(0.01)),
                    false,
                ),
            )?;
            files.push("pollution.svg".into());
        }
        Experiment::Fleet => {
            let owned: Vec<Record> = recs.iter().map(|r| (*r).clone()).collect();
            let methods = distinct(&owned, |r| r.method.clone());
            let text = |r: &Record, k: &str| r.extra_str(k).to_string();
            let cols: Vec<(String, String)> =
                distinct(&owned, |r| (text(r, "workload"), text(r, "working_set")));
            let labels: Vec<String> = cols
                .iter()
                .map(|(w, s)| format!("{} {s}", w.replace("_Fleet", "").replace("Mem", "")))
                .collect();
            let find = |m: &str, c: &(String, String)| {
                owned.iter().find(|r| {
                    r.method == m && text(r, "workload") == c.0 && text(r, "working_set") == c.1
                })
            };
            ratio_or_absolute_map(
                &dir.join("fleet.svg"),
                (
                    "fleet: libc time / method time per workload",
                    "fleet: ns per call (lower is better)",
                ),
                &methods,
                &cols,
                &labels,
                &find,
                &|l, r| vs_libc(l, r, &|x| x.samples_ns.clone(), &|x| Some(x.summary.median)),
                (&|r| r.extra_f64("ns_per_call"), false),
            )?;
            files.push("fleet.svg".into());
        }
        Experiment::Kernel => files.extend(super::experiments::kernel::plot(&recs, dir)?),
        Experiment::Threads => {
            if let Some(f) = threads_scaling(&recs, dir)? {
                files.push(f);
            }
        }
        // Tables only: the grid and the probe figures read best as numbers.
        Experiment::Policy
        | Experiment::Probe
        | Experiment::Doors
        | Experiment::Neighbour
        | Experiment::Contention => {}
    }
    Ok(files)
}

/// `threads-scaling.svg`: per op and size, aggregate GB/s against the thread count,
/// one line per method. `None` when the run has no scaling records.
fn threads_scaling(recs: &[&Record], dir: &Path) -> Result<Option<String>> {
    use super::experiments::threads::SCALING;
    let owned: Vec<Record> = recs
        .iter()
        .filter(|r| r.extra_str("part") == SCALING)
        .map(|r| (*r).clone())
        .collect();
    let cells = distinct(&owned, |r| (r.op.clone(), r.size));
    if cells.is_empty() {
        return Ok(None);
    }
    let sizes = distinct(&owned, |r| r.size).len();
    let rows = cells.len().div_ceil(sizes);
    let file = "threads-scaling.svg";
    panels(
        &dir.join(file),
        (520 * sizes as u32, 420 * rows as u32),
        (rows, sizes),
        |i, a| {
            let Some((op, n)) = cells.get(i) else {
                return Ok(());
            };
            let sel: Vec<&Record> = owned
                .iter()
                .filter(|r| &r.op == op && r.size == *n)
                .collect();
            let series: Vec<Series> = distinct(&owned, |r| r.method.clone())
                .into_iter()
                .map(|m| Series {
                    points: sel
                        .iter()
                        .filter(|r| r.method == m)
                        .map(|r| (r.extra_f64("threads").unwrap_or(0.0), r.gbps))
                        .collect(),
                    name: m,
                })
                .collect();
            lines(
                a,
                &format!("{op} {} per thread", fmt_size(*n)),
                "threads",
                "aggregate GB/s",
                &series,
                false,
                false,
            )
        },
    )?;
    Ok(Some(file.into()))
}

/// Width of the headline chart (SVG user units).
const CHART_W: f64 = 1100.0;
/// Height of one op's panel.
const PANEL_H: f64 = 250.0;

/// The headline chart: per op, `auto`'s ratio to libc in every cell, sorted by size
/// (categorical x, the sizes marked below), log y, a line at 1 and a dashed one at
/// [`SLOW`]; a point is blue at or above 1, orange down to [`SLOW`], red below, with
/// its 95% interval as a whisker and its cell's name as a tooltip. A standalone SVG
/// document that also inlines into HTML. Empty when the summary has no op.
pub fn ratio_chart(h: &Headline) -> String {
    if h.ops.is_empty() {
        return String::new();
    }
    let height = PANEL_H * h.ops.len() as f64 + 30.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=ratio-chart viewBox=\"0 0 {CHART_W} {height}\" \
         width=\"{CHART_W}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\" \
         aria-label=\"auto's ratio to libc in every cell, by size\">"
    );
    s.push_str("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    for (i, o) in h.ops.iter().enumerate() {
        panel(&mut s, o, PANEL_H * i as f64);
    }
    let y = height - 12.0;
    let key = [
        (FAST_INK, "auto at least as fast as libc"),
        (NEAR_INK, &*format!("slower, down to {SLOW:.2}×")),
        (SLOW_INK, &*format!("below {SLOW:.2}×")),
    ];
    let mut x = 60.0;
    for (ink, text) in key {
        let _ = write!(
            s,
            "<circle cx=\"{x}\" cy=\"{}\" r=\"4\" fill=\"{ink}\"/><text x=\"{}\" y=\"{y}\">{}</text>",
            y - 4.0,
            x + 8.0,
            esc(text)
        );
        x += 8.0 + 7.0 * text.chars().count() as f64 + 24.0;
    }
    let _ = write!(
        s,
        "<text x=\"{x}\" y=\"{y}\" fill=\"#555\">whiskers: 95% intervals; hover a point for its cell</text></svg>"
    );
    s
}

const FAST_INK: &str = "#2166ac";
const NEAR_INK: &str = "#e08214";
const SLOW_INK: &str = "#b2182b";

fn ink(r: f64) -> &'static str {
    if r >= 1.0 {
        FAST_INK
    } else if r >= SLOW {
        NEAR_INK
    } else {
        SLOW_INK
    }
}

/// Ticks of a log ratio axis between `lo` and `hi`, at least 14 units apart.
fn ratio_ticks(lo: f64, hi: f64, y: &dyn Fn(f64) -> f64) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for t in [
        0.125, 0.25, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 8.0, 16.0,
    ] {
        if t < lo || t > hi {
            continue;
        }
        if t == 1.0 || out.last().is_none_or(|&p| (y(p) - y(t)).abs() >= 14.0) {
            if t == 1.0 && out.last().is_some_and(|&p| (y(p) - y(t)).abs() < 14.0) {
                out.pop();
            }
            out.push(t);
        }
    }
    out
}

/// One op's panel at vertical offset `top`.
fn panel(s: &mut String, o: &OpSummary, top: f64) {
    let (left, right, head, foot) = (60.0, 44.0, 30.0, 44.0);
    let (pw, ph) = (CHART_W - left - right, PANEL_H - head - foot);
    let n = o.cells.len().max(1);
    let bounds = o.cells.iter().flat_map(|c| {
        let (lo, hi) = c.ci.unwrap_or((c.ratio, c.ratio));
        [c.ratio, lo, hi]
    });
    let (mut lo, mut hi) = bounds
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((0.8f64, 1.25f64), |(a, b), v| (a.min(v), b.max(v)));
    lo /= 1.05;
    hi *= 1.05;
    let y = |r: f64| top + head + ph * (hi.ln() - r.clamp(lo, hi).ln()) / (hi.ln() - lo.ln());
    let x = |i: usize| left + pw * (i as f64 + 0.5) / n as f64;
    let _ = write!(
        s,
        "<text x=\"{left}\" y=\"{}\" font-size=\"14\" font-weight=\"bold\">{}: auto against libc in each of {} cells, by size — geometric mean {:.2}×</text>",
        top + 18.0,
        esc(&o.op),
        o.cells.len(),
        o.geomean
    );
    let _ = write!(
        s,
        "<rect x=\"{left}\" y=\"{}\" width=\"{pw}\" height=\"{ph}\" fill=\"#fafafa\" stroke=\"#ccc\"/>",
        top + head
    );
    for t in ratio_ticks(lo, hi, &y) {
        let _ = write!(
            s,
            "<line x1=\"{}\" x2=\"{left}\" y1=\"{yt:.1}\" y2=\"{yt:.1}\" stroke=\"#999\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 4.0,
            left - 6.0,
            y(t) + 4.0,
            tick_label(t),
            yt = y(t)
        );
    }
    let _ = write!(
        s,
        "<text transform=\"translate(14 {:.1}) rotate(-90)\" text-anchor=\"middle\">libc time / auto time</text>",
        top + head + ph / 2.0
    );
    // Size groups: a faint line between them, and a label under the first cell of
    // as many as fit, round sizes (whole KiB) first.
    let mut groups: Vec<(f64, String)> = Vec::new();
    for (i, c) in o.cells.iter().enumerate() {
        let label = fmt_size(c.size.round() as usize);
        if groups.last().is_some_and(|g| g.1 == label) {
            continue;
        }
        let xb = left + pw * i as f64 / n as f64;
        if i > 0 {
            let _ = write!(
                s,
                "<line x1=\"{xb:.1}\" x2=\"{xb:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"#e4e4e4\"/>",
                top + head,
                top + head + ph
            );
        }
        groups.push((xb, label));
    }
    let round = |g: &(f64, String)| g.1.ends_with("iB") && !g.1.contains('.');
    let mut placed: Vec<f64> = Vec::new();
    for g in groups
        .iter()
        .filter(|g| round(g))
        .chain(groups.iter().filter(|g| !round(g)))
    {
        if placed.iter().all(|p| (p - g.0).abs() >= 46.0) {
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{}\">{}</text>",
                g.0 + 2.0,
                top + head + ph + 14.0,
                esc(&g.1)
            );
            placed.push(g.0);
        }
    }
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">cells sorted by size (bytes per call; fleet workloads at their mean)</text>",
        left + pw / 2.0,
        top + head + ph + 30.0
    );
    let _ = write!(
        s,
        "<line x1=\"{left}\" x2=\"{}\" y1=\"{y1:.1}\" y2=\"{y1:.1}\" stroke=\"#333\" stroke-width=\"1.2\"/>\
         <line x1=\"{left}\" x2=\"{}\" y1=\"{ys:.1}\" y2=\"{ys:.1}\" stroke=\"{SLOW_INK}\" stroke-dasharray=\"4 3\" opacity=\"0.7\"/>\
         <text x=\"{}\" y=\"{:.1}\" fill=\"{SLOW_INK}\">{SLOW:.2}×</text>",
        left + pw,
        left + pw,
        left + pw + 4.0,
        y(SLOW) + 4.0,
        y1 = y(1.0),
        ys = y(SLOW),
    );
    let r = if n > 300 { 2.0 } else { 3.0 };
    for (i, c) in o.cells.iter().enumerate() {
        let (xi, col) = (x(i), ink(c.ratio));
        let ci =
            c.ci.map_or(String::new(), |(a, b)| format!(" (95%: {a:.2}–{b:.2})"));
        let _ = write!(
            s,
            "<g class=cell><title>{}: {:.2}×{}</title>",
            esc(&c.cell),
            c.ratio,
            ci
        );
        if let Some((a, b)) = c.ci {
            let _ = write!(
                s,
                "<line x1=\"{xi:.1}\" x2=\"{xi:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{col}\" opacity=\"0.35\"/>",
                y(a),
                y(b)
            );
        }
        let _ = write!(
            s,
            "<circle cx=\"{xi:.1}\" cy=\"{:.1}\" r=\"{r}\" fill=\"{col}\"/></g>",
            y(c.ratio)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::summary::{summarize, tests as synthetic};

    #[test]
    fn the_diverging_scale_is_white_at_one_and_symmetric() {
        assert_eq!(diverging(1.0, 2.0), RGBColor(247, 247, 247));
        assert_eq!(diverging(2.0, 2.0), RGBColor(33, 102, 172));
        assert_eq!(diverging(0.25, 2.0), RGBColor(178, 24, 43));
        assert!((diverging_t(1.5, 4.0) + diverging_t(1.0 / 1.5, 4.0)).abs() < 1e-12);
        // The range holds every value, at least 1.25, at most 8.
        assert_eq!(ratio_range([1.01, 0.99].into_iter()), 1.25);
        assert_eq!(ratio_range([1.3, 0.6].into_iter()), 2.0);
        assert_eq!(ratio_range([0.05].into_iter()), 8.0);
        assert_eq!(legend_ticks(2.0), [0.5, 1.0 / 1.5, 1.0, 1.5, 2.0]);
        assert_eq!(tick_label(0.125), "0.125×");
        assert_eq!(tick_label(1.0), "1×");
        assert_eq!(tick_label(1.0 / 1.5), "0.667×");
    }

    #[test]
    fn heat_maps_show_ratios_to_libc_with_a_legend() {
        let d = tempfile::tempdir().unwrap();
        let st = |s, d| (s, d, "none");
        let recs = vec![
            synthetic::rec(
                "temperature",
                "libc",
                "copy",
                4096,
                st("hot", "hot"),
                &[100.0; 3],
            ),
            synthetic::rec(
                "temperature",
                "auto",
                "copy",
                4096,
                st("hot", "hot"),
                &[50.0; 3],
            ),
            synthetic::rec(
                "temperature",
                "libc",
                "copy",
                4096,
                st("hot", "clean"),
                &[100.0; 3],
            ),
            synthetic::rec(
                "temperature",
                "auto",
                "copy",
                4096,
                st("hot", "clean"),
                &[125.0; 3],
            ),
        ];
        let files = plot(Experiment::Temperature, &recs, d.path()).unwrap();
        assert_eq!(files, ["temperature-4KiB.svg"]);
        let svg = std::fs::read_to_string(d.path().join(&files[0])).unwrap();
        assert!(svg.contains("libc time / method time"));
        assert!(svg.contains("2.00×") && svg.contains("0.80×"), "{svg}");
        assert!(svg.contains("slower than libc") && svg.contains("faster than libc"));
        // libc is the reference, not a row of 1.00×.
        assert!(!svg.contains(">libc<"));
        // Without libc: absolute GB/s, no ratio legend.
        let no_libc: Vec<Record> = recs.into_iter().filter(|r| r.method != "libc").collect();
        plot(Experiment::Temperature, &no_libc, d.path()).unwrap();
        let svg = std::fs::read_to_string(d.path().join(&files[0])).unwrap();
        assert!(svg.contains("GB/s") && !svg.contains("slower than libc"));
    }

    #[test]
    fn the_ratio_chart_has_a_point_per_cell_named_in_its_tooltip() {
        let st = ("hot", "hot", "none");
        let recs = vec![
            synthetic::rec("sizes", "libc", "copy", 4096, st, &[100.0; 3]),
            synthetic::rec("sizes", "auto", "copy", 4096, st, &[50.0; 3]),
            synthetic::rec("sizes", "libc", "copy", 1 << 20, st, &[100.0; 3]),
            synthetic::rec("sizes", "auto", "copy", 1 << 20, st, &[125.0; 3]),
        ];
        let svg = ratio_chart(&summarize(&synthetic::host(), &recs));
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert_eq!(svg.matches("<g class=cell>").count(), 2);
        assert!(
            svg.contains("<title>sizes: 4 KiB hot→hot, no reuse: 2.00× (95%: 2.00–2.00)</title>")
        );
        // Colours: faster blue, below 0.95 red; labels for both sizes; the 1× line.
        assert!(
            svg.contains(&format!("fill=\"{FAST_INK}\""))
                && svg.contains(&format!("fill=\"{SLOW_INK}\""))
        );
        assert!(svg.contains(">4 KiB<") && svg.contains(">1 MiB<") && svg.contains(">1×<"));
        assert!(ratio_chart(&summarize(&synthetic::host(), &[])).is_empty());
    }
}
