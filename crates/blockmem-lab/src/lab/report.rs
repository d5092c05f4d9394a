//! Tables (terminal and HTML) and the `index.html` report.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

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
}

/// Writes `dir/index.html`: host, warnings, every section with tables and plots, and
/// links to the machine-readable files.
pub fn write_html(
    dir: &Path,
    host: &Value,
    sections: &[Section],
    warnings: &[String],
    files: &[String],
) -> anyhow::Result<()> {
    let mut s = String::new();
    s.push_str(
        "<!doctype html><html><head><meta charset=utf-8><title>blockmem lab</title><style>\
         body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}\
         table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}\
         td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\
         thead th{background:#eee}tbody th{text-align:left;background:#fafafa}\
         .note{color:#555;font-size:13px;margin:0}.warn{color:#8a4b00}.err{color:#b00}\
         img{max-width:100%;border:1px solid #ddd;margin:.3em 0}pre{background:#f6f6f6;padding:.5em;overflow:auto}\
         </style></head><body><h1>blockmem lab</h1>",
    );
    let cpu = host["cpu"]["brand"].as_str().unwrap_or("?");
    let hier = &host["hierarchy"];
    let sz = |v: &Value| super::experiments::fmt_size(v.as_u64().unwrap_or(0) as usize);
    let _ = write!(
        s,
        "<p><b>{}</b> — L1d {}, L2 {}, LLC {} as CPUID reports it, <b>{} effective</b> ({}); \
         TSC {:.3} GHz{}; libc: {}; {}</p>",
        esc(cpu),
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
    );
    if !files.is_empty() {
        s.push_str("<p>Data: ");
        for f in files {
            let _ = write!(s, "<a href=\"{0}\">{0}</a> ", esc(f));
        }
        s.push_str("</p>");
    }
    if !warnings.is_empty() {
        s.push_str("<h2>Warnings</h2><ul>");
        for w in warnings {
            let class = if w.starts_with("WRONG") {
                "err"
            } else {
                "warn"
            };
            let _ = write!(s, "<li class={class}>{}</li>", esc(w));
        }
        s.push_str("</ul>");
    }
    s.push_str("<h2>Contents</h2><ul>");
    for sec in sections {
        let _ = write!(
            s,
            "<li><a href=\"#{0}\">{0}</a> — {1}</li>",
            esc(&sec.name),
            esc(&sec.about)
        );
    }
    s.push_str("</ul>");
    for sec in sections {
        let _ = write!(
            s,
            "<h2 id=\"{0}\">{0}</h2><p>{1}</p>",
            esc(&sec.name),
            esc(&sec.about)
        );
        for p in &sec.plots {
            let _ = write!(s, "<div><img src=\"{0}\" alt=\"{0}\"></div>", esc(p));
        }
        for t in &sec.tables {
            s.push_str(&t.to_html());
        }
    }
    let _ = write!(
        s,
        "<h2>Host</h2><pre>{}</pre></body></html>",
        esc(&serde_json::to_string_pretty(host)?)
    );
    std::fs::write(dir.join("index.html"), s)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", dir.join("index.html").display()))
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
