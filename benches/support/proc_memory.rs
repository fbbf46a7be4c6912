//! Memory of a process, and of the tree under it, read from `/proc` (Linux):
//! the benches' one way to take an RSS figure.
//!
//! `VmHWM` is a process's own peak resident set (its high-water mark), so a
//! sample taken any time after the peak still sees it: only growth in the
//! last sampling interval before the process exits can be missed. A tree's
//! figure is the sum of the `VmHWM`s of the processes alive together in one
//! sample (the root and its descendants, found through
//! `/proc/<pid>/task/<tid>/children`), the largest such sum over the run.
//! That sum can overstate the tree's true simultaneous peak (each process's
//! peak may fall at a different moment), and a child that lives less than
//! one interval can be missed.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A `kB` field (`VmRSS:`, `VmHWM:` …) of a `/proc/<pid>/status` text.
pub fn status_kib(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with(field))?;
    line[field.len()..].split_whitespace().next()?.parse().ok()
}

/// The process's peak RSS so far; `None` once it has exited (a zombie has
/// no memory fields) or if it never existed.
pub fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status_kib(&status, "VmHWM:")
}

/// The process's name (`/proc/<pid>/comm`); empty if it is gone.
fn comm(pid: u32) -> String {
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    name.trim().to_string()
}

/// `root` and its live descendants, parents before children.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut tree = vec![root];
    let mut next = 0;
    while next < tree.len() {
        let pid = tree[next];
        next += 1;
        // Children are listed per thread: a child belongs to the thread
        // that forked it.
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let path = task.path().join("children");
            let Ok(children) = std::fs::read_to_string(path) else {
                continue;
            };
            tree.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    tree
}

/// Peak figures of a process tree, in KiB.
#[derive(Clone, Debug, Default)]
pub struct TreePeak {
    /// The largest `VmHWM` of any one process of the tree.
    pub largest_kib: u64,
    /// The largest sum of the `VmHWM`s of the processes alive in one sample.
    pub tree_kib: u64,
    /// Every process seen: pid, name (`/proc/<pid>/comm`) and the largest
    /// `VmHWM` read, in the order first seen.
    pub processes: Vec<(u32, String, u64)>,
}

/// Samples a process tree every `interval` on a thread of its own until
/// [`TreeSampler::stop`].
pub struct TreeSampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<TreePeak>,
}

impl TreeSampler {
    pub fn start(root: u32, interval: Duration) -> TreeSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut peak = TreePeak::default();
            // Each pid's last reading and where its entry is.
            let mut last: HashMap<u32, (u64, usize)> = HashMap::new();
            while !stopped.load(Ordering::Relaxed) {
                let mut sum = 0;
                for pid in process_tree(root) {
                    let Some(hwm) = vm_hwm_kib(pid) else { continue };
                    // Named again whenever its figure changes: after an exec
                    // the same pid is another program.
                    let at = match last.get(&pid) {
                        Some(&(before, at)) if before == hwm => at,
                        _ => {
                            let name = comm(pid);
                            let found = peak
                                .processes
                                .iter()
                                .position(|p| p.0 == pid && p.1 == name);
                            found.unwrap_or_else(|| {
                                peak.processes.push((pid, name, 0));
                                peak.processes.len() - 1
                            })
                        }
                    };
                    last.insert(pid, (hwm, at));
                    let seen = &mut peak.processes[at];
                    seen.2 = seen.2.max(hwm);
                    sum += hwm;
                    peak.largest_kib = peak.largest_kib.max(hwm);
                }
                peak.tree_kib = peak.tree_kib.max(sum);
                std::thread::sleep(interval);
            }
            peak
        });
        TreeSampler { stop, thread }
    }

    /// Stops sampling; the peaks seen.
    pub fn stop(self) -> TreePeak {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}
