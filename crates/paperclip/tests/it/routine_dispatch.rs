//! A routine run's dispatch fingerprint, as the original uses it: every run
//! records the fingerprint of what it dispatched, and a run joins a live
//! execution only when it would have made the same task. The same
//! variables coalesce; other variables, or a routine edited since, make a
//! task of their own. (And the description's document follows the edit.)

use crate::common::TestServer;
use serde_json::{json, Value};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn only_a_run_that_would_make_the_same_task_coalesces() {
    let s = TestServer::start().await;
    let cid = id(&s.company("Dispatch Co").await);
    let release = s.data_dir.join("release-dispatch");
    let script = format!(
        "while [ ! -f '{}' ]; do sleep 0.1; done\n",
        release.display()
    );
    let agent = s
        .script_agent(&cid, "Busy", &script, json!({ "timeoutSec": 120 }))
        .await;
    let aid = id(&agent);
    let routine = s
        .ok_post(
            &format!("/api/companies/{cid}/routines"),
            json!({ "title": "Report for {{who}}", "assigneeAgentId": aid,
                    "concurrencyPolicy": "coalesce_if_active" }),
        )
        .await;
    let rid = id(&routine);
    let run = format!("/api/routines/{rid}/run");
    let fingerprint = |run: &Value| {
        let fp = run["dispatchFingerprint"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert_eq!(fp.len(), 64, "{run}");
        assert!(fp.chars().all(|c| c.is_ascii_hexdigit()), "{run}");
        fp
    };

    let first = s
        .ok_post(&run, json!({ "variables": { "who": "Ann" } }))
        .await;
    assert_eq!(first["status"], "issue_created", "{first}");
    let ann = fingerprint(&first);
    s.wait_for(
        &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
        30,
        |runs| {
            runs.as_array()
                .is_some_and(|r| r.iter().any(|x| x["status"] == "running"))
        },
    )
    .await;

    // The same task again: folded into the live one.
    let again = s
        .ok_post(
            &run,
            json!({ "variables": { "who": "Ann" }, "source": "api" }),
        )
        .await;
    assert_eq!(again["status"], "coalesced", "{again}");
    assert_eq!(fingerprint(&again), ann);
    assert_eq!(again["linkedIssueId"], first["linkedIssueId"]);
    assert_eq!(again["coalescedIntoRunId"], first["id"]);

    // Other variables: another task, not folded into Ann's.
    let bob = s
        .ok_post(&run, json!({ "variables": { "who": "Bob" } }))
        .await;
    assert_eq!(bob["status"], "issue_created", "{bob}");
    assert_ne!(fingerprint(&bob), ann);
    assert_ne!(bob["linkedIssueId"], first["linkedIssueId"]);

    // The routine edited since: Ann's run is another task too.
    s.ok_patch(
        &format!("/api/routines/{rid}"),
        json!({ "description": "Now with totals" }),
    )
    .await;
    // The description is also kept as the original keeps it: a document
    // with a revision per change of the text.
    let detail = s.ok_get(&format!("/api/routines/{rid}")).await;
    let doc = &detail["descriptionDocument"];
    assert_eq!(doc["key"], "description", "{detail}");
    assert_eq!(doc["format"], "markdown");
    assert_eq!(doc["body"], "Now with totals");
    assert_eq!(doc["latestRevisionNumber"], 2, "{doc}");
    assert_eq!(doc["routineId"], rid.as_str());
    let edited = s
        .ok_post(&run, json!({ "variables": { "who": "Ann" } }))
        .await;
    assert_eq!(edited["status"], "issue_created", "{edited}");
    assert_ne!(fingerprint(&edited), ann);
    assert_ne!(edited["linkedIssueId"], first["linkedIssueId"]);

    // The runs and the list say what each dispatched.
    let runs = s.ok_get(&format!("/api/routines/{rid}/runs")).await;
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for r in runs {
        let made = [&first, &again, &bob, &edited]
            .into_iter()
            .find(|m| m["id"] == r["id"])
            .unwrap();
        assert_eq!(r["dispatchFingerprint"], made["dispatchFingerprint"]);
    }
    let list = s.ok_get(&format!("/api/companies/{cid}/routines")).await;
    let last = &list[0]["lastRun"];
    assert_eq!(last["id"], edited["id"], "{list}");
    assert_eq!(last["dispatchFingerprint"], edited["dispatchFingerprint"]);
    assert_eq!(last["linkedIssue"]["id"], edited["linkedIssueId"]);
    assert_eq!(last["trigger"], Value::Null);
    assert_eq!(list[0]["managedByPlugin"], Value::Null);
    let issues = s
        .ok_get(&format!(
            "/api/companies/{cid}/issues?assigneeAgentId={aid}"
        ))
        .await;
    assert_eq!(issues.as_array().unwrap().len(), 3, "{issues}");
    std::fs::write(&release, "").unwrap();
}
