//! Company export and import (issue 40): a company with agents (one with a
//! secret ref), goals, a project, tasks with a thread and a routine is
//! exported on SQLite, and imported into a fresh server on the other engine
//! (Postgres when `PAPERCLIP_TEST_PG_URL` is set): the secret's value is
//! nowhere in the package, the dry run lists the changes and writes nothing,
//! bad packages are 400s naming the file and field, a refused import leaves
//! nothing, the round trip keeps what it claims, an imported process agent
//! finishes a task, and the CLI exports, dry-runs and imports a template.

use crate::common;

use common::task_worker::{CHECKOUT, MARK_DONE, SCRIPT_START};
use common::{until, TestServer};
use serde_json::{json, Value};

fn names(list: &Value, key: &str) -> Vec<String> {
    let mut v: Vec<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x[key].as_str().unwrap_or_default().to_string())
        .collect();
    v.sort();
    v
}

async fn source_company(
    src: &TestServer,
    secret_value: &str,
    plain_secret: &str,
) -> (String, Value) {
    let cid = src.company("Port Source").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let secret = src
        .ok_post(
            &format!("/api/companies/{cid}/secrets"),
            json!({ "name": "Deploy Token", "value": secret_value }),
        )
        .await;
    let ceo = src
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Chief", "role": "ceo", "title": "CEO", "adapterType": "process",
                "adapterConfig": { "command": "true", "env": {
                    "DEPLOY_TOKEN": common::secrets::secret_ref(secret["id"].as_str().unwrap()),
                    "MODE": "fast",
                    "OPENAI_API_KEY": plain_secret,
                } },
                "budgetMonthlyCents": 1500 }),
        )
        .await;
    let ceo_id = ceo["id"].as_str().unwrap().to_string();
    let script = format!("{SCRIPT_START}{CHECKOUT}\n{MARK_DONE}\n");
    let worker = src
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Worker", "role": "engineer", "reportsTo": ceo_id, "adapterType": "process",
                "adapterConfig": { "command": "sh", "args": ["-c", script], "graceSec": 2 } }),
        )
        .await;
    let goal = src
        .ok_post(
            &format!("/api/companies/{cid}/goals"),
            json!({ "title": "Ship v1", "level": "company", "status": "active" }),
        )
        .await;
    let project = src
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "Website", "description": "The public site", "goalId": goal["id"], "leadAgentId": ceo_id, "status": "in_progress" }),
        )
        .await;
    let design = src
        .issue(&cid, json!({ "title": "Design the page", "description": "Hero and footer", "status": "backlog",
            "priority": "high", "projectId": project["id"], "assigneeAgentId": ceo_id }))
        .await;
    src.issue(
        &cid,
        json!({ "title": "Write the copy", "status": "backlog", "parentId": design["id"],
        "blockedByIssueIds": [design["id"]], "projectId": project["id"] }),
    )
    .await;
    for body in [
        "First thought: keep it short.",
        "Second: \"quotes\" and a colon: fine",
    ] {
        src.ok_post(
            &format!("/api/issues/{}/comments", design["id"].as_str().unwrap()),
            json!({ "body": body }),
        )
        .await;
    }
    let routine = src
        .ok_post(
            &format!("/api/companies/{cid}/routines"),
            json!({ "title": "Daily standup", "assigneeAgentId": ceo_id }),
        )
        .await;
    src.ok_post(
        &format!("/api/routines/{}/triggers", routine["id"].as_str().unwrap()),
        json!({ "kind": "schedule", "cronExpression": "0 9 * * *", "timezone": "UTC" }),
    )
    .await;
    let _ = worker;
    src.put(
        &format!("/api/agents/{ceo_id}/instructions-bundle/file"),
        json!({ "path": "AGENTS.md", "content": "Lead the company.\nKEEP-THIS-LINE\n" }),
    )
    .await;
    let skill = src
        .ok_post(
            &format!("/api/companies/{cid}/skills/import"),
            json!({ "files": { "SKILL.md": "---\nname: Page Review\ndescription: Reviews pages\n---\n\nCheck the links.\n", "notes/tips.md": "Tip one\n" } }),
        )
        .await;
    let slug = skill["imported"][0]["slug"].as_str().unwrap().to_string();
    src.ok_post(
        &format!("/api/agents/{ceo_id}/skills/sync"),
        json!({ "mode": "add", "desiredSkills": [slug] }),
    )
    .await;
    (cid, design)
}

