//! Run logs from any instance (issue 38): two instances on one Postgres,
//! each with its own data dir. A run's log is written to the database, so
//! the instance not running it reads it live and, once it has ended, whole:
//! the same bytes and offsets, paged, cut by `--run-log-max-bytes` with its
//! marker. Retention and deleting the company remove the chunks; a run
//! logged to a file before the switch is still read from its file.

use crate::common;

use common::fleet::{on_postgres, second_instance};
use common::run_logs;
use common::TestServer;
use serde_json::{json, Value};

/// The whole log through `s`'s API, `limit` bytes a page: the text, the end
/// offset, the last page.
async fn api_log(s: &TestServer, run_id: &str, limit: u64) -> (String, u64, Value) {
    let (mut out, mut offset) = (String::new(), 0u64);
    loop {
        let page = s
            .ok_get(&format!(
                "/api/heartbeat-runs/{run_id}/log?offset={offset}&limitBytes={limit}"
            ))
            .await;
        let next = page["nextOffset"].as_u64().unwrap();
        if next == offset {
            return (out, offset, page);
        }
        assert!(next > offset);
        out.push_str(page["content"].as_str().unwrap());
        offset = next;
    }
}

fn stdout_of(ndjson: &str) -> String {
    ndjson
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|v| v["stream"] == "stdout")
        .map(|v| v["chunk"].as_str().unwrap().to_string())
        .collect()
}

/// The instance whose process runs the agent (the parent of its process).
fn runner_pid(run: &Value) -> Option<u32> {
    let pid = run["processPid"].as_u64()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test]
