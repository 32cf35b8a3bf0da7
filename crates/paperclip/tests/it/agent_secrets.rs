//! Agent-side secrets end to end on real runs: a run proposes a secret with
//! its value, the board decides, a later run of the same agent reads the
//! value; the value never shows in logs, events or activity, and nobody
//! else (another agent's run, an agent API key) gets it.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// One script for both runs: with nothing granted it proposes (and probes
/// the bad inputs); once granted it reads the value, prints its length and
/// hash, then carelessly echoes it (the run's redaction must hide it).
fn owner_script(value: &str) -> String {
    format!(
        r#"set -u
B=$(mktemp)
call() {{ curl -sS -o "$B" -w '%{{http_code}}' -X "$1" -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'content-type: application/json' "$PAPERCLIP_API_URL$2" -d "$3"; }}
echo "list=$(curl -sS -o "$B" -w '%{{http_code}}' -H "Authorization: Bearer $PAPERCLIP_API_KEY" "$PAPERCLIP_API_URL/api/agents/me/secrets")"
if grep -q '"secrets":\[\]' "$B"; then
  echo "missing=$(call POST /api/agents/me/secret-proposals '{{"kind":"secret","name":"deploy/token"}}') $(cat "$B")"
  echo "unknown=$(curl -sS -o /dev/null -w '%{{http_code}}' -H "Authorization: Bearer $PAPERCLIP_API_KEY" "$PAPERCLIP_API_URL/api/agents/me/secret-proposals/00000000-0000-7000-8000-000000000000")"
  echo "proposed=$(call POST /api/agents/me/secret-proposals '{{"kind":"secret","name":"deploy/token","key":"deploy-token","justification":"Deploys need it","value":"{value}"}}')"
  id=$(sed -n 's/^{{"id":"\([^"]*\)".*/\1/p' "$B")
  echo "binding=$(call POST /api/agents/me/secret-proposals "{{\"kind\":\"binding\",\"secretProposalId\":\"$id\",\"configPath\":\"env.DEPLOY_TOKEN\",\"justification\":\"Mine\"}}")"
else
  echo "read=$(call POST /api/agents/me/secrets/deploy-token/value '{{}}')"
  v=$(sed -n 's/.*"value":"\([^"]*\)".*/\1/p' "$B")
  echo "len=${{#v}} sha=$(printf %s "$v" | sha256sum | cut -c1-64)"
  t="${{DEPLOY_TOKEN:-}}"
  echo "envlen=${{#t}} envsha=$(printf %s "$t" | sha256sum | cut -c1-64)"
  echo "careless: $v"
fi
rm -f "$B"
"#
    )
}

const OTHER: &str = r#"echo "other=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" "$PAPERCLIP_API_URL/api/agents/me/secrets/deploy-token/value")"
"#;

/// Wakes the agent, waits for its run to end well, and returns the run's
/// id with its log as the API serves it.
async fn run(server: &TestServer, agent: &str) -> (String, String) {
    let (_, run) = server
        .post(&format!("/api/agents/{agent}/wakeup"), json!({}))
        .await;
    let id = run["id"].as_str().expect("a run").to_string();
    let done = server
        .wait_for(&format!("/api/heartbeat-runs/{id}"), 15, |r| {
            !matches!(r["status"].as_str(), Some("queued" | "running"))
        })
        .await;
    let log = server
        .ok_get(&format!("/api/heartbeat-runs/{id}/log"))
        .await
        .to_string();
    assert_eq!(done["status"], "succeeded", "{done}\n{log}");
    (id, log)
}

#[tokio::test]
async fn a_run_proposes_the_board_approves_and_a_later_run_reads_the_value() {
    let server = TestServer::start().await;
    let cid = server.company("Secret Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let value = format!("sv-{}", uuid::Uuid::new_v4().simple());
    let owner = server
        .script_agent(&cid, "Owner", &owner_script(&value), json!({}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let other = server.script_agent(&cid, "Other", OTHER, json!({})).await["id"]
        .as_str()
        .unwrap()
        .to_string();

    let (run1, log1) = run(&server, &owner).await;
    assert!(log1.contains("list=200"), "{log1}");
    assert!(
        log1.contains("missing=400") && log1.contains("justification"),
        "a missing field is 400 naming it: {log1}"
    );
    assert!(log1.contains("unknown=404"), "{log1}");
    assert!(log1.contains("proposed=201"), "{log1}");
    assert!(log1.contains("binding=201"), "{log1}");

    let pending = server
        .ok_get(&format!(
            "/api/companies/{cid}/secret-proposals?status=pending"
        ))
        .await;
    let list = pending.as_array().expect("a list");
    assert_eq!(list.len(), 2, "{pending}");
    let of = |kind: &str| {
        let p = list.iter().find(|p| p["kind"] == kind).expect(kind);
        assert_eq!(p["proposedByAgentId"], owner.as_str());
        p["id"].as_str().unwrap().to_string()
    };
    let (secret_pid, binding_pid) = (of("secret"), of("binding"));
    let base = format!("/api/companies/{cid}/secret-proposals");
    // The board sees both on the secrets page, with their buttons, and
    // never the proposed value.
    let prefix = server.ok_get(&format!("/api/companies/{cid}")).await["issuePrefix"]
        .as_str()
        .unwrap()
        .to_string();
    let page = server.page(&format!("/{prefix}/company/secrets")).await;
    assert!(page.contains("id=\"secret-proposals\""), "{page}");
    for id in [&secret_pid, &binding_pid] {
        assert!(
            page.contains(&format!("data-proposal-approve=\"{id}\"")),
            "{page}"
        );
    }
    assert!(page.contains("deploy/token") && page.contains("Deploys need it"));
    assert!(!page.contains(&value), "the proposed value is on the page");
    let (status, body) = server
        .post(&format!("{base}/{secret_pid}/reject"), json!({}))
        .await;
    assert_eq!(status, 422, "a rejection needs a reason: {body}");
    let (status, _) = server
        .post(
            &format!("{base}/00000000-0000-7000-8000-000000000000/approve"),
            json!({}),
        )
        .await;
    assert_eq!(status, 404);
    let (status, body) = server
        .post(&format!("{base}/{binding_pid}/approve"), json!({}))
        .await;
    assert_eq!(status, 409, "its secret is still pending: {body}");
    let (status, approved) = server
        .post(
            &format!("{base}/{binding_pid}/approve"),
            json!({ "cascade": true }),
        )
        .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["status"], "approved");
    let secret = server.ok_get(&format!("{base}?status=approved")).await;
    let secret = secret
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == secret_pid.as_str())
        .cloned()
        .expect("the cascade approved the secret proposal");
    let secret_id = secret["createdSecretId"]
        .as_str()
        .expect("a secret")
        .to_string();
    assert_eq!(approved["createdSecretId"], secret_id.as_str());
    let (status, _) = server
        .post(&format!("{base}/{secret_pid}/approve"), json!({}))
        .await;
    assert_eq!(status, 409, "deciding twice");
    let (status, _) = server
        .post(
            &format!("{base}/{binding_pid}/reject"),
            json!({ "reason": "late" }),
        )
        .await;
    assert_eq!(status, 409, "deciding twice");
    let page = server.page(&format!("/{prefix}/company/secrets")).await;
    assert!(
        !page.contains("secret-proposals"),
        "decided ones leave the page"
    );
    let secrets = server
        .ok_get(&format!("/api/companies/{cid}/secrets"))
        .await;
    assert!(
        secrets.to_string().contains(&secret_id),
        "the approval made a company secret: {secrets}"
    );

    let (run2, log2) = run(&server, &owner).await;
    let hash = hex::encode(Sha256::digest(value.as_bytes()));
    assert!(log2.contains("read=200"), "{log2}");
    assert!(
        log2.contains(&format!("len={} sha={hash}", value.len())),
        "the run read the right value: {log2}"
    );
    // The approved binding at `env.DEPLOY_TOKEN` is delivered in the run's
    // environment too.
    assert!(
        log2.contains(&format!("envlen={} envsha={hash}", value.len())),
        "{log2}"
    );
    assert!(log2.contains("careless: "), "{log2}");

    let (_, log3) = run(&server, &other).await;
    assert!(log3.contains("other=403"), "another agent's run: {log3}");
    let key = server.key(&owner).await;
    for (method, path) in [
        ("GET", "/api/agents/me/secrets"),
        ("POST", "/api/agents/me/secrets/deploy-token/value"),
        ("GET", "/api/agents/me/secret-proposals"),
    ] {
        let (status, body) = server.as_agent(&key, None, method, path, None).await;
        assert_eq!(status, 403, "an agent API key on {path}: {body}");
    }

    let mut seen = vec![("log1", log1), ("log2", log2), ("log3", log3)];
    for id in [&run1, &run2] {
        let events = server
            .ok_get(&format!("/api/heartbeat-runs/{id}/events?limit=1000"))
            .await;
        seen.push(("events", events.to_string()));
        seen.push((
            "stored log",
            common::run_logs::stored(&server, &cid, id)
                .await
                .unwrap_or_default(),
        ));
    }
    let activity: Value = server
        .ok_get(&format!("/api/companies/{cid}/activity?limit=1000"))
        .await;
    assert!(
        activity.to_string().contains("secret"),
        "reads are audited: {activity}"
    );
    seen.push(("activity", activity.to_string()));
    seen.push(("proposals", server.ok_get(&base).await.to_string()));
    for (what, text) in seen {
        assert!(
            !text.contains(&value),
            "the value shows in the {what}: {text}"
        );
    }
}
