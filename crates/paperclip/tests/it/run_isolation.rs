//! What a run may take from the server and what it leaves behind, attacked
//! from inside the agent: the server's environment, secrets printed in pieces,
//! NUL bytes in output, and children that escape the run's process group.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::TestServer;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

/// A harness server with extra variables in its environment, and a call
/// that insists on success.
struct EnvServer(TestServer);

impl std::ops::Deref for EnvServer {
    type Target = TestServer;
    fn deref(&self) -> &TestServer {
        &self.0
    }
}

impl EnvServer {
    async fn start(env: &[(&str, &str)]) -> EnvServer {
        EnvServer(TestServer::start_env(env).await)
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let (status, body) = self.0.request(method.as_str(), path, body).await;
        assert!(status.is_success(), "{path} -> {status}: {body}");
        body
    }

    /// Creates a company with one `process` agent of `config`, wakes it and
    /// returns the run once it has ended.
    async fn run_once(&self, config: Value) -> Value {
        let post = reqwest::Method::POST;
        let company = self
            .call(post.clone(), "/api/companies", Some(json!({"name": "Env"})))
            .await;
        let cid = company["id"].as_str().unwrap();
        let agent = self
            .call(
                post.clone(),
                &format!("/api/companies/{cid}/agents"),
                Some(json!({"name": "Probe", "adapterType": "process", "adapterConfig": config})),
            )
            .await;
        let aid = agent["id"].as_str().unwrap();
        let run = self
            .call(post, &format!("/api/agents/{aid}/wakeup"), Some(json!({})))
            .await;
        self.ended(run["id"].as_str().unwrap()).await
    }

    /// Waits (up to 30 s) for a run to leave `queued`/`running`.
    async fn ended(&self, run_id: &str) -> Value {
        let path = format!("/api/heartbeat-runs/{run_id}");
        common::until(30, "the run to end", async || {
            let run = self.call(reqwest::Method::GET, &path, None).await;
            (run["status"] != "queued" && run["status"] != "running").then_some(run)
        })
        .await
    }
}

#[tokio::test]
async fn agents_get_an_allow_listed_environment_not_the_servers() {
    let secret = "server-only-secret-0123456789";
    let s = EnvServer::start(&[
        ("SOME_SERVER_SECRET", secret),
        ("AWS_SECRET_ACCESS_KEY", secret),
        ("LC_TIME", "C"),
    ])
    .await;
    let dump = s.data_dir.join("env.txt");
    let run = s
        .run_once(json!({
            "command": "sh",
            "args": ["-c", format!("env > {}", dump.display())],
            "env": {"AGENT_SETTING": "from-config", "PAPERCLIP_RUN_ID": "forged"},
        }))
        .await;
    assert_eq!(run["status"], "succeeded", "{run}");

    let env = std::fs::read_to_string(&dump).unwrap();
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, _)| k)
        .collect();
    for leaked in [
        "SOME_SERVER_SECRET",
        "AWS_SECRET_ACCESS_KEY",
        "DATABASE_URL",
        "CARGO_MANIFEST_DIR",
    ] {
        assert!(
            !names.contains(&leaked),
            "{leaked} reached the agent:\n{env}"
        );
    }
    assert!(!env.contains(secret), "{env}");
    for expected in [
        "PATH",
        "LC_TIME",
        "AGENT_SETTING",
        "PAPERCLIP_RUN_ID",
        "PAPERCLIP_API_KEY",
        "PAPERCLIP_API_URL",
        "PAPERCLIP_AGENT_ID",
        "PAPERCLIP_COMPANY_ID",
    ] {
        assert!(names.contains(&expected), "{expected} missing:\n{env}");
    }
    assert!(
        env.contains(&format!(
            "PAPERCLIP_RUN_ID={}\n",
            run["id"].as_str().unwrap()
        )),
        "{env}"
    );
    assert!(env.contains("AGENT_SETTING=from-config\n"), "{env}");
}

