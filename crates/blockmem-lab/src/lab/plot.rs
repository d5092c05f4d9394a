//! SVG plots with `plotters`: bandwidth / cycles-per-byte curves against size (one
//! panel per cache state, one line per method) and heat maps (the temperature matrix,
//! pollution, fleet).

use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::experiments::{distinct, fmt_size, Experiment};
use super::runner::Record;

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

/// A heat map: `values[row][col]`, colour by log(value) between the table's min and
/// max (green = good: high when `higher_better`, low otherwise), each cell labelled.
pub fn heatmap(
    path: &Path,
    title: &str,
    rows: &[String],
    cols: &[String],
    values: &[Vec<Option<f64>>],
    higher_better: bool,
    fmt: &dyn Fn(f64) -> String,
) -> Result<()> {
    let (cw, ch, left, top) = (96i32, 24i32, 110i32, 64i32);
    let w = (left + cw * cols.len() as i32 + 20) as u32;
    let h = (top + ch * rows.len() as i32 + 20) as u32;
    let root = SVGBackend::new(path, (w.max(400), h)).into_drawing_area();
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
            let (fill, label) = match v {
                Some(v) if v.is_finite() && *v > 0.0 => {
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
                    (RGBColor(r as u8, g.min(240.0) as u8, 100), fmt(*v))
                }
                _ => (RGBColor(235, 235, 235), "-".to_string()),
            };
            root.draw(&Rectangle::new(
                [(x, y), (x + cw - 2, y + ch - 2)],
                fill.filled(),
            ))
            .map_err(err)?;
            root.draw(&Text::new(label, (x + 6, y + 6), ("sans-serif", 12)))
                .map_err(err)?;
        }
    }
    root.present().map_err(err)?;
    Ok(())
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
            let cols: Vec<String> = states
                .iter()
                .flat_map(|s| states.iter().map(move |d| format!("{s}→{d}")))
                .collect();
            for n in distinct(&owned, |r| r.size) {
                let values: Vec<Vec<Option<f64>>> = methods
                    .iter()
                    .map(|m| {
                        cols.iter()
                            .map(|c| {
                                let (s, d) = c.split_once('→').expect("pair");
                                owned
                                    .iter()
                                    .find(|r| {
                                        &r.method == m && r.size == n && r.src == s && r.dst == d
                                    })
                                    .map(|r| r.gbps)
                            })
                            .collect()
                    })
                    .collect();
                let file = format!("temperature-{}.svg", fmt_size(n).replace(' ', ""));
                heatmap(
                    &dir.join(&file),
                    &format!("temperature: {} copy, GB/s (src→dst)", fmt_size(n)),
                    &methods,
                    &cols,
                    &values,
                    true,
                    &|v| format!("{v:.1}"),
                )?;
                files.push(file);
            }
        }
        Experiment::Reuse => {
            panels(&dir.join("reuse.svg"), (1400, 520), (1, 2), |i, a| {
                let s = ["hot", "clean"][i];
                let sel: Vec<&Record> = recs.iter().copied().filter(|r| r.src == s).collect();
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
                    .filter(|r| {
                        r.dst == st && r.extras.get("sweep").and_then(|v| v.as_str()) == Some(sw)
                    })
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
            let values: Vec<Vec<Option<f64>>> = methods
                .iter()
                .map(|m| {
                    cols.iter()
                        .map(|(w, n)| {
                            owned
                                .iter()
                                .find(|r| {
                                    &r.method == m
                                        && r.size == *n
                                        && r.extra_f64("app_ws") == Some(*w as f64)
                                })
                                .and_then(|r| r.extra_f64("app_extra_ns"))
                                .map(|v| (v / 1000.0).max(0.01))
                        })
                        .collect()
                })
                .collect();
            heatmap(
                &dir.join("pollution.svg"),
                "pollution: extra µs to re-read the working set (ws / copy size)",
                &methods,
                &labels,
                &values,
                false,
                &|v| format!("{v:.1}"),
            )?;
            files.push("pollution.svg".into());
        }
        Experiment::Fleet => {
            let owned: Vec<Record> = recs.iter().map(|r| (*r).clone()).collect();
            let methods = distinct(&owned, |r| r.method.clone());
            let cols: Vec<(String, String)> = distinct(&owned, |r| {
                (
                    r.extras
                        .get("workload")
                        .and_then(|v| v.as_str())
                        .unwrap_or("")
                        .to_string(),
                    r.extras
                        .get("working_set")
                        .and_then(|v| v.as_str())
                        .unwrap_or("")
                        .to_string(),
                )
            });
            let labels: Vec<String> = cols
                .iter()
                .map(|(w, s)| format!("{} {s}", w.replace("_Fleet", "").replace("Mem", "")))
                .collect();
            let values: Vec<Vec<Option<f64>>> = methods
                .iter()
                .map(|m| {
                    cols.iter()
                        .map(|(w, s)| {
                            owned
                                .iter()
                                .find(|r| {
                                    &r.method == m
                                        && r.extras.get("workload").and_then(|v| v.as_str())
                                            == Some(w)
                                        && r.extras.get("working_set").and_then(|v| v.as_str())
                                            == Some(s)
                                })
                                .and_then(|r| r.extra_f64("ns_per_call"))
                        })
                        .collect()
                })
                .collect();
            heatmap(
                &dir.join("fleet.svg"),
                "fleet: ns per call (lower is better)",
                &methods,
                &labels,
                &values,
                false,
                &|v| format!("{v:.1}"),
            )?;
            files.push("fleet.svg".into());
        }
        // Tables only: the grid and the probe figures read best as numbers.
        Experiment::Policy | Experiment::Probe => {}
    }
    Ok(files)
}
