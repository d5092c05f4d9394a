//! Tables (terminal and HTML) and the `index.html` report. The page leads with the
//! answer — `auto` against `libc` per op ([`super::summary`]) and its chart — then the
//! warnings by kind, every experiment (one that has no results says why), the data
//! files and the host.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::summary::Headline;
use super::warn::{Group, Kind};

/// A titled table of strings.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// Heading.
    pub title: String,
    /// One line under the heading: units, what the ratio means.
    pub note: String,
    /// Column headings.
    pub header: Vec<String>,
    /// Rows (same length as the header).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with a title, a note and a header.
    pub fn new(title: impl Into<String>, note: impl Into<String>, header: Vec<String>) -> Table {
        Table {
            title: title.into(),
            note: note.into(),
            header,
            rows: Vec::new(),
        }
    }

    /// Fixed-width text: first column left-aligned, the rest right-aligned.
    pub fn to_text(&self) -> String {
        let cols = self.header.len();
        let mut w = vec![0usize; cols];
        for row in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in row.iter().enumerate().take(cols) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let mut s = String::new();
        let _ = writeln!(s, "== {}", self.title);
        if !self.note.is_empty() {
            let _ = writeln!(s, "   {}", self.note);
        }
        for (ri, row) in std::iter::once(&self.header).chain(&self.rows).enumerate() {
            let mut line = String::new();
            for (i, c) in row.iter().enumerate().take(cols) {
                let pad = w[i] - c.chars().count();
                if i == 0 {
                    line.push_str(c);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str("  ");
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                }
            }
            let _ = writeln!(s, "{}", line.trim_end());
            if ri == 0 {
                let _ = writeln!(
                    s,
                    "{}",
                    "-".repeat(w.iter().sum::<usize>() + 2 * (cols - 1))
                );
            }
        }
        s
    }

    /// An HTML `<table>` with its heading.
    pub fn to_html(&self) -> String {
        let mut s = String::new();
        let _ = write!(s, "<h3>{}</h3>", esc(&self.title));
        if !self.note.is_empty() {
            let _ = write!(s, "<p class=note>{}</p>", esc(&self.note));
        }
        s.push_str("<table><thead><tr>");
        for h in &self.header {
            let _ = write!(s, "<th>{}</th>", esc(h));
        }
        s.push_str("</tr></thead><tbody>");
        for r in &self.rows {
            s.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let _ = write!(
                    s,
                    "{}{}{}",
                    if i == 0 { "<th>" } else { "<td>" },
                    esc(c),
                    if i == 0 { "</th>" } else { "</td>" }
                );
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>");
        s
    }
}

/// HTML-escapes text.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One experiment's section of the report.
pub struct Section {
    /// Experiment name.
    pub name: String,
    /// What it reproduces.
    pub about: String,
    /// Its tables.
    pub tables: Vec<Table>,
    /// SVG files (relative to the report directory).
    pub plots: Vec<String>,
    /// Why it has no results, when it has none (it was skipped, or no method named
    /// implements its op).
    pub missing: Option<String>,
}

