//! Issues: their fields, comments, children, labels, documents (revisions,
//! restore, locks) and their removal.

use serde_json::json;

use super::Tree;

#[tokio::test]
async fn issues_comments_children_labels_and_documents_work_against_us() {
    let Some((s, mut t)) = Tree::start().await else {
        return;
    };
    let company = s.company("Tree&Co").await;
    t.set("cid", &company);
    let cid = t.vars["cid"].clone();
    let chief = s.agent(&cid, "Chief", None).await;
    t.set("aid", &chief);
    let goal = s
        .ok_post(
            &format!("/api/companies/{cid}/goals"),
            json!({ "title": "Launch", "level": "company" }),
        )
        .await;
    t.set("gid", &goal);
    let project = s
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "Website", "goalIds": [goal["id"]] }),
        )
        .await;
    t.set("pid", &project);

    let issue = t
        .keep(
            "iid",
            "issue create -C {cid} --title First --description hello --priority high --project-id {pid} --goal-id {gid}",
            "id",
        )
        .await;
    let ident = issue["identifier"].as_str().unwrap().to_string();
    t.vars.insert("ident", ident.clone());
    t.json("issue update {iid} --status todo --assignee-agent-id {aid} --comment assigning")
        .await;
    let stored = s.ok_get(&format!("/api/issues/{ident}")).await;
    assert_eq!(stored["status"], "todo", "{stored}");
    assert_eq!(
        stored["assigneeAgentId"],
        t.vars["aid"].as_str(),
        "{stored}"
    );
    t.keep("cmid", "issue comment {iid} --body noted", "id")
        .await;
    for c in [
        "issue list -C {cid}",
        "issue list -C {cid} --status todo,backlog",
        "issue get {ident}",
        "issue comments {iid}",
        "issue comment:get {iid} {cmid}",
        "issue heartbeat-context {iid}",
        "issue approvals {iid}",
    ] {
        t.json(c).await;
    }
    let child = t
        .json(r#"issue child:create {iid} --payload-json {"title":"Child step"}"#)
        .await;
    assert_eq!(child["parentId"], t.vars["iid"].as_str(), "{child}");
    assert_eq!(
        child["projectId"],
        t.vars["pid"].as_str(),
        "the child inherits the project"
    );
    assert_eq!(child["goalId"], t.vars["gid"].as_str(), "and the goal");
    t.keep(
        "lid",
        "issue label:create -C {cid} --name bug --color #ff0000",
        "id",
    )
    .await;
    t.json("issue label:list -C {cid}").await;

    t.json("issue document:put {iid} plan --title Plan --body first")
        .await;
    t.json("issue document:put {iid} plan --title Plan --body second")
        .await;
    let revisions = t.json("issue document:revisions {iid} plan").await;
    let first = revisions
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["body"] == "first")
        .unwrap_or_else(|| panic!("{revisions}"));
    t.vars
        .insert("drev", first["id"].as_str().unwrap().to_string());
    t.json("issue document:restore {iid} plan {drev}").await;
    let doc = t.json("issue document:get {iid} plan").await;
    assert_eq!(doc["body"], "first", "restored: {doc}");
    assert_eq!(doc["latestRevisionNumber"], 3, "as a new revision: {doc}");
    t.json("issue documents {iid}").await;
    let locked = t.json("issue document:lock {iid} plan").await;
    assert!(locked["lockedAt"].is_string(), "{locked}");
    let refused = t
        .cli
        .run(&[
            "issue",
            "document:put",
            &t.vars["iid"],
            "plan",
            "--body",
            "third",
        ])
        .await;
    assert!(
        !refused.ok,
        "a locked document refuses writes: {}",
        refused.stdout
    );
    t.json("issue document:unlock {iid} plan").await;

    t.json("issue delete {iid} --yes").await;
    t.json("issue label:delete {lid}").await;
    let (status, _) = s.get(&format!("/api/issues/{ident}")).await;
    assert_eq!(status, 404, "the issue is gone");
    t.ran("issues, comments, labels, documents", 23);
}
