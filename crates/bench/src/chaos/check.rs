//! The invariants, checked from the database (opened directly, not through
//! the API under test) and from the agents' own logs. Each finding is a
//! sentence naming the invariant and the ids, so a failure is evidence.

use super::data::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use super::agents::{read_log, AgentLog};
use super::driver::{Acked, Agent};
use super::{agent_log, proc};

#[derive(Debug, Default)]
pub struct Figures {
    pub wakes: usize,
    pub runs: usize,
    pub started_runs: usize,
    pub killed_by_restart: usize,
    pub logged_runs: usize,
    pub comments: usize,
    /// (comment, agent) wakes delivered to a run.
    pub deliveries: usize,
    /// Comment wakes whose run was cancelled before it started (a cancel, a
    /// pause, a budget stop) or that were skipped (agent paused).
    pub dropped_by_stop: usize,
    /// Comment wakes whose expected set could be decided (no reassignment
    /// of the task around the comment's time).
    pub comments_with_known_assignee: usize,
    /// Most processes of one agent seen running at once (agent logs): over
    /// 1 shows that `maxConcurrentRuns` was exercised, not just respected.
    pub peak_parallel: usize,
    /// Done or cancelled tasks still naming a finished run as their checkout.
    pub stale_checkouts: usize,
}

type Found = Vec<String>;

pub async fn all(
    db: &Db,
    agents: &[Agent],
    acked: &Acked,
    data_dir: &Path,
) -> anyhow::Result<(Figures, Found)> {
    let data = load(db).await?;
    let logs: BTreeMap<String, AgentLog> = agents
        .iter()
        .map(|a| (a.id.clone(), read_log(&agent_log(data_dir, &a.name))))
        .collect();
    let mut f = Figures {
        wakes: data.wakes.len(),
        runs: data.runs.len(),
        started_runs: data.runs.values().filter(|r| r.started.is_some()).count(),
        killed_by_restart: data
            .runs
            .values()
            .filter(|r| r.error_code.as_deref() == Some("control_plane_restart"))
            .count(),
        logged_runs: logs.values().map(|l| l.runs.len()).sum(),
        comments: data.comments.len(),
        ..Figures::default()
    };
    let mut found = Vec::new();
    for (agent, log) in &logs {
        for line in &log.bad_lines {
            found.push(format!("agent {agent} log: unreadable line {line:?}"));
        }
    }
    wakes_accounted(&data, &mut found);
    ran_once(&data, &logs, &mut found);
    f.peak_parallel = concurrency(&data, &logs, agents, &mut found);
    super::comments::check(&data, &logs, &mut f, &mut found);
    checkouts(&data, &mut f, &mut found);
    orphans(&data, &logs, &mut found);
    acknowledged(&data, &logs, acked, &mut found);
    Ok((f, found))
}

/// Invariant 1: Every wake request ends in a final status that says what became of it
/// and agrees with its run.
fn wakes_accounted(data: &Data, found: &mut Found) {
    for r in data.runs.values().filter(|r| r.status == "queued") {
        found.push(format!(
            "invariant 1: run {} is still queued after the drain; its agent {} is {:?}",
            r.id,
            r.agent,
            data.agent_status.get(&r.agent)
        ));
    }
    for w in &data.wakes {
        let run = w.run.as_ref().and_then(|r| data.runs.get(r));
        let what = format!(
            "invariant 1: wake request {} of agent {} ({})",
            w.id, w.agent, w.status
        );
        match (w.status.as_str(), run) {
            ("skipped", None) if w.skip_reason.is_some() => {}
            ("skipped", _) => found.push(format!("{what}: skipped without a reason or with a run")),
            ("queued" | "claimed", _) => found.push(format!("{what}: not final after the drain")),
            (_, None) => found.push(format!("{what}: no run (run_id {:?})", w.run)),
            (status, Some(r)) => {
                let agrees = match status {
                    "coalesced" => true,
                    "completed" => r.status == "succeeded",
                    "failed" => r.status == "failed" || r.status == "timed_out",
                    "cancelled" => r.status == "cancelled",
                    _ => false,
                };
                if r.status == "queued" || r.status == "running" {
                    found.push(format!("{what}: its run {} is still {}", r.id, r.status));
                } else if !agrees {
                    found.push(format!(
                        "{what}: disagrees with its run {} ({}, error {:?}, started {})",
                        r.id,
                        r.status,
                        r.error_code,
                        r.started.is_some()
                    ));
                }
            }
        }
    }
}