/// The run's text as anyone can read it back: the run row, its timeline, its
/// log through the API (chunks joined per stream, as a reader would), and
/// the log files on disk.
async fn everything_recorded(s: &TestServer, run_id: &str) -> Vec<(String, String)> {
    let run = s.ok_get(&format!("/api/heartbeat-runs/{run_id}")).await;
    let events = s
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/events?limit=5000"))
        .await;
    let mut log = String::new();
    let mut offset = 0;
    loop {
        let page = s
            .ok_get(&format!("/api/heartbeat-runs/{run_id}/log?offset={offset}"))
            .await;
        let content = page["content"].as_str().unwrap();
        if content.is_empty() {
            break;
        }
        log.push_str(content);
        offset = page["nextOffset"].as_u64().unwrap();
    }
    let mut seen = vec![
        ("run".to_string(), run.to_string()),
        ("events".to_string(), events.to_string()),
        ("log api".to_string(), joined_chunks(&log)),
    ];
    // Stored: files under the data dir, or chunks in the Postgres database.
    for (place, text) in common::run_logs::all_stored(s).await {
        seen.push((place.clone(), joined_chunks(&text)));
        seen.push((format!("{place} (raw)"), text));
    }
    assert!(seen.len() > 3, "no stored run log found");
    seen
}

/// NDJSON run log → the text of each stream, concatenated in order.
fn joined_chunks(ndjson: &str) -> String {
    let mut streams: std::collections::BTreeMap<String, String> = Default::default();
    for line in ndjson.lines().filter(|l| !l.trim().is_empty()) {
        let entry: Value = serde_json::from_str(line).unwrap();
        let stream = entry["stream"].as_str().unwrap_or("?").to_string();
        streams
            .entry(stream)
            .or_default()
            .push_str(entry["chunk"].as_str().unwrap_or(""));
    }
    streams
        .into_iter()
        .map(|(k, v)| format!("[{k}]\n{v}\n"))
        .collect()
}

