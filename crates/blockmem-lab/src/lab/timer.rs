//! Cycle-accurate timing with `rdtscp`, the TSC frequency measured against the
//! monotonic clock, and the timer's own overhead measured so it can be subtracted.
//!
//! The measured region is fenced the usual way (Intel's "How to benchmark code
//! execution times" white paper): `lfence; rdtscp; lfence` before, `rdtscp; lfence`
//! after. `rdtscp` waits for every earlier instruction to execute, so the stop stamp
//! is taken after the operation's last load; stores may still sit in the store buffer,
//! exactly as they do for a real caller (non-temporal kernels end with `sfence`).
//!
//! That is the cost a caller sees when it goes on with other work, but a small copy to
//! a cold destination can end with most of its stores still waiting for their lines: a
//! kernel whose stores the buffer absorbs looks faster than one that pays inside the
//! call (a streaming kernel's `sfence`, or `avx512_pw`'s early fetches of the
//! destination). A timer built with
//! [`Timer::draining`] (`blockmem lab`, unless `--no-drain-stores`) puts an `mfence` before the
//! stop stamp, so every sample includes the time until all the call's stores are
//! globally visible: the cost a caller pays when it next fences, or fills the buffer.

use std::time::{Duration, Instant};

/// Reads the TSC after every earlier instruction has executed (and before later ones
/// start). Falls back to `Instant` (nanoseconds) on targets without a TSC.
#[inline(always)]
pub fn stamp() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{__rdtscp, _mm_lfence};
        let mut aux = 0u32;
        // SAFETY: `rdtscp` and `lfence` exist on every x86-64 CPU the lab supports
        // (the host check in `Timer::new` refuses to run without RDTSCP); they have no
        // memory operands.
        unsafe {
            _mm_lfence();
            let t = __rdtscp(&mut aux);
            _mm_lfence();
            t
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        static T0: OnceLock<Instant> = OnceLock::new();
        T0.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// Like [`stamp`], but first waits (`mfence`) until every earlier store is globally
/// visible: the stop stamp of a [`Timer::draining`] timer.
#[inline(always)]
pub fn stamp_drained() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `mfence` exists on every x86-64 CPU (SSE2 baseline) and has no operands.
    unsafe {
        core::arch::x86_64::_mm_mfence();
    }
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    stamp()
}

/// The clock the lab measures with.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Timer {
    /// TSC ticks per nanosecond (GHz), measured against `CLOCK_MONOTONIC`.
    pub ticks_per_ns: f64,
    /// Median ticks of an empty timed region, subtracted from every sample.
    pub overhead_ticks: f64,
    /// Spread (max/min) of the frequency estimates; close to 1 when the TSC is stable.
    pub freq_spread: f64,
    /// The stop stamp waits for the timed code's stores to drain ([`stamp_drained`]).
    pub drain_stores: bool,
}

impl Timer {
    /// Measures the TSC frequency (three windows of `window` each, median) and the
    /// overhead of an empty timed region.
    pub fn calibrate(window: Duration) -> Timer {
        let mut est: Vec<f64> = (0..3)
            .map(|_| {
                let (i0, t0) = (Instant::now(), stamp());
                while i0.elapsed() < window {
                    std::hint::spin_loop();
                }
                let (t1, i1) = (stamp(), Instant::now());
                (t1 - t0) as f64 / (i1 - i0).as_nanos() as f64
            })
            .collect();
        est.sort_by(f64::total_cmp);
        let freq_spread = est[2] / est[0];
        Timer {
            ticks_per_ns: est[1],
            overhead_ticks: overhead(stamp),
            freq_spread,
            drain_stores: false,
        }
    }

    /// The same clock with a stop stamp that waits for stores to drain (module docs),
    /// and the overhead of an empty region measured again with that stamp.
    pub fn draining(self) -> Timer {
        Timer {
            overhead_ticks: overhead(stamp_drained),
            drain_stores: true,
            ..self
        }
    }

    /// A timer for tests and for targets without a TSC: 1 tick = 1 ns, no overhead.
    pub fn nominal() -> Timer {
        Timer {
            ticks_per_ns: 1.0,
            overhead_ticks: 0.0,
            freq_spread: 1.0,
            drain_stores: false,
        }
    }

    /// Converts a raw tick delta to nanoseconds with the overhead removed (never
    /// negative).
    pub fn to_ns(&self, ticks: u64) -> f64 {
        ((ticks as f64 - self.overhead_ticks).max(0.0)) / self.ticks_per_ns
    }

    /// Times `f` once, in overhead-corrected nanoseconds.
    #[inline(always)]
    pub fn time<F: FnOnce()>(&self, f: F) -> f64 {
        let t0 = stamp();
        f();
        let t1 = if self.drain_stores {
            stamp_drained()
        } else {
            stamp()
        };
        self.to_ns(t1 - t0)
    }
}

/// Median ticks of an empty region between [`stamp`] and `stop`.
fn overhead(stop: fn() -> u64) -> f64 {
    let mut ov: Vec<u64> = (0..2001)
        .map(|_| {
            let a = stamp();
            let b = stop();
            b - a
        })
        .collect();
    ov.sort_unstable();
    ov[ov.len() / 2] as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_is_sane() {
        let t = Timer::calibrate(Duration::from_millis(5));
        assert!(t.ticks_per_ns > 0.05 && t.ticks_per_ns < 20.0, "{t:?}");
        assert!(t.overhead_ticks >= 0.0);
        assert_eq!(t.to_ns(0), 0.0, "overhead subtraction never goes negative");
    }

    #[test]
    fn a_draining_timer_keeps_the_clock_and_waits_for_stores() {
        let t = Timer::calibrate(Duration::from_millis(5));
        let d = t.draining();
        assert!(d.drain_stores && !t.drain_stores);
        assert_eq!(d.ticks_per_ns, t.ticks_per_ns);
        assert!(d.overhead_ticks >= 0.0);
        let mut buf = vec![0u8; 1 << 16];
        let ns = d.time(|| buf.iter_mut().for_each(|b| *b = 1));
        assert!(ns.is_finite() && ns >= 0.0);
        assert!(buf.iter().all(|&b| b == 1));
    }

    #[test]
    fn nominal_converts_one_to_one() {
        let t = Timer::nominal();
        assert_eq!(t.to_ns(1234), 1234.0);
    }
}