/// Invariant 2: No wake ran twice: each started run started one process at most, and
/// belongs to one wake request that names it.
fn ran_once(data: &Data, logs: &BTreeMap<String, AgentLog>, found: &mut Found) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (agent, log) in logs {
        for (run, logged) in &log.runs {
            *seen.entry(run).or_default() += logged.starts;
            match data.runs.get(run) {
                Some(r) if r.agent == *agent && r.started.is_some() => {}
                _ => found.push(format!(
                    "invariant 2: agent {agent} executed run {run}, which the database does not show as its started run"
                )),
            }
        }
    }
    for (run, n) in seen {
        if n > 1 {
            found.push(format!("invariant 2: run {run} executed {n} times"));
        }
    }
    let mut by_wake: HashMap<&str, Vec<&str>> = HashMap::new();
    for r in data.runs.values().filter(|r| r.started.is_some()) {
        match &r.wake {
            Some(w) => by_wake.entry(w).or_default().push(&r.id),
            None => found.push(format!(
                "invariant 2: started run {} has no wake request",
                r.id
            )),
        }
    }
    let wake_run: HashMap<&str, Option<&str>> = data
        .wakes
        .iter()
        .map(|w| (w.id.as_str(), w.run.as_deref()))
        .collect();
    for (wake, runs) in by_wake {
        if runs.len() > 1 {
            found.push(format!(
                "invariant 2: wake request {wake} started runs {runs:?}"
            ));
        }
        if wake_run.get(wake).copied().flatten() != Some(runs[0]) {
            found.push(format!(
                "invariant 2: run {} names wake request {wake}, which names run {:?}",
                runs[0],
                wake_run.get(wake)
            ));
        }
    }
}

/// Invariant 3: At most `maxConcurrentRuns` runs of an agent at any instant, from the
/// database's started/finished times and from the processes' own clocks.
fn concurrency(
    data: &Data,
    logs: &BTreeMap<String, AgentLog>,
    agents: &[Agent],
    found: &mut Found,
) -> usize {
    let mut most = 0;
    for agent in agents {
        let db: Vec<(i128, i128, &str)> = data
            .runs
            .values()
            .filter(|r| r.agent == agent.id)
            .filter_map(|r| {
                Some((
                    r.started? as i128,
                    r.finished.map_or(i128::MAX, i128::from),
                    r.id.as_str(),
                ))
            })
            .collect();
        peak(&db, agent, "database", found);
        let Some(log) = logs.get(&agent.id) else {
            continue;
        };
        // A killed process wrote no end; its run's recorded end comes after
        // its death (the stop or the restart recovery kills first).
        let procs: Vec<(i128, i128, &str)> = log
            .runs
            .iter()
            .map(|(id, l)| {
                let recorded = data
                    .runs
                    .get(id)
                    .and_then(|r| r.finished)
                    .map(|ms| ms as i128 * 1_000_000);
                (
                    l.start_ns,
                    l.end_ns.or(recorded).unwrap_or(i128::MAX),
                    id.as_str(),
                )
            })
            .collect();
        most = most.max(peak(&procs, agent, "agent log", found));
    }
    most
}

fn peak(intervals: &[(i128, i128, &str)], agent: &Agent, source: &str, found: &mut Found) -> usize {
    // Ends sort before starts at the same instant: back-to-back is not overlap.
    let mut edges: Vec<(i128, i32, &str)> = Vec::new();
    for (start, end, id) in intervals {
        edges.push((*start, 1, id));
        edges.push((*end, -1, id));
    }
    edges.sort();
    let mut live: BTreeSet<&str> = BTreeSet::new();
    let mut most = 0;
    for (at, d, id) in edges {
        if d < 0 {
            live.remove(id);
            continue;
        }
        live.insert(id);
        most = most.max(live.len());
        if live.len() > agent.max_concurrent as usize {
            found.push(format!(
                "invariant 3 ({source}): agent {} ({}) ran {} runs at once (max {}) at {at}: {live:?}",
                agent.name,
                agent.id,
                live.len(),
                agent.max_concurrent
            ));
        }
    }
    most
}