/// Runs `script` as an agent whose config holds `secret` under a
/// secret-looking name, watching live events; returns the run id and the
/// live stdout text.
async fn run_printing_secret(
    s: &TestServer,
    cid: &str,
    script: &str,
    secret: &str,
) -> (String, String) {
    let agent = s
        .script_agent(
            cid,
            "Leaker",
            script,
            json!({"env": {"MY_API_KEY": secret}}),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();
    let ws_url = format!(
        "{}/api/companies/{cid}/events/ws",
        s.base.replace("http://", "ws://")
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(&ws_url).await.unwrap();
    let run = s.wake(&aid, json!({})).await;
    let run_id = run["id"].as_str().unwrap().to_string();
    let mut live = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let next = tokio::time::timeout_at(deadline, ws.next())
            .await
            .expect("the run never finished");
        let Some(Ok(Message::Text(text))) = next else {
            continue;
        };
        let event: Value = serde_json::from_str(&text).unwrap();
        if event["payload"]["runId"] != run_id.as_str() {
            continue;
        }
        if event["type"] == "heartbeat.run.log" && event["payload"]["stream"] == "stdout" {
            live.push_str(event["payload"]["chunk"].as_str().unwrap());
        }
        if event["type"] == "heartbeat.run.finished" {
            break;
        }
    }
    (run_id, live)
}

fn assert_secret_absent(seen: &[(String, String)], live: &str, secret: &str) {
    assert!(
        seen[0].1.contains("\"status\":\"succeeded\""),
        "{}",
        seen[0].1
    );
    for (what, text) in seen {
        assert!(!text.contains(secret), "the secret leaked through {what}");
    }
    assert!(
        !live.contains(secret),
        "the secret leaked through live events"
    );
    assert!(live.contains("[REDACTED]"), "live: {live}");
    let log = &seen.iter().find(|(w, _)| w == "log api").unwrap().1;
    assert!(log.contains("[REDACTED]"), "log: {log}");
}

#[tokio::test]
async fn a_secret_printed_in_two_writes_is_redacted_everywhere() {
    let s = TestServer::start().await;
    let cid = s.company("Leaks").await["id"].as_str().unwrap().to_string();
    let secret = format!("sk-live-{}", uuid::Uuid::new_v4().simple());
    let (head, tail) = secret.split_at(12);
    // The pause outlasts the partial-line flush, so the halves arrive apart.
    let script = format!("printf 'key=%s' '{head}'\nsleep 0.4\nprintf '%s done\\n' '{tail}'\n");
    let (run_id, live) = run_printing_secret(&s, &cid, &script, &secret).await;
    let seen = everything_recorded(&s, &run_id).await;
    assert_secret_absent(&seen, &live, &secret);
    let run = &seen[0].1;
    assert!(run.contains("key=[REDACTED] done"), "{run}");
}

#[tokio::test]
async fn a_secret_straddling_the_long_line_cut_is_redacted_everywhere() {
    let s = TestServer::start().await;
    let cid = s.company("Leaks").await["id"].as_str().unwrap().to_string();
    let secret = format!("sk-live-{}", uuid::Uuid::new_v4().simple());
    // 64 KiB without a newline is sent in pieces; the filler puts the cut
    // inside the first copy, and whatever size the pipe reads come in, the
    // cut lands inside one of the copies that follow.
    let script = format!(
        "filler=$(head -c 65526 /dev/zero | tr '\\0' x)\ncopies=''\ni=0\nwhile [ $i -lt 300 ]; do copies=\"$copies {secret}\"; i=$((i+1)); done\nprintf '%s%s\\n' \"$filler\" \"${{copies# }}\"\n"
    );
    let (run_id, live) = run_printing_secret(&s, &cid, &script, &secret).await;
    let seen = everything_recorded(&s, &run_id).await;
    assert_secret_absent(&seen, &live, &secret);
}

#[tokio::test]
async fn nul_bytes_in_output_are_stored_and_the_agent_keeps_working() {
    let s = TestServer::start().await;
    let cid = s.company("Nul").await["id"].as_str().unwrap().to_string();
    let marker = s.data_dir.join("ran-once");
    // First wake succeeds; the second fails with NUL in its last stderr
    // line (so in the run's error); both must be recorded.
    let script = format!(
        "printf 'a\\000b\\n'\nprintf 'a\\000b\\n' >&2\nif [ -e {m} ]; then exit 7; fi\ntouch {m}\n",
        m = marker.display()
    );
    let agent = s.script_agent(&cid, "Nul", &script, json!({})).await;
    let aid = agent["id"].as_str().unwrap();
    s.wake(&aid, json!({})).await;
    let runs = s.only_run_succeeded(&cid, aid).await;
    let run = &runs[0];
    assert_eq!(run["stdoutExcerpt"], "a\u{FFFD}b\n", "{run}");
    assert_eq!(run["stderrExcerpt"], "a\u{FFFD}b\n", "{run}");

    s.wake(&aid, json!({})).await;
    let runs = s
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            30,
            |r| {
                r.as_array().is_some_and(|r| {
                    r.len() == 2
                        && r.iter()
                            .all(|r| r["status"] != "queued" && r["status"] != "running")
                })
            },
        )
        .await;
    let second = &runs[0];
    assert_eq!(second["status"], "failed", "{second}");
    assert!(
        second["error"].as_str().unwrap().contains("a\u{FFFD}b"),
        "{second}"
    );
    let agent = s.ok_get(&format!("/api/agents/{aid}")).await;
    assert_ne!(agent["status"], "running", "{agent}");
    let run_id = second["id"].as_str().unwrap();
    let events = s
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/events"))
        .await;
    assert!(events.to_string().contains("a\u{FFFD}b"), "{events}");
}

fn alive(pid: i64) -> bool {
    // A zombie is dead for our purposes: it runs nothing and holds nothing.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(") ")
            .next()
            .is_some_and(|rest| rest.starts_with('Z')),
        Err(_) => false,
    }
}

async fn wait_dead(pids: &[i64], secs: u64) {
    let what = format!("{pids:?} to end");
    common::until(secs, &what, async || {
        (!pids.iter().any(|&p| alive(p))).then_some(())
    })
    .await;
}

/// An agent that starts `sleep 300` in a session of its own, and a
/// double-forked daemon (a shell in a new session whose child sleeps), then
/// does `rest`. Returns the run id and the pids to watch.
async fn escaping_run(
    s: &TestServer,
    cid: &str,
    name: &str,
    rest: &str,
    extra: Value,
) -> (String, Vec<i64>) {
    let p1 = s.data_dir.join(format!("{name}-1.pid"));
    let p2 = s.data_dir.join(format!("{name}-2.pid"));
    let script = format!(
        "setsid sleep 300 </dev/null >/dev/null 2>&1 &\necho $! > {p1}.tmp && mv {p1}.tmp {p1}\n\
         (setsid sh -c 'sleep 301 & echo $! > {p2}.tmp && mv {p2}.tmp {p2}; wait' </dev/null >/dev/null 2>&1 &)\n\
         while [ ! -e {p2} ]; do sleep 0.05; done\n{rest}\n",
        p1 = p1.display(),
        p2 = p2.display()
    );
    let agent = s.script_agent(cid, name, &script, extra).await;
    let aid = agent["id"].as_str().unwrap();
    let run = s.wake(&aid, json!({})).await;
    let run_id = run["id"].as_str().unwrap().to_string();
    let read = |p: &Path| std::fs::read_to_string(p).ok()?.trim().parse::<i64>().ok();
    let pids = common::until(20, "the script to start its children", async || {
        Some(vec![read(&p1)?, read(&p2)?])
    })
    .await;
    (run_id, pids)
}

