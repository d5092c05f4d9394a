//! The CPUs this process may run on, pinning a thread to one of them, and what sysfs
//! says of their topology (SMT siblings, the last-level cache), for the experiments
//! that run threads side by side (`neighbour`, `threads`).

/// The CPUs this process may run on (its affinity mask), ascending.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a plain bit set the call fills; pid 0 is this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pins the calling thread to `cpu`; returns its previous mask to restore.
pub fn pin(cpu: usize) -> Option<libc::cpu_set_t> {
    // SAFETY: as in `allowed_cpus`; the sets are plain bit sets.
    unsafe {
        let mut old: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut old) != 0 {
            return None;
        }
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        (libc::sched_setaffinity(0, size, &one) == 0).then_some(old)
    }
}

/// Gives the calling thread back the mask [`pin`] returned.
pub fn restore(old: &libc::cpu_set_t) {
    // SAFETY: `old` came from `sched_getaffinity`.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), old) };
}

/// A sysfs file of `cpu`, trimmed (`None` where the kernel does not provide it, as in
/// some containers).
fn sysfs(cpu: usize, file: &str) -> Option<String> {
    std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/{file}"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Parses a sysfs CPU list (`0-3,8,10-11`).
pub fn parse_list(s: &str) -> Vec<usize> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    v.extend(a..=b);
                }
            }
            None => v.extend(part.parse::<usize>().ok()),
        }
    }
    v
}

/// The SMT siblings of `cpu` (itself included), from
/// `topology/thread_siblings_list`; `None` when sysfs does not say.
pub fn siblings(cpu: usize) -> Option<Vec<usize>> {
    sysfs(cpu, "topology/thread_siblings_list").map(|s| parse_list(&s))
}

/// The size sysfs gives for `cpu`'s highest cache level (`36608K`), if any.
pub fn llc_sysfs(cpu: usize) -> Option<String> {
    (0..8)
        .rev()
        .find_map(|i| sysfs(cpu, &format!("cache/index{i}/size")))
}

/// One line on the CPUs used: their numbers, which of them share a core (SMT
/// siblings, as sysfs says), and the LLC (sysfs's size, and the lab's effective one).
pub fn topology_line(cpus: &[usize], llc_effective: usize) -> String {
    let mut pairs: Vec<String> = Vec::new();
    let mut known = true;
    for &c in cpus {
        match siblings(c) {
            Some(s) => {
                let mine: Vec<usize> = s.into_iter().filter(|x| cpus.contains(x)).collect();
                if mine.len() > 1 && mine[0] == c {
                    pairs.push(
                        mine.iter()
                            .map(usize::to_string)
                            .collect::<Vec<_>>()
                            .join("+"),
                    );
                }
            }
            None => known = false,
        }
    }
    let smt = match (known, pairs.is_empty()) {
        (false, _) => "SMT siblings unknown (no sysfs topology)".to_string(),
        (true, true) => "no two of them SMT siblings".to_string(),
        (true, false) => format!("SMT siblings {}", pairs.join(", ")),
    };
    let list = cpus
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",");
    format!(
        "CPUs {list} ({smt}); LLC {} per sysfs, {} effective",
        cpus.first()
            .and_then(|&c| llc_sysfs(c))
            .unwrap_or_else(|| "unknown".into()),
        super::experiments::fmt_size(llc_effective)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_ranges_and_singles() {
        assert_eq!(parse_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_list("5"), vec![5]);
        assert_eq!(parse_list(""), Vec::<usize>::new());
    }

    #[test]
    fn this_process_may_run_somewhere() {
        assert!(!allowed_cpus().is_empty());
    }
}