async fn a_run_log_reads_through_the_other_instance_live_and_whole() {
    if !on_postgres("a_run_log_reads_through_the_other_instance_live_and_whole") {
        return;
    }
    let start = chrono::Utc::now();
    let a = TestServer::start_args(&[
        "--run-log-max-bytes",
        "65536",
        "--test-clock",
        &start.to_rfc3339(),
    ])
    .await;
    // Before anything runs: a starting instance settles running runs.
    let b = second_instance(&a).await;
    let url = a.database_url.clone().unwrap();
    let company = a.company("Far Co").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let gate = a.data_dir.join("gate");
    let script = format!(
        "echo 'first line'\necho 'second line'\n\
         while [ ! -f '{}' ]; do sleep 0.05; done\n\
         seq 1 6000 | sed 's/^/more line /'\necho 'the very end'\n",
        gate.display()
    );
    let agent = a.script_agent(&cid, "Writer", &script, json!({})).await;
    let aid = agent["id"].as_str().unwrap();
    let run_id = a.wake(aid, json!({})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let live = a
        .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 30, |r| {
            r["status"] == "running" && r["processPid"].is_u64()
        })
        .await;
    // Either instance may have claimed it: read through the other one.
    let (runner, reader) = match runner_pid(&live) {
        Some(pid) if pid == b.pid() => (&b, &a),
        Some(pid) => {
            assert_eq!(pid, a.pid(), "the run's process is a child of an instance");
            (&a, &b)
        }
        None => panic!("the run's process has no parent instance: {live}"),
    };

    // Live: the first lines reach the other instance's API and run page.
    let page = common::until(
        10,
        "the first lines through the other instance",
        async || {
            let page = reader
                .ok_get(&format!("/api/heartbeat-runs/{run_id}/log"))
                .await;
            (stdout_of(page["content"].as_str().unwrap()) == "first line\nsecond line\n")
                .then_some(page)
        },
    )
    .await;
    assert_eq!(page["store"], "postgres", "{page}");
    let run_page = format!(
        "/{}/agents/{}/runs/{run_id}",
        company["issuePrefix"].as_str().unwrap(),
        agent["urlKey"].as_str().unwrap()
    );
    assert!(common::visible_text(&reader.page(&run_page).await).contains("second line"));

    std::fs::write(&gate, "").unwrap();
    let run = reader
        .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 30, |r| {
            r["status"] == "succeeded"
        })
        .await;
    assert_eq!(run["logStore"], "postgres", "{run}");
    let total = run["logBytes"].as_u64().unwrap();

    // Whole: the same bytes and offsets through both, cut with its marker.
    let (via_reader, end, last) = api_log(reader, &run_id, 262_144).await;
    let (via_runner, runner_end, _) = api_log(runner, &run_id, 262_144).await;
    assert_eq!(via_reader, via_runner);
    assert_eq!((end, runner_end), (total, total));
    let omitted = last["omittedBytes"].as_u64().expect("cut for its size");
    assert!(via_reader.contains(&format!(
        "[paperclip: {omitted} bytes of this run's log were left out"
    )));
    let out = stdout_of(&via_reader);
    assert!(
        out.starts_with("first line\nsecond line\nmore line 1\n"),
        "{out:.200}"
    );
    assert!(
        out.ends_with("more line 6000\nthe very end\n"),
        "{out:.200}"
    );
    assert!(
        via_reader.len() as u64 <= 65_536 + 1024,
        "{}",
        via_reader.len()
    );
    // Small pages through the other instance add up to the same.
    let (paged, paged_end, _) = api_log(reader, &run_id, 1000).await;
    assert_eq!((paged, paged_end), (via_reader.clone(), total));
    let full = reader.page(&format!("{run_page}/log")).await;
    assert!(full.contains("first line\n") && full.ends_with("the very end\n"));

    // In the database, not in either data dir.
    assert_eq!(
        run_logs::stored(&a, &cid, &run_id).await.as_deref(),
        Some(via_reader.as_str())
    );
    let (chunks, cut) = run_logs::rows(&url, &run_id).await;
    assert!(chunks > 1 && cut, "{chunks} chunks, cut {cut}");
    for s in [&a, &b] {
        assert!(!run_logs::file(s, &cid, &run_id).exists());
    }

    // Retention removes the chunks; both instances say the log was removed.
    a.ok_patch(
        &format!("/api/companies/{cid}"),
        json!({ "runLogRetentionDays": 30 }),
    )
    .await;
    let later = (start + chrono::Duration::days(31)).to_rfc3339();
    let pass = a
        .ok_post("/api/instance/test-clock", json!({ "now": later }))
        .await;
    assert_eq!(pass["removedLogs"], 1, "{pass}");
    assert_eq!(run_logs::rows(&url, &run_id).await, (0, false));
    let gone = b.ok_get(&format!("/api/heartbeat-runs/{run_id}/log")).await;
    assert_eq!(gone["content"], "");
    assert!(gone["removedAt"].is_string(), "{gone}");

    // A run logged to a file before the switch (`local_file`) is read from
    // its file, by the instance that has it.
    let other = a.company("Old Co").await;
    let oid = other["id"].as_str().unwrap().to_string();
    let quick = a
        .script_agent(&oid, "Quick", "echo 'quick output'\n", json!({}))
        .await;
    let qid = quick["id"].as_str().unwrap();
    let mut runs = Vec::new();
    for _ in 0..2 {
        let id = a.wake(qid, json!({})).await["id"]
            .as_str()
            .unwrap()
            .to_string();
        a.wait_for(&format!("/api/heartbeat-runs/{id}"), 30, |r| {
            r["status"] == "succeeded"
        })
        .await;
        runs.push(id);
    }
    let (kept, old) = (&runs[0], &runs[1]);
    let db = common::database(&url).await;
    for sql in [
        "DELETE FROM run_log_chunks WHERE CAST(run_id AS TEXT) = $1",
        "UPDATE heartbeat_runs SET log_store = 'local_file' WHERE CAST(id AS TEXT) = $1",
    ] {
        sqlx::query(sql).bind(old).execute(&db).await.unwrap();
    }
    db.close().await;
    let line = json!({ "ts": "2026-01-01T00:00:00.000Z", "stream": "stdout",
        "chunk": "from the old file\n", "seq": 1 });
    let path = run_logs::file(&a, &oid, old);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, format!("{line}\n")).unwrap();
    let from_file = a.ok_get(&format!("/api/heartbeat-runs/{old}/log")).await;
    assert_eq!(from_file["store"], "local_file");
    assert_eq!(
        stdout_of(from_file["content"].as_str().unwrap()),
        "from the old file\n"
    );

    // Deleting the company deletes its runs' chunks with them.
    assert!(run_logs::rows(&url, kept).await.0 > 0);
    let (status, body) = a.delete(&format!("/api/companies/{oid}")).await;
    assert!(status.is_success(), "{status} {body}");
    assert_eq!(run_logs::rows(&url, kept).await, (0, false));
}
