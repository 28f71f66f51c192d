//! When a search may take a second thread: only when a core would otherwise idle.
//!
//! A large user's scan splits its rows over two threads, and a recall runs its lexical
//! search beside the dense one. Alone on the machine that halves the wait. Under load it
//! does not: every core already runs some recall, a second thread only queues behind
//! them, and starting and ending it costs the process a thread's stack mapping and, on
//! exit, a TLB shootdown on the other cores (a profile of 32 clients on two cores put
//! thread starts and exits at about 4 % of all CPU time). So the searches count
//! themselves while they run ([`working`]), and a search splits only while fewer are
//! running than the machine has cores ([`spare_core`]).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

static WORKING: AtomicUsize = AtomicUsize::new(0);

/// The cores this process may use, asked once (on Linux the answer reads the cgroup's
/// quota files, a few system calls that showed in a recall's profile).
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Counts one search (or one of its threads) as running until dropped.
#[must_use = "the search counts as running only while this is held"]
pub struct Working(());

impl Drop for Working {
    fn drop(&mut self) {
        WORKING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counts the caller as running a search until the returned guard is dropped.
pub fn working() -> Working {
    WORKING.fetch_add(1, Ordering::Relaxed);
    Working(())
}

/// Whether a running search may start a second thread: fewer threads count as running
/// searches than there are cores. (Racy by design: two searches that ask at once may both
/// split, which costs what splitting always cost.)
pub fn spare_core() -> bool {
    WORKING.load(Ordering::Relaxed) < cores()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With as many searches counted as there are cores, no core is spare. (The count is
    /// process-wide and other tests may run searches meanwhile, so only what holds
    /// whatever they do is asserted.)
    #[test]
    fn no_core_is_spare_while_every_core_runs_a_search() {
        let guards: Vec<Working> = (0..cores()).map(|_| working()).collect();
        assert!(WORKING.load(Ordering::Relaxed) >= cores());
        assert!(!spare_core());
        drop(guards);
    }
}
