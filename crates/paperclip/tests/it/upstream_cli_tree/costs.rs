//! The work on a task (its runs, checkout and release), costs, budgets and
//! approvals.

use serde_json::json;

use super::{now, Tree};

#[tokio::test]
async fn task_runs_checkout_costs_budgets_and_approvals_work_against_us() {
    let Some((s, mut t)) = Tree::start().await else {
        return;
    };
    let company = s.company("Tree&Co").await;
    t.set("cid", &company);
    let cid = t.vars["cid"].clone();
    let chief = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Chief", "role": "ceo", "adapterType": "process",
                "adapterConfig": { "command": "true" } }),
        )
        .await;
    t.set("aid", &chief);
    let issue = s
        .issue(
            &cid,
            json!({ "title": "First", "status": "todo", "assigneeAgentId": chief["id"] }),
        )
        .await;
    t.set("iid", &issue);
    s.issue(
        &cid,
        json!({ "title": "Child step", "parentId": issue["id"] }),
    )
    .await;

    for c in [
        "issue runs {iid}",
        "issue live-runs {iid}",
        "issue active-run {iid}",
    ] {
        t.json(c).await;
    }
    t.json("issue checkout {iid} --agent-id {aid}").await;
    t.json("issue release {iid}").await;
    t.json("issue force-release {iid}").await;

    t.json(r#"cost event:create -C {cid} --payload-json {"agentId":"{aid}","issueId":"{iid}","provider":"anthropic","model":"claude-sonnet","inputTokens":10,"outputTokens":5,"costCents":12,"occurredAt":"NOW"}"#.replace("NOW", &now()).as_str())
        .await;
    for c in [
        "cost summary -C {cid}",
        "cost by-agent -C {cid}",
        "cost by-project -C {cid}",
        "cost by-provider -C {cid}",
        "cost window-spend -C {cid}",
        // Served from the agents' CLI reports: none yet, an empty list.
        "cost quota-windows -C {cid}",
    ] {
        t.json(c).await;
    }
    let by_model = t.json("cost by-agent-model -C {cid}").await;
    assert_eq!(by_model[0]["agentName"], "Chief", "{by_model}");
    assert_eq!(by_model[0]["model"], "claude-sonnet");
    assert_eq!(by_model[0]["costCents"], 12);
    let by_biller = t.json("cost by-biller -C {cid}").await;
    assert_eq!(by_biller[0]["biller"], "anthropic", "{by_biller}");
    assert_eq!(by_biller[0]["costCents"], 12, "{by_biller}");
    assert_eq!(by_biller[0]["providerCount"], 1, "{by_biller}");
    assert_eq!(by_biller[0]["modelCount"], 1, "{by_biller}");
    let tree = t.json("cost issue {iid}").await;
    assert_eq!(tree["costCents"], 12, "{tree}");
    assert_eq!(tree["issueCount"], 2, "the task and its child: {tree}");
    t.json(r#"budget company:update -C {cid} --payload-json {"budgetMonthlyCents":5000}"#)
        .await;
    t.json(r#"budget agent:update {aid} --payload-json {"budgetMonthlyCents":1000}"#)
        .await;
    let company = s.ok_get(&format!("/api/companies/{cid}")).await;
    assert_eq!(company["budgetMonthlyCents"], 5000, "{company}");
    let agent = s.ok_get(&format!("/api/agents/{}", t.vars["aid"])).await;
    assert_eq!(agent["budgetMonthlyCents"], 1000, "{agent}");

    t.keep(
        "apid",
        r#"approval create -C {cid} --type approve_ceo_strategy --payload {"plan":"grow"} --issue-ids {iid}"#,
        "id",
    )
    .await;
    for c in [
        "approval list -C {cid}",
        "approval get {apid}",
        "approval comment {apid} --body fine",
        "approval request-revision {apid} --decision-note more",
        "approval resubmit {apid}",
        "approval approve {apid} --decision-note good",
    ] {
        t.json(c).await;
    }
    t.keep(
        "apid2",
        r#"approval create -C {cid} --type approve_ceo_strategy --payload {"plan":"shrink"}"#,
        "id",
    )
    .await;
    let badges = t.json("sidebar badges -C {cid}").await;
    assert_eq!(badges["approvals"], 1, "one approval awaits: {badges}");
    t.json("approval reject {apid2} --decision-note no").await;
    for (id, status) in [("apid", "approved"), ("apid2", "rejected")] {
        let approval = s.ok_get(&format!("/api/approvals/{}", t.vars[id])).await;
        assert_eq!(approval["status"], status, "{approval}");
    }
    t.ran("task runs, costs, budgets, approvals", 28);
}
