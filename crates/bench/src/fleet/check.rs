//! The day's outcome, from the database (opened directly, not through the
//! instances under test), the agents' logs and the scripted provider: the
//! chaos invariants, runs lost / duplicated / left running, idle model
//! requests, and the takeover time of each killed instance's runs.

use std::collections::BTreeMap;
use std::path::Path;

use paperclip_scripted_provider::ScriptedProvider;

use super::day::Day;
use super::Kill;
use crate::chaos::agents::read_log;
use crate::chaos::Db;

#[derive(Debug, Default)]
pub struct Figures {
    pub chaos: crate::chaos::check::Figures,
    /// The chaos invariants' findings, each a sentence with the ids.
    pub violations: Vec<String>,
    /// Runs whose process did all its work and ended, but whose row says it
    /// did not succeed (failed by the other instance's restart, say).
    pub lost: Vec<String>,
    /// A run executed twice, or a wake that started two runs (invariant 2).
    pub duplicated: usize,
    /// Runs still queued or running after the drain.
    pub left_running: usize,
    pub runs_by_status: BTreeMap<String, i64>,
    pub skipped_by_reason: BTreeMap<String, i64>,
    pub routine_runs: i64,
    pub model_requests: usize,
    /// Model requests of runs that had no task, no comment and an empty inbox.
    pub idle_requests: usize,
    /// Those runs, with their wake's source and reason.
    pub idle_runs: Vec<String>,
    pub takeovers: Vec<Takeover>,
}

/// A run of a killed instance, and how it ended.
#[derive(Debug, Clone)]
pub struct Takeover {
    pub instance: String,
    pub run: String,
    pub status: String,
    pub error_code: Option<String>,
    /// From the kill to the run's `finished_at`; `None` if it never ended.
    pub after_ms: Option<i64>,
    /// Ended before the killed instance was back: the survivor did it.
    pub by_survivor: bool,
    /// Which kill (an index into the report's kills).
    pub kill: usize,
}

fn time(t: Option<&str>) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(t?)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// Runs that died with a killed instance, and which kill: those whose
/// processes the kill found, and those the database says the instance
/// owned (`owner_instance_id`) from before the kill until after it (a
/// process that exited as the host died is not in the first set).
async fn died_with_instance<'a>(
    db: &Db,
    runs: &BTreeMap<&'a str, &RunRow>,
    kills: &[Kill],
) -> BTreeMap<&'a str, usize> {
    let mut died = BTreeMap::new();
    for (k, kill) in kills.iter().enumerate() {
        for run in &kill.runs {
            if let Some((id, _)) = runs.get_key_value(run.as_str()) {
                died.insert(*id, k);
            }
        }
    }
    // An older binary has no owner column: the processes found are all.
    let owned: Vec<(String, Option<String>, Option<String>)> = db
        .rows(
            "SELECT CAST(id AS TEXT), owner_instance_id, SUBSTR(started_at, 1, 24) \
             FROM heartbeat_runs WHERE company_id = $1",
        )
        .await
        .unwrap_or_default();
    for (id, owner, started) in owned {
        let (Some((id, row)), Some(owner), Some(started)) = (
            runs.get_key_value(id.as_str()),
            owner,
            time(started.as_deref()),
        ) else {
            continue;
        };
        let finished = time(row.3.as_deref());
        let hit = kills.iter().position(|k| {
            owner == format!("fleet-{}", k.instance)
                && started <= k.at
                && finished.is_none_or(|f| f >= k.at)
        });
        if let Some(k) = hit {
            died.entry(*id).or_insert(k);
        }
    }
    died
}

/// id, status, error code, finished at, invocation source, wake reason.
type RunRow = (
    String,
    String,
    Option<String>,
    Option<String>,
    String,
    Option<String>,
);

pub async fn figures(
    db: &Db,
    day: &Day,
    data_dir: &Path,
    kills: &[Kill],
    provider: &ScriptedProvider,
) -> anyhow::Result<Figures> {
    let agents = &day.company.agents;
    let (chaos, violations) = crate::chaos::check::all(db, agents, &day.acked, data_dir).await?;
    let rows: Vec<RunRow> = db
        .rows(
            "SELECT CAST(id AS TEXT), status, error_code, SUBSTR(finished_at, 1, 24), \
             invocation_source, wake_reason FROM heartbeat_runs WHERE company_id = $1",
        )
        .await?;
    let runs: BTreeMap<&str, &RunRow> = rows.iter().map(|r| (r.0.as_str(), r)).collect();
    let mut f = Figures {
        duplicated: violations
            .iter()
            .filter(|v| v.starts_with("invariant 2"))
            .count(),
        left_running: rows
            .iter()
            .filter(|r| r.1 == "queued" || r.1 == "running")
            .count(),
        chaos,
        violations,
        ..Figures::default()
    };
    for r in &rows {
        *f.runs_by_status.entry(r.1.clone()).or_default() += 1;
    }
    let died = died_with_instance(db, &runs, kills).await;
    for a in agents {
        let log = read_log(&data_dir.join("agent-logs").join(format!("{}.log", a.name)));
        for (run, l) in &log.runs {
            let ended_well = l.end_ns.is_some();
            let status = runs.get(run.as_str()).map(|r| r.1.as_str());
            // A cancel is the board's word, not a loss.
            let kept = ["succeeded", "running", "cancelled"];
            // A run of a killed instance may end its process just as the
            // host dies, unrecorded: settling it is the takeover's part.
            let killed = died.contains_key(run.as_str());
            if ended_well && !killed && status.is_some_and(|s| !kept.contains(&s)) {
                let code = runs[run.as_str()].2.as_deref().unwrap_or("-");
                f.lost.push(format!(
                    "run {run} of {} ended its work but is {} ({code})",
                    a.name,
                    status.unwrap_or("?")
                ));
            }
        }
    }
    let skipped: Vec<(Option<String>, i64)> = db
        .rows(
            "SELECT skip_reason, COUNT(*) FROM agent_wakeup_requests \
             WHERE company_id = $1 AND status = 'skipped' GROUP BY skip_reason",
        )
        .await?;
    for (reason, n) in skipped {
        f.skipped_by_reason
            .insert(reason.unwrap_or_else(|| "-".into()), n);
    }
    let routine_runs: Vec<(i64,)> = db
        .rows("SELECT COUNT(*) FROM routine_runs WHERE company_id = $1")
        .await?;
    f.routine_runs = routine_runs.first().map_or(0, |r| r.0);
    for req in provider.requests() {
        let text = req.body["messages"][0]["content"].as_str().unwrap_or("");
        if let Some((run, idle)) = super::agent::idle_request(text) {
            f.model_requests += 1;
            if idle {
                f.idle_requests += 1;
                let why = runs
                    .get(run.as_str())
                    .map_or("?".into(), |r| format!("{} {:?}", r.4, r.5));
                f.idle_runs.push(format!("run {run} ({why})"));
            }
        }
    }
    for (run, &k) in &died {
        let kill = &kills[k];
        let row = runs.get(run);
        let finished = row.and_then(|r| time(r.3.as_deref()));
        f.takeovers.push(Takeover {
            kill: k,
            instance: kill.instance.clone(),
            run: run.to_string(),
            status: row.map_or("missing".into(), |r| r.1.clone()),
            error_code: row.and_then(|r| r.2.clone()),
            after_ms: finished.map(|t| (t - kill.at).num_milliseconds()),
            by_survivor: finished.is_some_and(|t| kill.restarted_at.is_none_or(|back| t < back)),
        });
    }
    Ok(f)
}
