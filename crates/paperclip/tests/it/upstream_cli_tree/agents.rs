//! Agents: their configuration and its revisions, runtime state, levers,
//! permissions, wakes, hires, the org, their removal; and the commands we do
//! not serve yet.

use super::Tree;

#[tokio::test]
async fn agents_configuration_hires_org_and_not_yet_served_commands_work_against_us() {
    let Some((s, mut t)) = Tree::start().await else {
        return;
    };
    let company = s.company("Tree&Co").await;
    t.set("cid", &company);
    let cid = t.vars["cid"].clone();

    t.keep(
        "aid",
        r#"agent create -C {cid} --payload-json {"name":"Chief","role":"ceo","adapterType":"process","adapterConfig":{"command":"true"}}"#,
        "id",
    )
    .await;
    t.keep(
        "bid",
        r#"agent create -C {cid} --payload-json {"name":"Builder","role":"cto","reportsTo":"{aid}","adapterType":"process","adapterConfig":{"command":"true"}}"#,
        "id",
    )
    .await;
    t.json(r#"agent update {bid} --payload-json {"title":"Lead"}"#)
        .await;
    let revisions = t.json("agent config-revisions {bid}").await;
    t.vars
        .insert("rev", revisions[0]["id"].as_str().unwrap().to_string());
    for c in [
        "agent list -C {cid}",
        "agent get {aid}",
        "agent configuration {aid}",
        "agent config-revision:get {bid} {rev}",
        "agent config-revision:rollback {bid} {rev}",
        "agent runtime-state {aid}",
        "agent task-sessions {aid}",
        "agent runtime-state:reset-session {aid}",
        "agent pause {bid}",
        "agent resume {bid}",
        r#"agent permissions:update {bid} --payload-json {"canCreateAgents":false,"canAssignTasks":true}"#,
        "agent-config list -C {cid}",
    ] {
        t.json(c).await;
    }
    let configs = s
        .ok_get(&format!("/api/companies/{cid}/agent-configurations"))
        .await;
    assert_eq!(configs.as_array().unwrap().len(), 2, "{configs}");
    assert_eq!(configs[1]["reportsTo"], t.vars["aid"].as_str());
    let woken = t.json("agent wake {aid} --reason tree").await;
    assert!(
        woken["id"].is_string() || woken["status"].is_string(),
        "{woken}"
    );
    t.json("agent heartbeat:invoke {aid}").await;

    t.json(r#"agent hire -C {cid} --payload-json {"name":"Hire","role":"engineer","adapterType":"process","adapterConfig":{"command":"true"}}"#)
        .await;
    t.json("org get -C {cid}").await;

    t.json("agent terminate {bid}").await;
    t.json("agent delete {bid} --yes").await;
    let (status, _) = s.get(&format!("/api/agents/{}", t.vars["bid"])).await;
    assert_eq!(status, 404, "the agent is gone");

    t.not_yet_fails().await;
    t.ran("agents, hires, org", 22);
}
