//! Invariant 4: comments reach whom they concern, exactly once.
//!
//! The rule (store `comments::insert`): a comment wakes every agent it
//! @mentions (by url key or lower-cased name) and the task's assignee,
//! except the agent that wrote it, once per agent; on a task that is done
//! or cancelled and stays so it wakes none of them, and its activity row
//! names them (`notWoken`). Each such wake either is skipped (agent
//! paused), or lands in a queued run of that agent and task (new or
//! folded); that run's `commentIds` carries the comment. So a comment wake
//! is delivered to exactly the run its request names once that run starts,
//! to no other run, and to none if the run was cancelled before it started.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::agents::AgentLog;
use super::check::Figures;
use super::data::{Comment, Data};

/// An assignment this close to a comment may have committed on either side
/// of it, so the assignee the comment saw is not known from outside.
const UNSURE_MS: i64 = 2_000;

pub(super) fn check(
    data: &Data,
    logs: &BTreeMap<String, AgentLog>,
    f: &mut Figures,
    found: &mut Vec<String>,
) {
    // (comment, agent) -> its wake requests.
    let mut wakes: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (i, w) in data.wakes.iter().enumerate() {
        if let Some(c) = &w.comment {
            wakes
                .entry((c.as_str(), w.agent.as_str()))
                .or_default()
                .push(i);
        }
    }
    // (comment, agent) -> started runs of that agent handed the comment.
    let mut handed: HashMap<(&str, &str), Vec<&str>> = HashMap::new();
    for r in data.runs.values().filter(|r| r.started.is_some()) {
        for c in &r.comments {
            handed
                .entry((c.as_str(), r.agent.as_str()))
                .or_default()
                .push(&r.id);
        }
    }
    // (comment, agent) -> runs whose process was handed it, per the logs.
    let mut logged: HashMap<(&str, &str), Vec<&str>> = HashMap::new();
    for (agent, log) in logs {
        for (run, l) in &log.runs {
            for c in &l.comment_ids {
                logged
                    .entry((c.as_str(), agent.as_str()))
                    .or_default()
                    .push(run);
            }
        }
    }

    for c in &data.comments {
        let woken: BTreeSet<&str> = data
            .wakes
            .iter()
            .filter(|w| w.comment.as_deref() == Some(&c.id))
            .map(|w| w.agent.as_str())
            .collect();
        let (must, may) = concerned(data, c);
        f.comments_with_known_assignee += usize::from(assignee_at(data, c).is_some());
        for a in must.difference(&woken) {
            found.push(format!(
                "invariant 4: comment {} on {} did not wake agent {a}, which it concerns ({:?})",
                c.id, c.issue, c.body
            ));
        }
        for a in woken.difference(&may) {
            found.push(format!("invariant 4: comment {} on {} woke agent {a}, which it does not concern ({:?}, author {:?})", c.id, c.issue, c.body, c.author));
        }
        for a in &woken {
            let what = format!("invariant 4: comment {} for agent {a}", c.id);
            let requests = &wakes[&(c.id.as_str(), *a)];
            if requests.len() > 1 {
                found.push(format!("{what}: {} wake requests", requests.len()));
            }
            let w = &data.wakes[requests[0]];
            let runs = handed
                .get(&(c.id.as_str(), *a))
                .cloned()
                .unwrap_or_default();
            let procs = logged
                .get(&(c.id.as_str(), *a))
                .cloned()
                .unwrap_or_default();
            let target = w.run.as_ref().and_then(|r| data.runs.get(r));
            match target {
                Some(r) if w.status != "skipped" && r.started.is_some() => {
                    f.deliveries += 1;
                    if runs != [r.id.as_str()] {
                        found.push(format!("{what}: its wake names run {}, but the started runs handed it are {runs:?}", r.id));
                    }
                    if procs.iter().any(|p| *p != r.id) {
                        found.push(format!(
                            "{what}: processes of runs {procs:?} were handed it, not only run {}",
                            r.id
                        ));
                    }
                    let ran = logs.get(*a).and_then(|l| l.runs.get(&r.id));
                    if ran.is_some_and(|l| !l.comment_ids.contains(&c.id)) {
                        found.push(format!(
                            "{what}: run {} ran without it in PAPERCLIP_WAKE_COMMENT_IDS",
                            r.id
                        ));
                    }
                    // "Later" by the process's clock, not `started_at`: on
                    // Postgres a claim stamps `started_at` before it waits on
                    // the row lock of a fold that it then includes.
                    if ran.is_some_and(|l| l.start_ns < i128::from(c.created) * 1_000_000) {
                        found.push(format!(
                            "{what}: run {} started its process before the comment was written",
                            r.id
                        ));
                    }
                }
                _ => {
                    f.dropped_by_stop += 1;
                    if !runs.is_empty() || !procs.is_empty() {
                        found.push(format!("{what}: its wake {} ({}) never started a run, yet runs {runs:?} / processes {procs:?} were handed it", w.id, w.status));
                    }
                }
            }
        }
    }
    for ((c, a), runs) in &handed {
        if !wakes.contains_key(&(*c, *a)) {
            found.push(format!("invariant 4: runs {runs:?} of agent {a} were handed comment {c} without a wake for it"));
        }
    }
}

/// Agents the comment must wake (mentioned, and the assignee when known)
/// and may wake (mentioned, or assignee of the task at some time).
fn concerned<'a>(data: &'a Data, c: &Comment) -> (BTreeSet<&'a str>, BTreeSet<&'a str>) {
    let author = c.author.as_deref();
    let mut must: BTreeSet<&str> = paperclip_core::naming::mentioned_tokens(&c.body)
        .iter()
        .filter_map(|t| data.tokens.get(t).map(String::as_str))
        .collect();
    let mut may = must.clone();
    if let Some(a) = assignee_at(data, c) {
        must.insert(a);
    }
    for (_, a) in data.assignments.get(&c.issue).into_iter().flatten() {
        if let Some(a) = a {
            may.insert(a);
        }
    }
    if let Some(author) = author {
        must.remove(author);
        may.remove(author);
    }
    // Closed work that stays closed wakes nobody; waking one of these anyway
    // is a violation.
    for a in data.not_woken.get(&c.id).into_iter().flatten() {
        must.remove(a.as_str());
        may.remove(a.as_str());
    }
    (must, may)
}

/// The task's assignee when the comment was written, if no assignment came
/// close enough in time to have committed on either side of it.
fn assignee_at<'a>(data: &'a Data, c: &Comment) -> Option<&'a str> {
    let history = data.assignments.get(&c.issue)?;
    if history
        .iter()
        .any(|(at, _)| (at - c.created).abs() < UNSURE_MS)
    {
        return None;
    }
    history
        .iter()
        .rev()
        .find(|(at, _)| *at < c.created)
        .and_then(|(_, a)| a.as_deref())
}
