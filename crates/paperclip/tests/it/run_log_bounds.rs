//! Run logs bounded on disk: a run printing far more than
//! `--run-log-max-bytes` leaves a log of its head, a marker line saying how
//! much was left out, and its real tail (readable through the API, the run
//! page and `agent wake --follow`); and a company's log retention deletes
//! the logs of old finished runs, never a running one's, and says so.

use crate::common;

use common::cli::{cli, context_file, text};
use common::TestServer;
use serde_json::{json, Value};

const MIB: u64 = 1024 * 1024;

fn filler() -> String {
    format!("filler {}", "0123456789".repeat(9))
}

fn filler_lines(mib: u64) -> u64 {
    mib * MIB / (filler().len() as u64 + 1)
}

/// A script printing a first line, about `filler_mib` MiB of filler, then
/// numbered tail lines and a last line.
fn loud_script(filler_mib: u64) -> String {
    format!(
        "echo 'first line of the run'\n\
         yes '{}' | head -n {}\n\
         seq 1 3000 | sed 's/^/tail line /'\n\
         echo 'the very end'\n",
        filler(),
        filler_lines(filler_mib)
    )
}

/// The whole log through the API, page by page: its NDJSON and its end offset.
async fn api_log(s: &TestServer, run_id: &str) -> (String, u64, Value) {
    let (mut out, mut offset) = (String::new(), 0u64);
    loop {
        let page = s
            .ok_get(&format!(
                "/api/heartbeat-runs/{run_id}/log?offset={offset}&limitBytes=262144"
            ))
            .await;
        let next = page["nextOffset"].as_u64().unwrap();
        if next == offset {
            return (out, offset, page);
        }
        out.push_str(page["content"].as_str().unwrap());
        offset = next;
    }
}

