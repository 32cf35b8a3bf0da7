//! Companies, goals, projects, activity, the dashboard, the inbox and the
//! caller's identity.

use super::Tree;

#[tokio::test]
async fn companies_goals_projects_activity_dashboard_and_identity_work_against_us() {
    let Some((s, mut t)) = Tree::start().await else {
        return;
    };
    t.keep(
        "cid",
        r#"company create --payload-json {"name":"Tree&Co","description":"every-command"}"#,
        "id",
    )
    .await;
    let cid = t.vars["cid"].clone();
    for c in [
        "company list",
        "company get {cid}",
        "company current -C {cid}",
        "company stats",
    ] {
        t.json(c).await;
    }
    t.json(r#"company update {cid} --payload-json {"description":"updated"}"#)
        .await;
    assert_eq!(
        s.ok_get(&format!("/api/companies/{cid}")).await["description"],
        "updated"
    );
    let branded = t
        .json(r#"company branding:update {cid} --payload-json {"name":"Tree&Co Branded"}"#)
        .await;
    assert_eq!(branded["name"], "Tree&Co Branded", "{branded}");
    assert_eq!(
        s.ok_get(&format!("/api/companies/{cid}")).await["name"],
        "Tree&Co Branded"
    );
    t.keep(
        "gid",
        "goal create -C {cid} --title Launch --level company",
        "id",
    )
    .await;
    for c in [
        "goal list -C {cid}",
        "goal get {gid}",
        "goal update {gid} --description better",
    ] {
        t.json(c).await;
    }
    let goal = s.ok_get(&format!("/api/goals/{}", t.vars["gid"])).await;
    assert_eq!(goal["description"], "better", "{goal}");
    t.keep(
        "pid",
        "project create -C {cid} --name Website --goal-ids {gid}",
        "id",
    )
    .await;
    for c in [
        "project list -C {cid}",
        "project get {pid}",
        "project update {pid} --description site",
    ] {
        t.json(c).await;
    }
    let project = s.ok_get(&format!("/api/projects/{}", t.vars["pid"])).await;
    assert_eq!(project["description"], "site", "{project}");
    assert_eq!(project["goalIds"][0], t.vars["gid"].as_str(), "{project}");

    // Activity of a task (the issue commands are in `issues.rs`).
    let issue = s.issue(&cid, serde_json::json!({ "title": "First" })).await;
    t.set("iid", &issue);
    t.json("activity list -C {cid}").await;
    t.json("activity issue {iid}").await;
    t.json(r#"activity create -C {cid} --payload-json {"actorId":"local-board","action":"tree.noted","entityType":"issue","entityId":"{iid}"}"#)
        .await;
    assert!(
        s.actions(&cid).await.iter().any(|a| a == "tree.noted"),
        "the activity row is stored"
    );
    t.json("dashboard get -C {cid}").await;
    t.json("inbox dismissals -C {cid}").await;
    let me = t.json("whoami").await;
    assert!(me.to_string().contains("local-board"), "{me}");
    t.json("health").await;

    t.json("goal delete {gid} --yes").await;
    t.json("project delete {pid} --yes").await;
    for gone in [
        format!("/api/goals/{}", t.vars["gid"]),
        format!("/api/projects/{}", t.vars["pid"]),
    ] {
        assert_eq!(s.get(&gone).await.0, 404, "{gone} is gone");
    }
    t.ran("companies, goals, projects, activity", 24);
}
