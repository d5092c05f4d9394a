//! The one progress factory. On a terminal: an indicatif bar on stderr. Elsewhere (a
//! log file, CI, `| tee`): a plain line every [`LINE_EVERY`] — title, how far, time
//! elapsed and left — from a ticker thread, so a long experiment never goes silent and
//! a log never fills with bar redraws. With `--quiet`: nothing.

use std::io::IsTerminal;
use std::ops::Deref;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a plain progress line is printed when stderr is not a terminal.
pub const LINE_EVERY: Duration = Duration::from_secs(10);

/// Progress of one task: an indicatif bar (drawn or hidden) that the caller advances,
/// plus, when stderr is not a terminal, the ticker printing its plain lines. Derefs to
/// the bar; dropping it stops the ticker.
pub struct Progress {
    bar: ProgressBar,
    ticker: Option<Ticker>,
}

impl Deref for Progress {
    type Target = ProgressBar;
    fn deref(&self) -> &ProgressBar {
        &self.bar
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(t) = self.ticker.take() {
            t.stop();
        }
    }
}

/// A progress of `len` steps of `unit` (e.g. "cell passes") titled `title`: a bar on
/// a terminal, plain lines every [`LINE_EVERY`] elsewhere, nothing when `hidden`.
pub fn bar(len: u64, title: &str, unit: &'static str, hidden: bool) -> Progress {
    let terminal = std::io::stderr().is_terminal();
    let bar = ProgressBar::with_draw_target(
        Some(len),
        if hidden || !terminal {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        },
    );
    bar.set_style(
        ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} {elapsed_precise} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(title.to_string());
    let ticker = (!hidden && !terminal).then(|| Ticker::spawn(bar.clone(), unit, LINE_EVERY));
    Progress { bar, ticker }
}

/// When the next plain line is due: every `every` from the start, on a fixed cadence
/// (a late wake-up does not push the later lines back), restarting from `now` after a
/// stall longer than `every`. Time comes in as an argument, so it is tested without a
/// clock.
#[derive(Clone, Copy, Debug)]
pub struct Throttle {
    every: Duration,
    next: Instant,
}

impl Throttle {
    /// The first line is due `every` after `start`.
    pub fn new(start: Instant, every: Duration) -> Throttle {
        Throttle {
            every,
            next: start + every,
        }
    }

    /// True if a line is due at `now` (the next one is then scheduled).
    pub fn due(&mut self, now: Instant) -> bool {
        if now < self.next {
            return false;
        }
        self.next += self.every;
        if self.next <= now {
            self.next = now + self.every;
        }
        true
    }

    /// When the next line is due.
    pub fn next(&self) -> Instant {
        self.next
    }
}

/// `1h02m`, `2m05s`, `42s`.
fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// One plain progress line: `blockmem: policy copy: 37% (1234/3360 cell passes), 2m10s
/// elapsed, about 3m40s left; 64 MiB`.
pub fn line(
    title: &str,
    (pos, len): (u64, u64),
    unit: &str,
    elapsed: Duration,
    left: Option<Duration>,
    msg: &str,
) -> String {
    let pct = (100 * pos.min(len))
        .checked_div(len)
        .map_or("?".into(), |p| p.to_string());
    let mut s = format!(
        "blockmem: {title}: {pct}% ({pos}/{len} {unit}), {} elapsed",
        fmt_duration(elapsed)
    );
    if let Some(l) = left.filter(|_| pos > 0 && pos < len) {
        s.push_str(&format!(", about {} left", fmt_duration(l)));
    }
    if !msg.is_empty() {
        s.push_str("; ");
        s.push_str(msg);
    }
    s
}

/// The thread that prints a bar's plain lines until stopped or the bar finishes.
struct Ticker {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: Option<JoinHandle<()>>,
}

impl Ticker {
    fn spawn(bar: ProgressBar, unit: &'static str, every: Duration) -> Ticker {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("blockmem-progress".into())
            .spawn(move || {
                let (lock, cv) = &*flag;
                let mut throttle = Throttle::new(Instant::now(), every);
                let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
                while !*stopped && !bar.is_finished() {
                    let now = Instant::now();
                    if throttle.due(now) {
                        eprintln!(
                            "{}",
                            line(
                                &bar.prefix(),
                                (bar.position(), bar.length().unwrap_or(0)),
                                unit,
                                bar.elapsed(),
                                Some(bar.eta()),
                                &bar.message(),
                            )
                        );
                    }
                    let wait = throttle.next().saturating_duration_since(now);
                    stopped = cv
                        .wait_timeout(stopped, wait)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            })
            .ok();
        Ticker { stop, handle }
    }

    fn stop(mut self) {
        let (lock, cv) = &*self.stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_due_every_period_on_a_fixed_cadence() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut th = Throttle::new(t0, s(10));
        assert!(!th.due(t0));
        assert!(!th.due(t0 + s(9)));
        assert!(th.due(t0 + s(10)));
        assert!(!th.due(t0 + s(10)));
        // A late wake-up (at 21 s) keeps the cadence: the next is at 30 s, not 31 s.
        assert!(!th.due(t0 + s(19)));
        assert!(th.due(t0 + s(21)));
        assert_eq!(th.next(), t0 + s(30));
        // After a stall of several periods: one line, then every 10 s from there.
        assert!(th.due(t0 + s(75)));
        assert_eq!(th.next(), t0 + s(85));
        assert!(!th.due(t0 + s(84)));
    }

    #[test]
    fn simulated_ticks_never_leave_more_than_a_period_between_lines() {
        // A ticker woken every 700 ms (early, late, whenever) prints at most one line
        // per period and never goes more than a period and one wake-up without one.
        let t0 = Instant::now();
        let every = Duration::from_secs(10);
        let mut th = Throttle::new(t0, every);
        let mut printed = vec![t0];
        for i in 1..400u32 {
            let now = t0 + Duration::from_millis(700) * i;
            if th.due(now) {
                printed.push(now);
            }
        }
        for w in printed.windows(2) {
            let gap = w[1] - w[0];
            assert!(gap >= every - Duration::from_millis(700), "{gap:?}");
            assert!(gap <= every + Duration::from_millis(700), "{gap:?}");
        }
        assert!(printed.len() >= 27, "{}", printed.len());
    }

    #[test]
    fn a_line_names_the_task_how_far_and_how_long() {
        let s = Duration::from_secs;
        assert_eq!(
            line("policy copy", (1234, 3360), "cell passes", s(130), Some(s(220)), "64 MiB"),
            "blockmem: policy copy: 36% (1234/3360 cell passes), 2m10s elapsed, about 3m40s left; 64 MiB"
        );
        assert_eq!(
            line("fleet", (0, 8), "workload passes", s(3), Some(s(0)), ""),
            "blockmem: fleet: 0% (0/8 workload passes), 3s elapsed"
        );
        assert_eq!(fmt_duration(s(3725)), "1h02m");
    }

    #[test]
    fn hidden_progress_has_no_ticker() {
        let p = bar(10, "t", "steps", true);
        assert!(p.ticker.is_none());
        p.inc(3);
        assert_eq!(p.position(), 3);
    }
}
