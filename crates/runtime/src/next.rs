//! Which queued runs to try to claim next: a pure rule over the queue and the
//! limits, so it can be tested without a database or a clock. The database
//! claim still has the last word (a pause or a claim elsewhere makes it fail);
//! this only decides what is worth trying.

use std::collections::HashMap;

/// A queued run, in queue order (oldest first).
#[derive(Debug, Clone, Copy)]
pub struct Queued<'a> {
    pub run_id: &'a str,
    pub agent_id: &'a str,
}

/// What limits the start of runs right now.
#[derive(Debug, Clone, Copy)]
pub struct Capacity<'a> {
    /// Runs already running per agent; a missing agent has none.
    pub running: &'a HashMap<String, u32>,
    /// Each agent's `maxConcurrentRuns`; an agent missing here starts nothing
    /// (its limit is unknown, e.g. it could not be loaded).
    pub max_concurrent: &'a HashMap<String, u32>,
    /// Free slots across all agents, if the installation caps them.
    pub global_free: Option<usize>,
}

/// The runs to claim, in queue order: each agent gets at most its free
/// slots, the oldest of its runs first, and the total stays within the
/// global cap. A run of an agent that is full does not hold back a later run
/// of another agent.
pub fn runs_to_start<'a>(queue: &[Queued<'a>], capacity: &Capacity<'_>) -> Vec<&'a str> {
    let mut started: HashMap<&str, u32> = HashMap::new();
    let mut out = Vec::new();
    for q in queue {
        if capacity.global_free.is_some_and(|free| out.len() >= free) {
            break;
        }
        let Some(&max) = capacity.max_concurrent.get(q.agent_id) else {
            continue;
        };
        let running = capacity.running.get(q.agent_id).copied().unwrap_or(0);
        let now = started.entry(q.agent_id).or_insert(0);
        if running + *now >= max {
            continue;
        }
        *now += 1;
        out.push(q.run_id);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q<'a>(run_id: &'a str, agent_id: &'a str) -> Queued<'a> {
        Queued { run_id, agent_id }
    }

    fn map(pairs: &[(&str, u32)]) -> HashMap<String, u32> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn one_run_per_agent_by_default_oldest_first() {
        let queue = [q("r1", "a"), q("r2", "a"), q("r3", "b")];
        let max = map(&[("a", 1), ("b", 1)]);
        let running = map(&[]);
        let cap = Capacity {
            running: &running,
            max_concurrent: &max,
            global_free: None,
        };
        assert_eq!(runs_to_start(&queue, &cap), ["r1", "r3"]);
    }

    #[test]
    fn running_runs_use_up_slots() {
        let queue = [q("r1", "a"), q("r2", "a"), q("r3", "a"), q("r4", "b")];
        let max = map(&[("a", 3), ("b", 1)]);
        let running = map(&[("a", 1), ("b", 1)]);
        let cap = Capacity {
            running: &running,
            max_concurrent: &max,
            global_free: None,
        };
        assert_eq!(runs_to_start(&queue, &cap), ["r1", "r2"]);
    }

    #[test]
    fn a_full_agent_does_not_block_others() {
        let queue = [q("r1", "a"), q("r2", "b")];
        let max = map(&[("a", 1), ("b", 2)]);
        let running = map(&[("a", 1)]);
        let cap = Capacity {
            running: &running,
            max_concurrent: &max,
            global_free: None,
        };
        assert_eq!(runs_to_start(&queue, &cap), ["r2"]);
    }

    #[test]
    fn the_global_cap_takes_the_oldest() {
        let queue = [q("r1", "a"), q("r2", "b"), q("r3", "c")];
        let max = map(&[("a", 1), ("b", 1), ("c", 1)]);
        let running = map(&[]);
        let cap = Capacity {
            running: &running,
            max_concurrent: &max,
            global_free: Some(2),
        };
        assert_eq!(runs_to_start(&queue, &cap), ["r1", "r2"]);
        let none = Capacity {
            global_free: Some(0),
            ..cap
        };
        assert!(runs_to_start(&queue, &none).is_empty());
    }

    #[test]
    fn an_agent_without_a_known_limit_starts_nothing() {
        let queue = [q("r1", "ghost"), q("r2", "a")];
        let max = map(&[("a", 1)]);
        let running = map(&[]);
        let cap = Capacity {
            running: &running,
            max_concurrent: &max,
            global_free: None,
        };
        assert_eq!(runs_to_start(&queue, &cap), ["r2"]);
    }

    #[test]
    fn a_zero_limit_or_an_overfull_agent_starts_nothing() {
        let queue = [q("r1", "a"), q("r2", "b")];
        let max = map(&[("a", 0), ("b", 1)]);
        let running = map(&[("b", 4)]);
        let cap = Capacity {
            running: &running,
            max_concurrent: &max,
            global_free: None,
        };
        assert!(runs_to_start(&queue, &cap).is_empty());
    }
}
