//! Cycle-accurate timing with `rdtscp`, the TSC frequency measured against the
//! monotonic clock, and the timer's own overhead measured so it can be subtracted.
//!
//! The measured region is fenced the usual way (Intel's "How to benchmark code
//! execution times" white paper): `lfence; rdtscp; lfence` before, `rdtscp; lfence`
//! after. `rdtscp` waits for every earlier instruction to execute, so the stop stamp
//! is taken after the operation's last load; stores may still sit in the store buffer,
//! exactly as they do for a real caller (non-temporal kernels end with `sfence`).

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

/// The clock the lab measures with.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Timer {
    /// TSC ticks per nanosecond (GHz), measured against `CLOCK_MONOTONIC`.
    pub ticks_per_ns: f64,
    /// Median ticks of an empty timed region, subtracted from every sample.
    pub overhead_ticks: f64,
    /// Spread (max/min) of the frequency estimates; close to 1 when the TSC is stable.
    pub freq_spread: f64,
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
        let mut ov: Vec<u64> = (0..2001)
            .map(|_| {
                let a = stamp();
                let b = stamp();
                b - a
            })
            .collect();
        ov.sort_unstable();
        Timer {
            ticks_per_ns: est[1],
            overhead_ticks: ov[ov.len() / 2] as f64,
            freq_spread,
        }
    }

    /// A timer for tests and for targets without a TSC: 1 tick = 1 ns, no overhead.
    pub fn nominal() -> Timer {
        Timer {
            ticks_per_ns: 1.0,
            overhead_ticks: 0.0,
            freq_spread: 1.0,
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
        let t1 = stamp();
        self.to_ns(t1 - t0)
    }
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
    fn nominal_converts_one_to_one() {
        let t = Timer::nominal();
        assert_eq!(t.to_ns(1234), 1234.0);
    }
}