fn chunks(ndjson: &str) -> Vec<(String, String)> {
    ndjson
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            (
                v["stream"].as_str().unwrap().to_string(),
                v["chunk"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The log as stored: its file on SQLite, its chunks on Postgres.
async fn stored(s: &TestServer, cid: &str, run_id: &str) -> Option<String> {
    common::run_logs::stored(s, cid, run_id).await
}

/// Checks the log of a run that printed far past `max`: stored (on disk or
/// in the database) at most the limit plus the marker, the head, the marker and the real tail; the API
/// reads the same and says how much was left out. Returns the omitted bytes.
async fn assert_cut(s: &TestServer, cid: &str, run: &Value, max: u64) -> u64 {
    let run_id = run["id"].as_str().unwrap();
    let file = stored(s, cid, run_id).await.expect("a stored log");
    let marker_at = file
        .lines()
        .position(|l| l.contains("\"omittedBytes\""))
        .expect("a marker line");
    let marker_line = file.lines().nth(marker_at).unwrap();
    let marker: Value = serde_json::from_str(marker_line).unwrap();
    let omitted = marker["omittedBytes"].as_u64().unwrap();
    assert!(
        file.len() as u64 <= max + marker_line.len() as u64 + 1,
        "log of {} bytes for a limit of {max}",
        file.len()
    );
    let mut tail = common::run_logs::file(s, cid, run_id).into_os_string();
    tail.push(".tail");
    assert!(!std::path::Path::new(&tail).exists());
    let logged = run["logBytes"].as_u64().unwrap();
    assert!(
        logged > max + omitted / 2,
        "logBytes counts all output: {logged}"
    );
    assert_eq!(
        logged,
        file.len() as u64 - marker_line.len() as u64 - 1 + omitted
    );

    let lines = chunks(&file);
    let first = lines.iter().find(|(stream, _)| stream == "stdout").unwrap();
    assert!(first.1.starts_with("first line of the run\n"), "{first:?}");
    assert_eq!(lines[marker_at].0, "system");
    assert!(
        lines[marker_at]
            .1
            .contains(&format!("{omitted} bytes of this run's log were left out")),
        "{:?}",
        lines[marker_at]
    );
    // The tail is the real last output: the numbered lines in order, then the end.
    let tail: String = lines[marker_at + 1..]
        .iter()
        .map(|(_, c)| c.as_str())
        .collect();
    let numbered = (1..=3000)
        .map(|i| format!("tail line {i}\n"))
        .collect::<String>();
    assert!(
        tail.ends_with(&format!("{numbered}the very end\n")),
        "the tail ends {:?}",
        &tail[tail.len().saturating_sub(200)..]
    );

    let (api, end, last) = api_log(s, run_id).await;
    assert_eq!(api, file, "the API pages add up to the log");
    assert_eq!(end, logged, "offsets count all output");
    assert_eq!(last["omittedBytes"], omitted, "{last}");
    assert!(last.get("removedAt").is_none());
    let excerpt = run["stdoutExcerpt"].as_str().unwrap();
    assert!(
        excerpt.ends_with("tail line 3000\nthe very end\n"),
        "{}",
        &excerpt[excerpt.len().saturating_sub(200)..]
    );
    omitted
}

/// A run printing 20 MiB against a 1 MiB limit, woken and followed with
/// the CLI: the follower sees the head, the marker and the end.
#[tokio::test]
async fn a_run_printing_far_past_the_limit_keeps_its_head_a_marker_and_its_tail() {
    let s = TestServer::start_args(&["--run-log-max-bytes", "1048576"]).await;
    let company = s.company("Loud Co").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let agent = s
        .script_agent(
            &cid,
            "Shouter",
            &loud_script(20),
            json!({ "timeoutSec": 300 }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();

    let ctx = context_file(&s);
    let out = cli(&s.base, &ctx, &["agent", "wake", "shouter", "--follow"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout:.2000}\n{stderr}");
    let (woke, stdout) = stdout.split_once('\n').unwrap();
    assert!(woke.starts_with("Woke Shouter"), "{woke}");
    let printed: String = stdout
        .lines()
        .filter(|l| !l.starts_with("[system] spawned"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        printed.starts_with("first line of the run\n"),
        "{printed:.300}"
    );
    // A follower that keeps up prints everything; one that falls behind
    // the rolling tail is told what it missed.
    let fillers = stdout.lines().filter(|l| l.starts_with("filler ")).count() as u64;
    assert!(
        stdout.contains("[system] [paperclip: ") || fillers == filler_lines(20),
        "the follower shows the cut or all {fillers} lines"
    );
    assert!(
        stdout.contains("tail line 3000\nthe very end\nrun "),
        "{}",
        &stdout[stdout.len().saturating_sub(300)..]
    );

    let runs = s.only_run_succeeded(&cid, aid).await;
    let run = runs[0].clone();
    let omitted = assert_cut(&s, &cid, &run, MIB).await;
    assert!(omitted > 18 * MIB, "{omitted}");

    // The run page says so, and still shows the end.
    let run_id = run["id"].as_str().unwrap();
    let base = format!(
        "/{}/agents/{}/runs/{run_id}",
        company["issuePrefix"].as_str().unwrap(),
        agent["urlKey"].as_str().unwrap()
    );
    let page = s.page(&base).await;
    assert!(
        page.contains(&format!("data-log-cut=\"{omitted}\"")),
        "{page:.3000}"
    );
    let words = common::visible_text(&page);
    assert!(words.contains("in the middle were left out"), "{words}");
    assert!(words.contains("the very end"), "{words}");
    let full = s.page(&format!("{base}/log")).await;
    assert!(full.contains("first line of the run\n"));
    assert!(full.find("first line").unwrap() < full.find("[paperclip: ").unwrap());
    assert!(full.contains(&format!(
        "[paperclip: {omitted} bytes of this run's log were left out"
    )));
    assert!(full.ends_with("tail line 3000\nthe very end\n"));
}

/// The default limit is 16 MiB.
#[tokio::test]
async fn the_default_limit_is_16_mib() {
    let s = TestServer::start().await;
    let cid = s.company("Chatty Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = s
        .script_agent(
            &cid,
            "Talker",
            &loud_script(18),
            json!({ "timeoutSec": 300 }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();
    s.wake(&aid, json!({})).await;
    let run = s
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            180,
            |r| r[0]["status"] == "succeeded",
        )
        .await[0]
        .clone();
    let omitted = assert_cut(&s, &cid, &run, 16 * MIB).await;
    assert!(omitted > MIB && omitted < 8 * MIB, "{omitted}");
    let file = stored(&s, &cid, run["id"].as_str().unwrap()).await.unwrap();
    assert!(file.contains("at most 16 MiB in all"));
}

/// A company keeping logs 30 days: a sweep a month later removes a finished
/// run's log (its page and the API say so), not a running run's, and not
/// another company's; a second sweep changes nothing.
#[tokio::test]
async fn retention_removes_old_logs_but_never_a_live_one() {
    let start = chrono::Utc::now();
    let s = TestServer::start_args(&["--test-clock", &start.to_rfc3339()]).await;
    let company = s.company("Tidy Co").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let keeper = s.company("Keeper Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();

    for bad in [json!(0), json!(3651), json!("soon")] {
        let (status, body) = s
            .patch(
                &format!("/api/companies/{cid}"),
                json!({ "runLogRetentionDays": bad }),
            )
            .await;
        assert!(status == 400 || status == 422, "{bad}: {status} {body}");
    }
    let patched = s
        .ok_patch(
            &format!("/api/companies/{cid}"),
            json!({ "runLogRetentionDays": 30 }),
        )
        .await;
    assert_eq!(patched["runLogRetentionDays"], 30);
    let settings = s
        .page(&format!(
            "/{}/company/settings",
            company["issuePrefix"].as_str().unwrap()
        ))
        .await;
    assert!(settings.contains("name=\"runLogRetentionDays\""));
    assert!(settings.contains("value=\"30\""));

    let quick = s
        .script_agent(&cid, "Quick", "echo 'old output'\n", json!({}))
        .await;
    let qid = quick["id"].as_str().unwrap();
    s.wake(&qid, json!({})).await;
    let old = s.only_run_succeeded(&cid, qid).await[0].clone();
    let old_id = old["id"].as_str().unwrap();
    assert!(stored(&s, &cid, old_id).await.is_some());

    let other = s
        .script_agent(&keeper, "Other", "echo 'kept output'\n", json!({}))
        .await;
    let oid = other["id"].as_str().unwrap();
    s.wake(&oid, json!({})).await;
    let kept = s.only_run_succeeded(&keeper, oid).await[0].clone();

    let gate = s.data_dir.join("gate");
    let script = format!(
        "echo 'still working'\nwhile [ ! -f '{}' ]; do sleep 0.05; done\necho 'done now'\n",
        gate.display()
    );
    let slow = s.script_agent(&cid, "Slow", &script, json!({})).await;
    let sid = slow["id"].as_str().unwrap();
    let live = s.wake(&sid, json!({})).await;
    let live_id = live["id"].as_str().unwrap();
    s.wait_for(&format!("/api/heartbeat-runs/{live_id}"), 30, |r| {
        r["status"] == "running" && r["lastOutputAt"].is_string()
    })
    .await;
    // In the database, a moment after it was printed.
    common::until(10, "the live run's log stored", async || {
        stored(&s, &cid, live_id).await
    })
    .await;

    // A month later: only the finished run of the company with retention.
    let later = (start + chrono::Duration::days(31)).to_rfc3339();
    let pass = s
        .ok_post("/api/instance/test-clock", json!({ "now": later }))
        .await;
    assert_eq!(pass["removedLogs"], 1, "{pass}");
    assert!(stored(&s, &cid, old_id).await.is_none());
    assert!(stored(&s, &cid, live_id).await.is_some());
    assert!(stored(&s, &keeper, kept["id"].as_str().unwrap())
        .await
        .is_some());

    let run = s.ok_get(&format!("/api/heartbeat-runs/{old_id}")).await;
    let removed_at = run["logRemovedAt"]
        .as_str()
        .expect("logRemovedAt")
        .to_string();
    assert!(
        removed_at.starts_with(&later[..10]),
        "{removed_at} on the clock's day"
    );
    let log = s.ok_get(&format!("/api/heartbeat-runs/{old_id}/log")).await;
    assert_eq!(log["content"], "");
    assert_eq!(log["removedAt"], removed_at.as_str());
    let base = format!(
        "/{}/agents/{}/runs/{old_id}",
        company["issuePrefix"].as_str().unwrap(),
        quick["urlKey"].as_str().unwrap()
    );
    let words = common::visible_text(&s.page(&base).await);
    assert!(
        words.contains("This run's log was removed by the company's log retention"),
        "{words}"
    );
    assert!(!words.contains("The run logged nothing"), "{words}");
    assert!(s
        .page(&format!("{base}/log"))
        .await
        .contains("removed by the company's log retention"));

    // The live run's log reads on; a second pass removes nothing.
    let live_log = s
        .ok_get(&format!("/api/heartbeat-runs/{live_id}/log"))
        .await;
    assert!(live_log["content"]
        .as_str()
        .unwrap()
        .contains("still working"));
    assert!(live_log.get("removedAt").is_none());
    let again = s
        .ok_post("/api/instance/test-clock", json!({ "now": later }))
        .await;
    assert_eq!(again["removedLogs"], 0, "{again}");
    assert_eq!(
        s.ok_get(&format!("/api/heartbeat-runs/{old_id}")).await["logRemovedAt"],
        removed_at.as_str()
    );

    // Once it has finished, that log is old enough too.
    std::fs::write(&gate, "").unwrap();
    s.wait_for(&format!("/api/heartbeat-runs/{live_id}"), 30, |r| {
        r["status"] == "succeeded"
    })
    .await;
    let last = s
        .ok_post("/api/instance/test-clock", json!({ "now": later }))
        .await;
    assert_eq!(last["removedLogs"], 1, "{last}");
    assert!(stored(&s, &cid, live_id).await.is_none());
}
