//! The load client of the day: every board route (the API lists and gets
//! the pages read, and the pages) in turn, through each instance at a
//! steady pace, with each answer's latency kept per route. An instance
//! that is down is not asked; a request that fails is an error, not a
//! latency.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::day::{Company, Slots};

/// Every route as (what a person reads: ids named by what they are, a task
/// by its identifier; the path requested).
pub fn routes(c: &Company) -> Vec<(String, String)> {
    paths(c)
        .into_iter()
        .map(|p| {
            let mut label = p.clone();
            for (id, name) in [
                (&c.id, "{company}"),
                (&c.sample_id, &c.sample_identifier),
                (&c.sample_run, "{run}"),
                (&c.agents[0].id, "{agent}"),
                (&c.agents[c.agents.len() / 2].id, "{agent2}"),
                (&c.approval, "{approval}"),
                (&c.project, "{project}"),
                (&c.goal, "{goal}"),
            ] {
                label = label.replace(id.as_str(), name);
            }
            (label, p)
        })
        .collect()
}

fn paths(c: &Company) -> Vec<String> {
    let (cid, pfx) = (&c.id, &c.prefix);
    let (tid, ident, run) = (&c.sample_id, &c.sample_identifier, &c.sample_run);
    let agent = &c.agents[0].id;
    let key = &c.agent_keys[0];
    let mid_key = &c.agent_keys[c.agent_keys.len() / 2];
    let mid = &c.agents[c.agents.len() / 2].id;
    vec![
        "/api/health".to_string(),
        "/api/companies".into(),
        format!("/api/companies/{cid}"),
        format!("/api/companies/{cid}/dashboard"),
        format!("/api/companies/{cid}/sidebar-badges"),
        format!("/api/companies/{cid}/issues?limit=50"),
        format!("/api/companies/{cid}/issues?status=todo,in_progress"),
        format!("/api/companies/{cid}/issues?assigneeAgentId={mid}"),
        format!("/api/companies/{cid}/issues?limit=20&q=fleet"),
        format!("/api/issues/{ident}"),
        format!("/api/issues/{tid}/comments"),
        format!("/api/issues/{tid}/activity"),
        format!("/api/issues/{tid}/approvals"),
        format!("/api/issues/{tid}/active-run"),
        format!("/api/companies/{cid}/heartbeat-runs?limit=50"),
        format!("/api/companies/{cid}/heartbeat-runs?agentId={agent}"),
        format!("/api/companies/{cid}/live-runs"),
        format!("/api/heartbeat-runs/{run}"),
        format!("/api/heartbeat-runs/{run}/events"),
        format!("/api/heartbeat-runs/{run}/log"),
        format!("/api/companies/{cid}/agents"),
        format!("/api/agents/{agent}"),
        format!("/api/agents/{agent}/runtime-state"),
        format!("/api/companies/{cid}/org"),
        format!("/api/companies/{cid}/projects"),
        format!("/api/companies/{cid}/goals"),
        format!("/api/companies/{cid}/routines"),
        format!("/api/companies/{cid}/activity"),
        format!("/api/companies/{cid}/approvals"),
        format!("/api/approvals/{}", c.approval),
        format!("/api/companies/{cid}/costs/summary"),
        format!("/api/companies/{cid}/costs/by-agent"),
        format!("/api/companies/{cid}/budget-incidents"),
        format!("/{pfx}/dashboard"),
        format!("/{pfx}/inbox"),
        format!("/{pfx}/tasks"),
        format!("/{pfx}/tasks?view=board"),
        format!("/{pfx}/tasks/{ident}"),
        format!("/{pfx}/agents"),
        format!("/{pfx}/agents/{key}"),
        format!("/{pfx}/agents/{mid_key}"),
        format!("/{pfx}/agents/{key}/runs"),
        format!("/{pfx}/agents/{}/runs/{run}", c.sample_run_key),
        format!("/{pfx}/org"),
        format!("/{pfx}/approvals"),
        format!("/{pfx}/approvals/{}", c.approval),
        format!("/{pfx}/routines"),
        format!("/{pfx}/costs"),
        format!("/{pfx}/activity"),
        format!("/{pfx}/projects/{}", c.project),
        format!("/{pfx}/goals/{}", c.goal),
        format!("/{pfx}/company/settings"),
    ]
}

#[derive(Default, Debug)]
pub struct Route {
    pub latencies: Vec<Duration>,
    pub errors: u64,
    pub first_error: Option<String>,
}

impl Route {
    /// Nearest-rank percentile in ms, `p` in 0..=100.
    pub fn pct(&self, p: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let mut v = self.latencies.clone();
        v.sort_unstable();
        let rank = (p / 100.0 * v.len() as f64).ceil() as usize;
        v[rank.clamp(1, v.len()) - 1].as_secs_f64() * 1000.0
    }
}

pub type Results = Arc<Mutex<BTreeMap<String, Route>>>;

/// One paced client per instance until `stop`; `rps` requests a second each.
pub fn start(
    slots: Slots,
    routes: Vec<(String, String)>,
    rps: f64,
    stop: Arc<AtomicBool>,
) -> (Results, Vec<tokio::task::JoinHandle<()>>) {
    let results: Results = Default::default();
    let handles = (0..slots.len())
        .map(|i| {
            let (slots, routes, stop, results) =
                (slots.clone(), routes.clone(), stop.clone(), results.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::builder()
                    .timeout(Duration::from_secs(30))
                    .tcp_nodelay(true)
                    .build()
                    .expect("http client");
                let mut pace = tokio::time::interval(Duration::from_secs_f64(1.0 / rps.max(0.1)));
                pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                // The instances start at different routes so both see all.
                let mut next = i * routes.len() / slots.len().max(1);
                while !stop.load(Ordering::Relaxed) {
                    pace.tick().await;
                    let slot = &slots[i];
                    if !slot.up.load(Ordering::SeqCst) {
                        continue;
                    }
                    let (route, path) = &routes[next % routes.len()];
                    next += 1;
                    let url = format!("{}{path}", slot.base.read().unwrap());
                    let sent = Instant::now();
                    let outcome = match client.get(&url).send().await {
                        Ok(resp) => {
                            let status = resp.status();
                            match resp.bytes().await {
                                Ok(_) if status.is_success() => Ok(sent.elapsed()),
                                Ok(body) => Err(format!(
                                    "{status}: {}",
                                    String::from_utf8_lossy(&body)
                                        .chars()
                                        .take(120)
                                        .collect::<String>()
                                )),
                                Err(e) => Err(format!("body: {e}")),
                            }
                        }
                        Err(e) => Err(format!("request: {e}")),
                    };
                    // Killed while the request was in flight: not the route's
                    // failure; the route is asked again once the instance is
                    // back (a short day probes each route about once).
                    if outcome.is_err() && !slot.up.load(Ordering::SeqCst) {
                        next -= 1;
                        continue;
                    }
                    let mut all = results.lock().unwrap();
                    let r = all.entry(route.clone()).or_default();
                    match outcome {
                        Ok(took) => r.latencies.push(took),
                        Err(e) => {
                            r.errors += 1;
                            r.first_error.get_or_insert(e);
                        }
                    }
                }
            })
        })
        .collect();
    (results, handles)
}