#[tokio::test]
async fn cancel_ends_children_that_left_the_process_group() {
    let s = TestServer::start().await;
    let cid = s.company("Escape").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (run_id, pids) = escaping_run(&s, &cid, "cancelled", "sleep 300", json!({})).await;
    assert!(pids.iter().all(|&p| alive(p)), "{pids:?}");
    let run = s
        .ok_post(&format!("/api/heartbeat-runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(run["status"], "cancelled", "{run}");
    wait_dead(&pids, 15).await;
}

#[tokio::test]
async fn timeout_ends_children_that_left_the_process_group() {
    let s = TestServer::start().await;
    let cid = s.company("Escape").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (run_id, pids) = escaping_run(
        &s,
        &cid,
        "slow",
        "sleep 300",
        json!({"timeoutSec": 2, "graceSec": 1}),
    )
    .await;
    let run = s
        .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 30, |r| {
            r["status"] != "running"
        })
        .await;
    assert_eq!(run["status"], "timed_out", "{run}");
    wait_dead(&pids, 15).await;
}

#[tokio::test]
async fn a_run_that_exits_takes_its_leftover_children_with_it() {
    let s = TestServer::start().await;
    let cid = s.company("Escape").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Also one left in the run's own group, which used to outlive the run.
    let same_group = s.data_dir.join("same-group.pid");
    let rest = format!(
        "sleep 302 </dev/null >/dev/null 2>&1 &\necho $! > {}\nexit 0",
        same_group.display()
    );
    let (run_id, mut pids) = escaping_run(&s, &cid, "exiting", &rest, json!({})).await;
    let run = s
        .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 30, |r| {
            r["status"] != "running"
        })
        .await;
    assert_eq!(run["status"], "succeeded", "{run}");
    pids.push(
        std::fs::read_to_string(&same_group)
            .unwrap()
            .trim()
            .parse()
            .unwrap(),
    );
    wait_dead(&pids, 15).await;
}

#[tokio::test]
async fn a_secret_split_on_stderr_stays_out_of_the_error() {
    let s = TestServer::start().await;
    let cid = s.company("Leaks").await["id"].as_str().unwrap().to_string();
    let secret = format!("sk-live-{}", uuid::Uuid::new_v4().simple());
    let (head, tail) = secret.split_at(20);
    // The failure message quotes the last stderr line, which arrives in two
    // writes; it must be the whole line, redacted, not half a secret.
    let script = format!(
        "printf 'auth failed for %s' '{head}' >&2\nsleep 0.4\nprintf '%s\\n' '{tail}' >&2\nexit 3\n"
    );
    let (run_id, _) = run_printing_secret(&s, &cid, &script, &secret).await;
    let run = s.ok_get(&format!("/api/heartbeat-runs/{run_id}")).await;
    assert_eq!(run["status"], "failed", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(error.ends_with("auth failed for [REDACTED]"), "{error}");
    for (what, text) in everything_recorded(&s, &run_id).await {
        for part in [secret.as_str(), head, tail] {
            assert!(!text.contains(part), "{part} leaked through {what}");
        }
    }
}

/// A coding CLI may get its provider key from the server's environment; if
/// anything in a run prints that key, it is redacted like a config secret.
#[tokio::test]
async fn a_provider_key_from_the_servers_environment_is_redacted_in_run_output() {
    let key = "sk-ant-server-environment-key-0123456789";
    let s = EnvServer::start(&[("ANTHROPIC_API_KEY", key)]).await;
    let run = s
        .run_once(json!({ "command": "sh", "args": ["-c", format!("echo 'key={key}'")] }))
        .await;
    let excerpt = run["stdoutExcerpt"].as_str().unwrap();
    assert!(excerpt.contains("key=[REDACTED]"), "{excerpt}");
    assert!(!run.to_string().contains(key));
}
