//! Reading a run's log a page at a time: pages end on whole lines (or, for a
//! line longer than the page, between characters) and `nextOffset` counts the
//! bytes actually returned, so the pages put together are the log.

use crate::common;

use common::TestServer;
use serde_json::json;

#[tokio::test]
async fn log_pages_are_whole_lines_that_add_up_to_the_log() {
    let s = TestServer::start().await;
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    let script = r#"for i in 1 2 3 4 5 6 7 8; do
  echo "line $i café 漢字 😀 naïve"
done
printf 'é%.0s' $(seq 1 200); echo
echo "漢😀漢😀 the end"
"#;
    let agent = s.script_agent(&cid, "Printer", script, json!({})).await;
    let aid = agent["id"].as_str().unwrap();
    let run = s.wake(&aid, json!({})).await;
    let run_id = run["id"].as_str().unwrap();
    s.wait_for(&format!("/api/heartbeat-runs/{run_id}"), 30, |r| {
        r["status"] == "succeeded"
    })
    .await;
    let whole = s
        .ok_get(&format!(
            "/api/heartbeat-runs/{run_id}/log?limitBytes=4194304"
        ))
        .await;
    let whole = whole["content"].as_str().unwrap().to_string();
    assert!(whole.contains("漢😀漢😀 the end"), "{whole}");

    for limit in [7, 64, 150] {
        let mut offset = 0u64;
        let mut joined = String::new();
        let mut pages = 0;
        loop {
            let page = s
                .ok_get(&format!(
                    "/api/heartbeat-runs/{run_id}/log?offset={offset}&limitBytes={limit}"
                ))
                .await;
            assert_eq!(page["offset"], offset);
            let content = page["content"].as_str().unwrap();
            let next = page["nextOffset"].as_u64().unwrap();
            assert_eq!(next, offset + content.len() as u64, "limit {limit}: {page}");
            if content.is_empty() {
                break;
            }
            assert!(
                !content.contains('\u{fffd}'),
                "a character was cut: {content:?}"
            );
            // A page ends a line, unless it is the part of a line longer
            // than the page that fits (up to a character boundary).
            assert!(
                content.ends_with('\n') || (!content.contains('\n') && content.len() + 4 > limit),
                "limit {limit}: {content:?}"
            );
            assert!(content.len() <= limit.max(4), "limit {limit}: {content:?}");
            joined.push_str(content);
            offset = next;
            pages += 1;
            assert!(pages < 10_000, "paging does not advance");
        }
        assert_eq!(joined, whole, "limit {limit}");
    }

    // Pages that can hold the longest line: each is whole NDJSON lines.
    let longest = whole.lines().map(|l| l.len() + 1).max().unwrap();
    let mut offset = 0u64;
    let mut lines = 0;
    loop {
        let page = s
            .ok_get(&format!(
                "/api/heartbeat-runs/{run_id}/log?offset={offset}&limitBytes={longest}"
            ))
            .await;
        let content = page["content"].as_str().unwrap();
        if content.is_empty() {
            break;
        }
        assert!(content.ends_with('\n'), "{content:?}");
        for line in content.lines() {
            serde_json::from_str::<serde_json::Value>(line)
                .unwrap_or_else(|e| panic!("not a whole NDJSON line ({e}): {line:?}"));
            lines += 1;
        }
        offset = page["nextOffset"].as_u64().unwrap();
    }
    assert_eq!(lines, whole.lines().count());
}

/// A run records its agent's last output (upstream's lastOutput* fields):
/// the first chunk reaches the row while the run is still going, and the
/// last one is exact once it has ended.
#[tokio::test]
async fn a_run_records_when_its_agent_last_wrote() {
    let s = TestServer::start().await;
    let cid = s.company("Quiet Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let marker = s.data_dir.join("go-on");
    let script = format!(
        "echo first\nwhile [ ! -f '{}' ]; do sleep 0.05; done\necho second >&2\n",
        marker.display()
    );
    let agent = s.script_agent(&cid, "Talker", &script, json!({})).await;
    let aid = agent["id"].as_str().unwrap();
    let (_, run) = s
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    let run_path = format!("/api/heartbeat-runs/{}", run["id"].as_str().unwrap());
    assert!(run["lastOutputAt"].is_null(), "nothing written yet: {run}");

    let live = s
        .wait_for(&run_path, 20, |r| r["lastOutputAt"].is_string())
        .await;
    assert_eq!(live["status"], "running", "seen while it runs: {live}");
    assert_eq!(live["lastOutputStream"], "stdout");

    std::fs::write(&marker, "").unwrap();
    let done = s
        .wait_for(&run_path, 20, |r| r["status"] == "succeeded")
        .await;
    assert_eq!(done["lastOutputStream"], "stderr", "{done}");
    assert!(done["lastOutputSeq"].as_i64().unwrap() > live["lastOutputSeq"].as_i64().unwrap());
    let bytes = done["lastOutputBytes"].as_i64().unwrap();
    assert!(
        bytes > 0 && bytes <= done["logBytes"].as_i64().unwrap(),
        "{done}"
    );
    let at = done["lastOutputAt"].as_str().unwrap();
    assert!(at >= live["lastOutputAt"].as_str().unwrap());
    assert!(at <= done["finishedAt"].as_str().unwrap(), "{done}");
}