fn import_body(files: &Value, target: Value) -> Value {
    json!({ "source": { "type": "inline", "files": files }, "target": target })
}

#[tokio::test]
async fn a_company_moves_between_instances_and_engines_as_a_package() {
    let data_dir = std::env::temp_dir().join(format!("paperclip-test-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&data_dir).unwrap();
    let src = TestServer::start_with(data_dir, None, &[]).await;
    let secret_value = format!("s3cret-{}", uuid::Uuid::new_v4().simple());
    let plain_secret = format!("sk-plain-{}", uuid::Uuid::new_v4().simple());
    let (cid, _) = source_company(&src, &secret_value, &plain_secret).await;

    let exported = src
        .ok_post(
            &format!("/api/companies/{cid}/exports"),
            json!({ "include": { "agents": true, "projects": true, "issues": true } }),
        )
        .await;
    let text = exported.to_string();
    assert!(
        !text.contains(&secret_value) && !text.contains(&plain_secret),
        "a secret value is in the package"
    );
    let files = &exported["files"];
    for path in [
        "COMPANY.md",
        ".paperclip.yaml",
        "agents/chief/AGENTS.md",
        "agents/worker/AGENTS.md",
        "projects/website/PROJECT.md",
        "tasks/daily-standup/TASK.md",
        "README.md",
    ] {
        assert!(
            files[path].is_string(),
            "{path} missing: {:?}",
            files.as_object().unwrap().keys().collect::<Vec<_>>()
        );
    }
    assert!(files["agents/chief/AGENTS.md"]
        .as_str()
        .unwrap()
        .contains("KEEP-THIS-LINE"));
    assert!(files["agents/worker/AGENTS.md"]
        .as_str()
        .unwrap()
        .contains("reportsTo: \"chief\""));
    let ext = files[".paperclip.yaml"].as_str().unwrap();
    assert!(
        ext.contains("schema: \"paperclip/v1\"") && ext.contains("cronExpression: \"0 9 * * *\""),
        "{ext}"
    );
    let inputs = exported["manifest"]["envInputs"].as_array().unwrap();
    let input = |k: &str| {
        inputs
            .iter()
            .find(|i| i["key"] == k)
            .unwrap_or_else(|| panic!("no input {k}: {inputs:?}"))
            .clone()
    };
    assert_eq!(
        (
            input("DEPLOY_TOKEN")["kind"].clone(),
            input("DEPLOY_TOKEN")["defaultValue"].clone()
        ),
        (json!("secret"), json!(""))
    );
    assert_eq!(input("OPENAI_API_KEY")["kind"], "secret");
    assert_eq!(input("MODE")["defaultValue"], "fast");
    // The export preview lists the files by kind.
    let preview = src
        .ok_post(&format!("/api/companies/{cid}/exports/preview"), json!({}))
        .await;
    assert_eq!(preview["counts"]["agents"], 2);

    let dst = TestServer::start().await;
    let before = dst.ok_get("/api/companies").await.as_array().unwrap().len();
    // Bad packages: the file and field are named; nothing is written.
    let mut broken = files.clone();
    broken.as_object_mut().unwrap().remove("COMPANY.md");
    let (status, body) = dst
        .post(
            "/api/companies/import/preview",
            import_body(&broken, json!({ "mode": "new_company" })),
        )
        .await;
    assert_eq!(
        (status.as_u16(), body["details"][0]["path"][0].clone()),
        (400, json!("COMPANY.md")),
        "{body}"
    );
    let mut broken = files.clone();
    broken["agents/cto/AGENTS.md"] = json!("---\ntitle: \"CTO\"\n---\n");
    let (status, body) = dst
        .post(
            "/api/companies/import",
            import_body(&broken, json!({ "mode": "new_company" })),
        )
        .await;
    assert_eq!(
        (status.as_u16(), body["details"][0]["path"].clone()),
        (400, json!(["agents/cto/AGENTS.md", "name"])),
        "{body}"
    );
    let mut broken = files.clone();
    broken[".paperclip.yaml"] = json!(ext.replace("status: \"backlog\"", "status: \"someday\""));
    let (status, body) = dst
        .post(
            "/api/companies/import",
            import_body(&broken, json!({ "mode": "new_company" })),
        )
        .await;
    assert_eq!(status.as_u16(), 400, "{body}");
    // A refusal late in the import (a routine's schedule) rolls back all of it.
    let mut broken = files.clone();
    broken[".paperclip.yaml"] = json!(ext.replace("0 9 * * *", "every morning"));
    let (status, body) = dst
        .post(
            "/api/companies/import",
            import_body(&broken, json!({ "mode": "new_company" })),
        )
        .await;
    assert!(status.is_client_error(), "{status} {body}");
    let huge =
        json!({ "COMPANY.md": format!("---\nname: \"Big\"\n---\n{}", "x".repeat(1_100_000)) });
    let (status, _) = dst
        .post(
            "/api/companies/import",
            import_body(&huge, json!({ "mode": "new_company" })),
        )
        .await;
    assert_eq!(status.as_u16(), 413);

    // The dry run lists what would be created and writes nothing.
    let dry = dst
        .ok_post(
            "/api/companies/import/preview",
            import_body(files, json!({ "mode": "new_company" })),
        )
        .await;
    assert_eq!(dry["plan"]["companyAction"], "create");
    assert_eq!(
        names(&dry["plan"]["agentPlans"], "plannedName"),
        ["Chief", "Worker"]
    );
    assert_eq!(
        dry["plan"]["issuePlans"].as_array().unwrap().len(),
        3,
        "{}",
        dry["plan"]
    );
    assert_eq!(
        dst.ok_get("/api/companies").await.as_array().unwrap().len(),
        before
    );

    let result = dst
        .ok_post(
            "/api/companies/import",
            import_body(files, json!({ "mode": "new_company" })),
        )
        .await;
    assert_eq!(result["company"]["action"], "created");
    let nid = result["company"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        dst.ok_get("/api/companies").await.as_array().unwrap().len(),
        before + 1
    );
    assert_eq!(result["commentCount"], 2);

    // What the package claims to carry arrived.
    let agents = dst.ok_get(&format!("/api/companies/{nid}/agents")).await;
    assert_eq!(names(&agents, "name"), ["Chief", "Worker"]);
    let agent = |n: &str| {
        agents
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == n)
            .unwrap()
            .clone()
    };
    let (chief, worker) = (agent("Chief"), agent("Worker"));
    assert_eq!(
        (
            chief["role"].clone(),
            chief["title"].clone(),
            chief["budgetMonthlyCents"].clone()
        ),
        (json!("ceo"), json!("CEO"), json!(1500))
    );
    assert_eq!(worker["reportsTo"], chief["id"]);
    let env = &chief["adapterConfig"]["env"];
    assert_eq!(env["MODE"]["value"], "fast", "{env}");
    assert!(
        env.get("DEPLOY_TOKEN").is_none() && env.get("OPENAI_API_KEY").is_none(),
        "{env}"
    );
    let goals = dst.ok_get(&format!("/api/companies/{nid}/goals")).await;
    assert_eq!(
        (goals[0]["title"].clone(), goals[0]["level"].clone()),
        (json!("Ship v1"), json!("company"))
    );
    let projects = dst.ok_get(&format!("/api/companies/{nid}/projects")).await;
    assert_eq!(
        (
            projects[0]["name"].clone(),
            projects[0]["goalId"].clone(),
            projects[0]["leadAgentId"].clone()
        ),
        (
            json!("Website"),
            goals[0]["id"].clone(),
            chief["id"].clone()
        )
    );
    let issues = dst.ok_get(&format!("/api/companies/{nid}/issues")).await;
    let issue = |t: &str| {
        issues
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["title"] == t)
            .unwrap_or_else(|| panic!("no task {t}"))
            .clone()
    };
    let (design, copy) = (issue("Design the page"), issue("Write the copy"));
    assert_eq!(
        (
            design["priority"].clone(),
            design["assigneeAgentId"].clone(),
            design["projectId"].clone()
        ),
        (
            json!("high"),
            chief["id"].clone(),
            projects[0]["id"].clone()
        )
    );
    assert_eq!(copy["parentId"], design["id"]);
    let copy_full = dst
        .ok_get(&format!("/api/issues/{}", copy["id"].as_str().unwrap()))
        .await;
    assert_eq!(copy_full["blockedBy"][0]["id"], design["id"], "{copy_full}");
    let thread = dst
        .ok_get(&format!(
            "/api/issues/{}/comments?order=asc",
            design["id"].as_str().unwrap()
        ))
        .await;
    let mut bodies = names(&thread, "body");
    bodies.sort();
    assert_eq!(
        bodies,
        [
            "First thought: keep it short.",
            "Second: \"quotes\" and a colon: fine"
        ]
    );
    let routines = dst.ok_get(&format!("/api/companies/{nid}/routines")).await;
    let rid = routines[0]["id"].as_str().unwrap();
    let detail = dst.ok_get(&format!("/api/routines/{rid}")).await;
    assert_eq!(
        (
            detail["title"].clone(),
            detail["assigneeAgentId"].clone(),
            detail["triggers"][0]["cronExpression"].clone()
        ),
        (
            json!("Daily standup"),
            chief["id"].clone(),
            json!("0 9 * * *")
        )
    );
    assert!(dst
        .actions(&nid)
        .await
        .contains(&"company.imported".to_string()));
    // Instructions: AGENTS.md's body became the agent's managed bundle.
    let (status, entry) = dst
        .get(&format!(
            "/api/agents/{}/instructions-bundle/file?path=AGENTS.md",
            chief["id"].as_str().unwrap()
        ))
        .await;
    assert!(
        status.is_success()
            && entry["content"]
                .as_str()
                .unwrap_or_default()
                .contains("KEEP-THIS-LINE"),
        "{entry}"
    );
    // Skills: the library's files and the agent's desired skills.
    let skills = dst.ok_get(&format!("/api/companies/{nid}/skills")).await;
    assert_eq!(names(&skills, "name"), ["Page Review"], "{skills}");
    let src_chief = src
        .ok_get(&format!("/api/companies/{cid}/agents"))
        .await
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "Chief")
        .unwrap()
        .clone();
    let desired = &src_chief["adapterConfig"]["paperclipSkillSync"]["desiredSkills"];
    assert_eq!(desired.as_array().map(Vec::len), Some(1), "{src_chief}");
    assert_eq!(
        &chief["adapterConfig"]["paperclipSkillSync"]["desiredSkills"],
        desired
    );
    let skill_detail = dst
        .ok_get(&format!(
            "/api/companies/{nid}/skills/{}",
            skills[0]["id"].as_str().unwrap()
        ))
        .await;
    assert!(
        skill_detail["fileInventory"]
            .to_string()
            .contains("notes/tips.md"),
        "{skill_detail}"
    );

    // A second import into it: the dry run skips what exists, writes nothing.
    let mut into = import_body(
        files,
        json!({ "mode": "existing_company", "companyId": nid }),
    );
    into["collisionStrategy"] = json!("skip");
    let again = dst
        .ok_post(
            &format!("/api/companies/{nid}/imports/preview"),
            into.clone(),
        )
        .await;
    assert_eq!(
        names(&again["plan"]["agentPlans"], "action"),
        ["skip", "skip"]
    );
    into["collisionStrategy"] = json!("replace");
    let (status, _) = dst
        .post(&format!("/api/companies/{nid}/imports/apply"), into)
        .await;
    assert_eq!(status.as_u16(), 403);
    assert_eq!(
        dst.ok_get(&format!("/api/companies/{nid}/agents"))
            .await
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // The imported company works: its process agent finishes a task.
    let task = dst
        .issue(
            &nid,
            json!({ "title": "Prove it works", "status": "todo", "assigneeAgentId": worker["id"] }),
        )
        .await;
    let path = format!("/api/issues/{}", task["id"].as_str().unwrap());
    until(30, "the imported worker to finish its task", async || {
        (dst.ok_get(&path).await["status"] == "done").then_some(())
    })
    .await;

    // The CLI: export to a folder, a dry run of it, and a starter template.
    let ctx = common::cli::context_file(&src);
    let out_dir = src.data_dir.join("pkg");
    let said = common::cli::ok(
        &src.base,
        &ctx,
        &[
            "company",
            "export",
            "Port Source",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(
        said.contains("Wrote") && out_dir.join("agents/chief/AGENTS.md").is_file(),
        "{said}"
    );
    let dctx = common::cli::context_file(&dst);
    let said = common::cli::ok(
        &dst.base,
        &dctx,
        &["company", "import", out_dir.to_str().unwrap(), "--dry-run"],
    );
    assert!(
        said.contains("Agents:   2 create") && said.contains("Dry run"),
        "{said}"
    );
    let count = dst.ok_get("/api/companies").await.as_array().unwrap().len();
    let said = common::cli::ok(
        &dst.base,
        &dctx,
        &["company", "import", "--template", "solo-dev"],
    );
    assert!(said.contains("Imported into Solo Dev Shop"), "{said}");
    assert_eq!(
        dst.ok_get("/api/companies").await.as_array().unwrap().len(),
        count + 1
    );
}
