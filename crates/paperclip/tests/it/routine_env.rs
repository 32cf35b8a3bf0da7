//! A routine's env, as the original has it: bindings in an agent's shape
//! (plain strings, secrets by reference), checked when saved, merged into
//! the runs of the tasks it makes over the project's and the agent's (the
//! routine's binding wins), with the env of the revision that ran. A
//! secret's value reaches the run's process and nothing else: no answer,
//! revision or activity entry holds it, and the activity names only the
//! variables that changed.

use crate::common::{self, TestServer};
use serde_json::{json, Value};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_routines_env_reaches_its_runs_over_the_projects_and_the_agents() {
    let s = TestServer::start().await;
    let cid = id(&s.company("Env Co").await);
    let secret_value = common::secrets::value("routine");
    let secret = s
        .ok_post(
            &format!("/api/companies/{cid}/secrets"),
            json!({ "name": "Report Token", "value": secret_value }),
        )
        .await;
    let sid = id(&secret);
    let other = id(&s.company("Elsewhere").await);
    let foreign = s
        .ok_post(
            &format!("/api/companies/{other}/secrets"),
            json!({ "name": "Theirs", "value": common::secrets::value("theirs") }),
        )
        .await;
    let out = s.data_dir.join("routine-env.out");
    let script = format!(
        "printf '%s|%s|%s|%s|%s' \"$PLAIN\" \"$SHARED\" \"$ONLY_AGENT\" \"$ONLY_PROJECT\" \"$TOKEN\" > {}\n",
        out.display()
    );
    let agent = s
        .script_agent(
            &cid,
            "Reporter",
            &script,
            json!({ "env": { "SHARED": "agent", "ONLY_AGENT": "a" } }),
        )
        .await;
    let aid = id(&agent);
    let project = s
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "Books", "env": { "SHARED": "project", "ONLY_PROJECT": "p" } }),
        )
        .await;
    let pid = id(&project);
    let routines = format!("/api/companies/{cid}/routines");

    // Bad env: 400 naming env, never a 500, nothing made.
    for env in [
        json!({ "1BAD": "x" }),
        json!(["A"]),
        json!({ "A": 3 }),
        json!({ "T": { "type": "secret_ref", "secretId": "nope" } }),
        json!({ "T": { "type": "secret_ref", "secretId": uuid::Uuid::new_v4().to_string() } }),
        json!({ "T": { "type": "secret_ref", "secretId": foreign["id"] } }),
    ] {
        let (status, body) = s
            .post(
                &routines,
                json!({ "title": "Bad", "assigneeAgentId": aid, "env": env }),
            )
            .await;
        assert_eq!(status, 400, "{env}: {body}");
        assert!(body.to_string().contains("env"), "{body}");
    }
    assert_eq!(s.ok_get(&routines).await, json!([]));

    let env = json!({ "PLAIN": "r", "SHARED": "routine",
        "TOKEN": { "type": "secret_ref", "secretId": sid } });
    let routine = s
        .ok_post(
            &routines,
            json!({ "title": "Books report", "assigneeAgentId": aid, "projectId": pid, "env": env }),
        )
        .await;
    let rid = id(&routine);
    assert_eq!(routine["env"], env);
    assert_eq!(routine["originKind"], "manual");
    assert_eq!(routine["originId"], Value::Null);
    assert_eq!(routine["responsibleUserId"], "local-board");
    let revisions = s.ok_get(&format!("/api/routines/{rid}/revisions")).await;
    let snapshot = &revisions[0]["snapshot"]["routine"];
    assert_eq!(snapshot["env"], env, "{snapshot}");
    assert_eq!(snapshot["id"], rid.as_str());
    assert_eq!(snapshot["companyId"], cid.as_str());
    assert_eq!(revisions[0]["responsibleUserId"], "local-board");

    let run = s
        .ok_post(&format!("/api/routines/{rid}/run"), json!({}))
        .await;
    assert_eq!(run["status"], "issue_created", "{run}");
    assert_eq!(run["responsibleUserId"], "local-board");
    let runs = s.settled_runs(&cid, &aid, 1, 30).await;
    assert_eq!(runs[0]["status"], "succeeded", "{runs:?}");
    let got = std::fs::read_to_string(&out).unwrap();
    assert_eq!(got, format!("r|routine|a|p|{secret_value}"));

    // A change of env: a new revision, the activity names the variables
    // that changed, and the next run has it.
    let env2 = json!({ "PLAIN": "r2", "SHARED": "routine",
        "TOKEN": { "type": "secret_ref", "secretId": sid }, "EXTRA": "e" });
    let patched = s
        .ok_patch(&format!("/api/routines/{rid}"), json!({ "env": env2 }))
        .await;
    assert_eq!(patched["latestRevisionNumber"], 2);
    let (_, activity) = s
        .get(&format!(
            "/api/companies/{cid}/activity?entityType=routine&entityId={rid}"
        ))
        .await;
    let updated = activity
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "routine.updated")
        .unwrap_or_else(|| panic!("{activity}"));
    assert_eq!(
        updated["details"]["env"]["changedKeys"],
        json!(["EXTRA", "PLAIN"])
    );
    s.ok_post(&format!("/api/routines/{rid}/run"), json!({}))
        .await;
    let runs = s.settled_runs(&cid, &aid, 2, 30).await;
    assert_eq!(runs[1]["status"], "succeeded", "{runs:?}");
    let got = std::fs::read_to_string(&out).unwrap();
    assert_eq!(got, format!("r2|routine|a|p|{secret_value}"));

    // Removing it: the next run has the project's and the agent's only.
    s.ok_patch(&format!("/api/routines/{rid}"), json!({ "env": null }))
        .await;
    s.ok_post(&format!("/api/routines/{rid}/run"), json!({}))
        .await;
    let runs = s.settled_runs(&cid, &aid, 3, 30).await;
    assert_eq!(runs[2]["status"], "succeeded", "{runs:?}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "|project|a|p|");

    // The secret's value is in no answer and no activity entry.
    for path in [
        format!("/api/routines/{rid}"),
        format!("/api/routines/{rid}/revisions"),
        format!("/api/routines/{rid}/runs"),
        routines.clone(),
        format!("/api/companies/{cid}/activity"),
    ] {
        let body = s.ok_get(&path).await;
        assert!(!body.to_string().contains(&secret_value), "{path}: {body}");
    }
}