/// Invariant 5: No task held by a dead run: an open task's checkout and execution
/// locks name a queued or running run, or nothing. A closed task keeping the
/// finished run that closed it is counted, not flagged: nothing waits on it.
fn checkouts(data: &Data, f: &mut Figures, found: &mut Found) {
    for (issue, status, checkout, execution) in &data.issues {
        let mut dead = Vec::new();
        for (lock, run) in [("checkout", checkout), ("execution", execution)] {
            let Some(run) = run else { continue };
            let r = data.runs.get(run);
            if r.is_some_and(|r| r.status == "queued" || r.status == "running") {
                continue;
            }
            let (rs, code) = r.map_or(("missing", None), |r| {
                (r.status.as_str(), r.error_code.as_deref())
            });
            dead.push(format!("{lock} run {run} is {rs} (error {code:?})"));
        }
        if dead.is_empty() {
            continue;
        }
        if status == "done" || status == "cancelled" {
            f.stale_checkouts += 1;
        } else {
            found.push(format!(
                "invariant 5: {status} task {issue} is held by a dead run: {}",
                dead.join("; ")
            ));
        }
    }
}

/// Invariant 6: Nothing of any run outlives the test: no process carries one of this
/// company's run markers, and no script pid from the logs is that script.
fn orphans(data: &Data, logs: &BTreeMap<String, AgentLog>, found: &mut Found) {
    for (pid, entry) in proc::live_with_env("PAPERCLIP_PROCESS_TREE=") {
        let value = entry.split_once('=').map_or("", |(_, v)| v);
        let run = value.split('/').next().unwrap_or_default();
        if data.runs.contains_key(run) {
            found.push(format!(
                "invariant 6: pid {pid} of run {run} is still alive ({entry})"
            ));
        }
    }
    for log in logs.values() {
        for (run, l) in &log.runs {
            if proc::alive_with_env(l.pid, &format!("PAPERCLIP_RUN_ID={run}")) {
                found.push(format!(
                    "invariant 6: script pid {} of run {run} is still alive",
                    l.pid
                ));
            }
        }
    }
}

/// Invariant 7: Every write the server acknowledged is in the database.
fn acknowledged(data: &Data, logs: &BTreeMap<String, AgentLog>, acked: &Acked, found: &mut Found) {
    let issues: BTreeSet<&str> = data.issues.iter().map(|i| i.0.as_str()).collect();
    let comments: HashMap<&str, &Comment> =
        data.comments.iter().map(|c| (c.id.as_str(), c)).collect();
    let wakes: BTreeSet<&str> = data.wakes.iter().map(|w| w.id.as_str()).collect();
    for id in &acked.issues {
        if !issues.contains(id.as_str()) {
            found.push(format!("invariant 7: acknowledged task {id} is missing"));
        }
    }
    for id in &acked.comments {
        if !comments.contains_key(id.as_str()) {
            found.push(format!(
                "invariant 7: acknowledged board comment {id} is missing"
            ));
        }
    }
    for id in &acked.wake_requests {
        if !wakes.contains(id.as_str()) {
            found.push(format!(
                "invariant 7: acknowledged wake request {id} is missing"
            ));
        }
    }
    for (agent, log) in logs {
        for (run, id) in &log.acked_comments {
            match comments.get(id.as_str()) {
                Some(c) if c.author.as_deref() == Some(agent) && c.run.as_deref() == Some(run) => {}
                Some(_) => found.push(format!(
                    "invariant 7: comment {id} acknowledged to run {run} of {agent} has another author or run"
                )),
                None => found.push(format!(
                    "invariant 7: comment {id} acknowledged to run {run} of {agent} is missing"
                )),
            }
        }
    }
}