/// Everything `index.html` shows.
pub struct Page<'a> {
    /// The run's `host` object.
    pub host: &'a Value,
    /// The answer the page leads with.
    pub headline: &'a Headline,
    /// The headline chart (inline SVG; empty without cells).
    pub chart: &'a str,
    /// One per experiment asked for.
    pub sections: &'a [Section],
    /// Warnings by kind.
    pub warnings: &'a [Group],
    /// Data files beside the page.
    pub files: &'a [String],
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px;color:#222}\
    h1{margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}\
    table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}\
    td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\
    thead th{background:#eee}tbody th{text-align:left;background:#fafafa}\
    table.headline{font-size:14px}table.headline td{vertical-align:top}table.headline th{text-align:left}\
    table.headline td.cell,table.headline td.streams{text-align:left;max-width:22em}\
    table.headline td.cell span{display:block;color:#444;font-size:12px}\
    .big{font-size:22px;font-weight:bold}.fast{color:#2166ac}.near{color:#b35806}.slow{color:#b2182b}\
    .note{color:#555;font-size:13px;margin:0}.host{font-size:15px}.warn{color:#8a4b00}.err{color:#b00}\
    .missing{color:#8a4b00;font-style:italic}.wide{overflow-x:auto}\
    details{margin:.3em 0}details summary{cursor:pointer}details ul{font-size:13px;margin:.3em 0}\
    img{max-width:100%;border:1px solid #ddd;margin:.3em 0}svg.ratio-chart{max-width:100%;height:auto;border:1px solid #ddd}\
    pre{background:#f6f6f6;padding:.5em;overflow:auto}";

/// Writes `dir/index.html`: the headline (auto against libc, per op, and its chart),
/// warnings by kind, then every experiment, the data files and the host.
pub fn write_html(dir: &Path, page: &Page<'_>) -> anyhow::Result<()> {
    let host = page.host;
    let mut s = String::new();
    let cpu = host["cpu"]["brand"].as_str().unwrap_or("?");
    let _ = write!(
        s,
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>blockmem lab: {}</title>\
         <style>{STYLE}</style></head><body><h1>blockmem lab</h1>",
        esc(cpu)
    );
    s.push_str(&host_html(host));
    s.push_str("<section id=headline><h2>The answer: auto against libc</h2>");
    s.push_str(&page.headline.to_html());
    if !page.chart.is_empty() {
        s.push_str("<div class=chart>");
        s.push_str(page.chart);
        s.push_str("</div>");
        s.push_str("<h3>By experiment</h3>");
        s.push_str(&page.headline.experiments_html());
    }
    s.push_str("</section>");
    s.push_str(&warnings_html(page.warnings));
    s.push_str("<section id=contents><h2>Experiments</h2><ul>");
    for sec in page.sections {
        let _ = write!(
            s,
            "<li><a href=\"#{0}\">{0}</a> — {1}{2}</li>",
            esc(&sec.name),
            esc(&sec.about),
            if sec.missing.is_some() {
                " <span class=missing>(no results)</span>"
            } else {
                ""
            }
        );
    }
    s.push_str("</ul></section>");
    for sec in page.sections {
        s.push_str(&section_html(sec));
    }
    s.push_str("<section id=data><h2>Data</h2><p>");
    if page.files.is_empty() {
        s.push_str("No data files were written beside this page.");
    }
    for f in page.files {
        let _ = write!(s, "<a href=\"{0}\">{0}</a> ", esc(f));
    }
    let _ = write!(
        s,
        "</p></section><section id=host><h2>Host</h2><details><summary>the run's host \
         description, options and decision table (JSON)</summary><pre>{}</pre></details>\
         </section></body></html>",
        esc(&serde_json::to_string_pretty(host)?)
    );
    std::fs::write(dir.join("index.html"), s)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", dir.join("index.html").display()))
}

/// The line under the title: CPU, caches, timer, libc, counters.
fn host_html(host: &Value) -> String {
    let cpu = host["cpu"]["brand"].as_str().unwrap_or("?");
    let hier = &host["hierarchy"];
    let sz = |v: &Value| super::experiments::fmt_size(v.as_u64().unwrap_or(0) as usize);
    format!(
        "<p class=note><b>{}</b>{} — L1d {}, L2 {}, LLC {} as CPUID reports it, <b>{} effective</b> ({}); \
         TSC {:.3} GHz{}; libc: {}; {}</p>",
        esc(cpu),
        host["cpus"]
            .as_u64()
            .map_or(String::new(), |n| format!(", {n} CPUs")),
        sz(&hier["l1d"]),
        sz(&hier["l2"]),
        sz(&hier["llc_reported"]),
        sz(&hier["llc_effective"]),
        esc(hier["llc_source"].as_str().unwrap_or("")),
        host["timer"]["ticks_per_ns"].as_f64().unwrap_or(0.0),
        if host["timer"]["drain_stores"].as_bool() == Some(false) {
            ", samples end at the call's last instruction, its stores possibly still buffered (<code>--no-drain-stores</code>)"
        } else {
            ", every sample includes the drain of its stores"
        },
        esc(host["libc"].as_str().unwrap_or("?")),
        esc(host["perf"]["detail"].as_str().unwrap_or("")),
    )
}

/// Warnings by kind: a heading with the count, the instances folded under it.
fn warnings_html(groups: &[Group]) -> String {
    let mut s = String::from("<section id=warnings><h2>Warnings</h2>");
    if groups.is_empty() {
        s.push_str("<p>None: every cell verified, every state as asked, the machine steady.</p>");
    }
    for g in groups {
        let class = if g.kind == Kind::WrongResult {
            "err"
        } else {
            "warn"
        };
        let _ = write!(
            s,
            "<details class={class}><summary><b>{}</b> ({})</summary><ul>",
            esc(&g.heading),
            g.details.len()
        );
        for d in &g.details {
            let _ = write!(s, "<li>{}</li>", esc(d));
        }
        s.push_str("</ul></details>");
    }
    s.push_str("</section>");
    s
}

/// One experiment: plots and tables, or why there are none.
fn section_html(sec: &Section) -> String {
    let mut s = format!(
        "<section class=experiment id=\"{0}\"><h2>{0}</h2><p>{1}</p>",
        esc(&sec.name),
        esc(&sec.about)
    );
    let missing = match &sec.missing {
        Some(why) => Some(why.as_str()),
        None if sec.plots.is_empty() && sec.tables.is_empty() => {
            Some("the experiment produced no tables or plots")
        }
        None => None,
    };
    if let Some(why) = missing {
        let _ = write!(s, "<p class=missing>No results: {}</p>", esc(why));
    }
    for p in &sec.plots {
        let _ = write!(s, "<div><img src=\"{0}\" alt=\"{0}\"></div>", esc(p));
    }
    for t in &sec.tables {
        // A wide table scrolls on its own instead of widening the page.
        s.push_str("<div class=wide>");
        s.push_str(&t.to_html());
        s.push_str("</div>");
    }
    s.push_str("</section>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_table_aligns_columns() {
        let mut t = Table::new("T", "note", vec!["method".into(), "ns".into()]);
        t.rows.push(vec!["libc".into(), "5".into()]);
        t.rows.push(vec!["avx2_nt".into(), "12345".into()]);
        let s = t.to_text();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "== T");
        assert_eq!(lines[2], "method      ns");
        assert_eq!(lines[4], "libc         5");
        assert_eq!(lines[5], "avx2_nt  12345");
    }

    #[test]
    fn html_escapes() {
        let mut t = Table::new("a<b", "", vec!["x".into()]);
        t.rows.push(vec!["<script>".into()]);
        let h = t.to_html();
        assert!(h.contains("a&lt;b") && h.contains("&lt;script&gt;") && !h.contains("<script>"));
    }
}
