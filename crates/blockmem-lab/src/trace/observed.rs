//! What became of destinations as the page traps saw them (the shim's `watch`
//! module, with the trace I/O library): per watched page, the first later access, by
//! a load, a store, the kernel or a block operation (seed 003 Table 3's reused /
//! unused / retargeted, with every access rather than block operations alone), and the
//! program's I/O by call site (seed 003 Table 1's kernel copy profile).

use serde::Serialize;

use super::format::{IoCount, PageFate, Watched};

/// The shim's watch window (`watch::WATCH_NS`): a page first touched later counts as
/// untouched.
pub const WATCH_WINDOW_MS: u64 = 20;

/// Watched pages by fate, over some calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Observed {
    /// Calls whose destination was watched.
    pub calls: u64,
    /// Pages by fate, in [`PageFate::ALL`] order.
    pub pages: [u64; 8],
    /// Sum of the first-access delays, ns, over the calls with one.
    pub first_ns: u64,
    /// Calls with an access.
    pub touched_calls: u64,
}

impl Observed {
    /// Adds one watched call.
    pub fn add(&mut self, w: &Watched) {
        self.calls += 1;
        for (p, &f) in self.pages.iter_mut().zip(&w.fates) {
            *p += u64::from(f);
        }
        if w.first_ns > 0 {
            self.first_ns = self.first_ns.saturating_add(w.first_ns);
            self.touched_calls += 1;
        }
    }

    /// Adds another set of counts.
    pub fn merge(&mut self, o: &Observed) {
        self.calls += o.calls;
        for (p, q) in self.pages.iter_mut().zip(&o.pages) {
            *p += q;
        }
        self.first_ns = self.first_ns.saturating_add(o.first_ns);
        self.touched_calls += o.touched_calls;
    }

    /// Pages watched.
    pub fn total(&self) -> u64 {
        self.pages.iter().sum()
    }

    /// Pages that met `f`.
    pub fn of(&self, f: PageFate) -> u64 {
        self.pages[f as usize]
    }

    /// Share of watched pages read again (by loads, the kernel or a block operation);
    /// None when nothing was watched.
    pub fn read_fraction(&self) -> Option<f64> {
        let t = self.total();
        (t > 0).then(|| {
            let read: u64 = PageFate::ALL
                .iter()
                .filter(|f| f.reads())
                .map(|&f| self.of(f))
                .sum();
            read as f64 / t as f64
        })
    }

    /// Mean delay from the call to the first access, µs (None: none accessed).
    pub fn mean_first_us(&self) -> Option<f64> {
        (self.touched_calls > 0).then(|| self.first_ns as f64 / self.touched_calls as f64 / 1e3)
    }
}

/// I/O calls of one kind, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IoTotals {
    /// Calls.
    pub calls: u64,
    /// Bytes transferred.
    pub bytes: u64,
    /// Bytes asked for.
    pub asked: u64,
    /// Calls that failed.
    pub errors: u64,
    /// TSC cycles in the calls.
    pub cycles: u64,
}

impl IoTotals {
    /// Adds one I/O block entry.
    pub fn add(&mut self, c: &IoCount) {
        self.calls += c.calls;
        self.bytes += c.bytes;
        self.asked += c.asked;
        self.errors += c.errors;
        self.cycles += c.cycles;
    }

    /// Adds another total.
    pub fn merge(&mut self, o: &IoTotals) {
        self.calls += o.calls;
        self.bytes += o.bytes;
        self.asked += o.asked;
        self.errors += o.errors;
        self.cycles += o.cycles;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::CallOp;

    fn watched(fates: [u32; 8], first_ns: u64) -> Watched {
        Watched {
            tsc: 0,
            dst: 0x1000,
            n: 1 << 20,
            site: 0,
            tid: 1,
            op: CallOp::Copy,
            pages: fates.iter().sum(),
            fates,
            first_ns,
        }
    }

    #[test]
    fn reads_by_loads_kernel_and_block_ops_count_as_read_again() {
        let mut o = Observed::default();
        o.add(&watched([4, 0, 0, 0, 0, 0, 0, 0], 1000));
        o.add(&watched([0, 0, 2, 0, 1, 1, 0, 0], 3000));
        o.add(&watched([0, 2, 0, 0, 0, 0, 1, 1], 0));
        assert_eq!(o.calls, 3);
        assert_eq!(o.total(), 12);
        assert_eq!(o.read_fraction(), Some(7.0 / 12.0));
        assert_eq!(o.mean_first_us(), Some(2.0));
        assert_eq!(Observed::default().read_fraction(), None);
    }
}
