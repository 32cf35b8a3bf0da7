//! Company secrets: created, listed, rotated, renamed and deleted through
//! upstream's routes and shapes; sealed at rest under the master key; their
//! value reaches only a run's child environment (an agent's `secret_ref`
//! env binding), never a response, live event, activity entry, revision,
//! run log, the database or the server's own log.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::secrets::{
    assert_clean, files_under, lines, logged_server, postgres_dump, run, secret_ref, token_agent,
    value, LiveCapture,
};
use common::TestServer;
use serde_json::{json, Value};

#[tokio::test]
async fn secrets_round_trip_in_upstream_shapes_and_their_value_reaches_only_the_run() {
    let (s, log) = logged_server(&[]).await;
    let company = s.company("Vault Co").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let live = LiveCapture::start(&s, &cid).await;
    let (first, second) = (value("first"), value("second"));
    let all = [first.as_str(), second.as_str()];
    let mut answers = String::new();

    let created = s
        .ok_post(
            &format!("/api/companies/{cid}/secrets"),
            json!({ "name": "GitHub Token", "value": first, "description": "deploys" }),
        )
        .await;
    answers.push_str(&created.to_string());
    let mut fields: Vec<&str> = created
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "companyId",
            "createdAt",
            "createdByAgentId",
            "createdByUserId",
            "description",
            "id",
            "key",
            "lastRotatedAt",
            "latestVersion",
            "managedMode",
            "name",
            "provider",
            "status",
            "updatedAt"
        ],
        "{created}"
    );
    assert_eq!(created["key"], "github-token");
    assert_eq!(created["provider"], "local_encrypted");
    assert_eq!(created["managedMode"], "paperclip_managed");
    assert_eq!(created["status"], "active");
    assert_eq!(created["latestVersion"], 1);
    assert_eq!(created["createdByUserId"], "local-board");
    let sid = created["id"].as_str().unwrap().to_string();

    // Refusals: each names its field or cause and writes nothing.
    let secrets_path = format!("/api/companies/{cid}/secrets");
    let refusals = [
        (
            json!({ "name": "GitHub Token", "value": "other-value" }),
            409,
            "already exists",
        ),
        (
            json!({ "name": "Other", "key": "github-token", "value": "x1" }),
            409,
            "key already exists",
        ),
        (json!({ "name": "No value" }), 400, "value"),
        (json!({ "name": "Blank", "value": "   " }), 400, "value"),
        (
            json!({ "name": "Bad key", "key": "has space", "value": "x1" }),
            400,
            "key",
        ),
        (json!({ "name": "", "value": "x1" }), 400, "name"),
        (
            json!({ "name": "Huge", "value": "v".repeat(70_000) }),
            400,
            "value",
        ),
        (
            json!({ "name": "Vaulted", "value": "x1", "provider": "vault" }),
            400,
            "provider",
        ),
    ];
    for (body, status, needle) in refusals {
        let (got, answer) = s.post(&secrets_path, body.clone()).await;
        assert_eq!(got.as_u16(), status, "{body}: {answer}");
        assert!(answer.to_string().contains(needle), "{body}: {answer}");
    }

    // Agents read the catalog (ids and names), not the list, and change nothing.
    let reader = s.agent(&cid, "Reader", None).await;
    let key = s.key(reader["id"].as_str().unwrap()).await;
    let (status, catalog) = s
        .as_agent(&key, None, "GET", &format!("{secrets_path}/catalog"), None)
        .await;
    assert_eq!(status, 200, "{catalog}");
    assert_eq!(
        catalog,
        json!([{ "id": sid, "name": "GitHub Token", "key": "github-token", "status": "active" }])
    );
    for (method, path) in [
        ("GET", secrets_path.clone()),
        ("POST", secrets_path.clone()),
        ("PATCH", format!("/api/secrets/{sid}")),
        ("POST", format!("/api/secrets/{sid}/rotate")),
        ("DELETE", format!("/api/secrets/{sid}")),
    ] {
        let body = json!({ "name": "Mine", "value": "agent-written" });
        let (status, answer) = s.as_agent(&key, None, method, &path, Some(body)).await;
        assert_eq!(status, 403, "{method} {path}: {answer}");
    }
    let ghost = uuid::Uuid::new_v4();
    for (method, path) in [
        ("PATCH", format!("/api/secrets/{ghost}")),
        ("POST", format!("/api/secrets/{ghost}/rotate")),
        ("DELETE", format!("/api/secrets/{ghost}")),
        ("PATCH", "/api/secrets/not-a-uuid".to_string()),
    ] {
        let (status, answer) = s
            .request(method, &path, Some(json!({ "value": "x1" })))
            .await;
        assert_eq!(status, 404, "{method} {path}: {answer}");
    }

    // A process agent bound to the latest version sees the value at spawn.
    let out = s.data_dir.join("seen-by-runs.txt");
    let aid = token_agent(&s, &cid, "Deployer", secret_ref(&sid), &out).await;
    let first_run = run(&s, &cid, &aid, 1).await;
    assert_eq!(first_run["status"], "succeeded", "{first_run}");
    assert_eq!(lines(&out), std::slice::from_ref(&first));

    // Rotation: version 2, taken by the next run.
    let rotated = s
        .ok_post(
            &format!("/api/secrets/{sid}/rotate"),
            json!({ "value": second }),
        )
        .await;
    answers.push_str(&rotated.to_string());
    assert_eq!(rotated["latestVersion"], 2);
    assert!(rotated["lastRotatedAt"].is_string());
    let (status, answer) = s
        .post(&format!("/api/secrets/{sid}/rotate"), json!({}))
        .await;
    assert_eq!(status, 400, "{answer}");
    let second_run = run(&s, &cid, &aid, 2).await;
    assert_eq!(second_run["status"], "succeeded", "{second_run}");
    assert_eq!(lines(&out), [first.clone(), second.clone()]);

    // A reference pinned to version 1 keeps it after the rotation.
    let pinned = s
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "adapterConfig": { "command": "sh",
                "args": [created_script(&s, &aid).await], "env": {
                "MY_TOKEN": { "type": "secret_ref", "secretId": sid, "version": 1 },
                "OUT": out.to_str().unwrap() } } }),
        )
        .await;
    answers.push_str(&pinned.to_string());
    let third_run = run(&s, &cid, &aid, 3).await;
    assert_eq!(third_run["status"], "succeeded", "{third_run}");
    assert_eq!(lines(&out)[2], first);

    let patched = s
        .ok_patch(
            &format!("/api/secrets/{sid}"),
            json!({ "name": "Deploy Token", "key": "deploy_token", "description": null }),
        )
        .await;
    answers.push_str(&patched.to_string());
    assert_eq!(
        (&patched["name"], &patched["key"], &patched["description"]),
        (&json!("Deploy Token"), &json!("deploy_token"), &Value::Null)
    );
    let list = s.ok_get(&secrets_path).await;
    answers.push_str(&list.to_string());
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["latestVersion"], 2);

    // What runs left behind hides the value: logs, events, the run rows.
    for r in [&first_run, &second_run, &third_run] {
        let id = r["id"].as_str().unwrap();
        for path in [
            format!("/api/heartbeat-runs/{id}"),
            format!("/api/heartbeat-runs/{id}/log"),
            format!("/api/heartbeat-runs/{id}/events"),
        ] {
            let body = s.ok_get(&path).await.to_string();
            assert_clean(&path, &body, &all);
            if path.ends_with("/log") {
                assert!(body.contains("token=[REDACTED]"), "{body}");
            }
        }
    }
    let revisions = s
        .ok_get(&format!("/api/agents/{aid}/config-revisions"))
        .await;
    assert!(revisions.to_string().contains(&sid), "{revisions}");
    for path in [
        format!("/api/agents/{aid}"),
        format!("/api/agents/{aid}/config-revisions"),
        format!("/api/companies/{cid}/activity?limit=1000"),
        format!("/api/companies/{cid}/heartbeat-runs"),
        secrets_path.clone(),
    ] {
        assert_clean(&path, &s.ok_get(&path).await.to_string(), &all);
    }

    let (status, gone) = s.delete(&format!("/api/secrets/{sid}")).await;
    assert_eq!((status.as_u16(), gone), (200, json!({ "ok": true })));
    assert_eq!(s.ok_get(&secrets_path).await, json!([]));
    let (status, _) = s.delete(&format!("/api/secrets/{sid}")).await;
    assert_eq!(status, 404);
    let actions = s.actions(&cid).await;
    for action in [
        "secret.created",
        "secret.rotated",
        "secret.updated",
        "secret.deleted",
    ] {
        assert!(
            actions.iter().any(|a| a == action),
            "{action} in {actions:?}"
        );
    }

    s.ok_post(
        &format!("/api/companies/{cid}/goals"),
        json!({ "title": "end-of-changes" }),
    )
    .await;
    let live = live.until("end-of-changes").await;
    assert!(live.contains("secret.rotated"), "{live}");
    assert_clean("live events", &live, &all);
    assert_clean("answers", &answers, &all);

    // At rest: the database and every file the server wrote hold ciphertext
    // only (the runs' own output file aside), and its log never the value.
    let postgres = s.database_url.clone();
    let stdout = s.stdout_after.lock().unwrap().join("\n");
    assert_clean("server stdout", &stdout, &all);
    let mut files = Vec::new();
    files_under(&s.data_dir, &[&out], &mut files);
    assert!(files.iter().any(|(p, _)| p.ends_with("secrets/master.key")));
    for (path, bytes) in &files {
        for v in all {
            assert!(
                !bytes.windows(v.len()).any(|w| w == v.as_bytes()),
                "{} holds a secret value",
                path.display()
            );
        }
    }
    if let Some(url) = &postgres {
        let dump = postgres_dump(url).await;
        assert!(
            dump.contains("local_encrypted"),
            "the dump reads the secrets table"
        );
        assert_clean("the Postgres database", &dump, &all);
    }
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("DEBUG") || logged.contains("INFO"),
        "debug logging was on"
    );
    assert_clean("the server's log", &logged, &all);
    drop(s);
    std::fs::remove_file(&log).unwrap();
}

/// The script path an agent was made with (to keep it when patching its env).
async fn created_script(s: &TestServer, aid: &str) -> String {
    let agent = s.ok_get(&format!("/api/agents/{aid}")).await;
    agent["adapterConfig"]["args"][0]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn a_secret_of_another_company_a_deleted_or_a_disabled_one_fails_the_run_by_name() {
    let s = TestServer::start().await;
    let ours = s.company("Ours").await["id"].as_str().unwrap().to_string();
    let theirs = s.company("Theirs").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let secret_value = value("theirs");
    let foreign = s
        .ok_post(
            &format!("/api/companies/{theirs}/secrets"),
            json!({ "name": "Their token", "value": secret_value }),
        )
        .await;
    let foreign_id = foreign["id"].as_str().unwrap();
    let out = s.data_dir.join("seen.txt");
    let thief = token_agent(&s, &ours, "Thief", secret_ref(foreign_id), &out).await;
    let failed = run(&s, &ours, &thief, 1).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["errorCode"], "secret_unavailable", "{failed}");
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains("env MY_TOKEN") && error.contains("not found"),
        "{error}"
    );
    assert!(!out.exists(), "nothing was spawned");

    let own = s
        .ok_post(
            &format!("/api/companies/{ours}/secrets"),
            json!({ "name": "Our token", "value": value("ours") }),
        )
        .await;
    let own_id = own["id"].as_str().unwrap().to_string();
    let user = token_agent(&s, &ours, "User", secret_ref(&own_id), &out).await;
    s.ok_patch(
        &format!("/api/secrets/{own_id}"),
        json!({ "status": "disabled" }),
    )
    .await;
    let disabled = run(&s, &ours, &user, 1).await;
    assert_eq!(disabled["status"], "failed", "{disabled}");
    let error = disabled["error"].as_str().unwrap();
    assert!(
        error.contains("env MY_TOKEN") && error.contains("disabled"),
        "{error}"
    );

    s.ok_patch(
        &format!("/api/secrets/{own_id}"),
        json!({ "status": "active" }),
    )
    .await;
    let pinned_missing = token_agent(
        &s,
        &ours,
        "Pinned",
        json!({ "type": "secret_ref", "secretId": own_id, "version": 7 }),
        &out,
    )
    .await;
    let no_version = run(&s, &ours, &pinned_missing, 1).await;
    assert!(
        no_version["error"]
            .as_str()
            .unwrap()
            .contains("no version 7"),
        "{no_version}"
    );

    let (status, _) = s.delete(&format!("/api/secrets/{own_id}")).await;
    assert_eq!(status, 200);
    let deleted = run(&s, &ours, &user, 2).await;
    assert_eq!(deleted["status"], "failed", "{deleted}");
    assert!(
        deleted["error"].as_str().unwrap().contains("env MY_TOKEN"),
        "{deleted}"
    );
    assert!(!out.exists(), "no run was spawned");

    // A malformed reference is refused when saved, naming its path.
    let (status, answer) = s
        .post(
            &format!("/api/companies/{ours}/agents"),
            json!({ "name": "Bad", "adapterType": "process", "adapterConfig": { "command": "true",
                "env": { "MY_TOKEN": { "type": "secret_ref", "secretId": "nope" } } } }),
        )
        .await;
    assert_eq!(status, 422, "{answer}");
    assert!(answer.to_string().contains("MY_TOKEN"), "{answer}");

    // Deleting a company deletes its secrets with it.
    let (status, answer) = s.delete(&format!("/api/companies/{theirs}")).await;
    assert!(status.is_success(), "{status} {answer}");
    assert_clean(
        "the failed runs",
        &s.ok_get(&format!("/api/companies/{ours}/heartbeat-runs"))
            .await
            .to_string(),
        &[&secret_value],
    );
}

#[tokio::test]
async fn the_key_file_is_private_the_db_holds_ciphertext_and_another_key_fails_runs_clearly() {
    let s = TestServer::start().await;
    let cid = s.company("Keyed").await["id"].as_str().unwrap().to_string();
    let key_file = s.data_dir.join("secrets").join("master.key");
    assert!(!key_file.exists(), "the key is made on first need");
    let plain = value("at-rest");
    let sid = s
        .ok_post(
            &format!("/api/companies/{cid}/secrets"),
            json!({ "name": "At rest", "value": plain }),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&key_file), 0o600);
    assert_eq!(mode(key_file.parent().unwrap()), 0o700);

    // The database holds a nonce and a ciphertext that is not the value.
    let url = common::database_url(&s.data_dir, &s.database_url);
    {
        use sqlx::Row;
        let db = common::database(&url).await;
        let postgres = s.database_url.is_some();
        let rows = sqlx::query(&common::bound_as_text(
            "SELECT nonce, ciphertext FROM company_secret_versions WHERE secret_id = $1",
            postgres,
        ))
        .bind(&sid)
        .fetch_all(&db)
        .await
        .unwrap();
        assert_eq!(rows.len(), 1);
        let (nonce, sealed): (String, String) = (rows[0].get(0), rows[0].get(1));
        assert_eq!(nonce.len(), 16, "12 bytes of nonce, base64");
        assert!(
            !sealed.contains(&plain) && sealed.len() > plain.len(),
            "{sealed}"
        );
        db.close().await;
    }

    let out = s.data_dir.join("seen.txt");
    let aid = token_agent(&s, &cid, "Reader", secret_ref(&sid), &out).await;
    assert_eq!(run(&s, &cid, &aid, 1).await["status"], "succeeded");
    assert_eq!(lines(&out), std::slice::from_ref(&plain));

    // Another key (the env wins over the file): the run fails and says why.
    let other = "ab".repeat(32);
    let s = common::restart_keeping_data_env(s, &[("PAPERCLIP_SECRETS_MASTER_KEY", &other)]).await;
    let failed = run(&s, &cid, &aid, 2).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains("env MY_TOKEN")
            && error.contains("cannot be decrypted")
            && error.contains("PAPERCLIP_SECRETS_MASTER_KEY"),
        "{error}"
    );
    assert_eq!(s.ok_get("/api/health").await["status"], "ok");

    // The file's key, back: the same secret opens again.
    let s = common::restart_keeping_data(s).await;
    assert_eq!(run(&s, &cid, &aid, 3).await["status"], "succeeded");
    assert_eq!(lines(&out), [plain.clone(), plain.clone()]);

    // A key file others may read stops the server at start, naming the fix.
    let (data_dir, database_url) = s.stop_keeping_data();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_paperclip"));
    cmd.args(["run", "--port", "0", "--data-dir"])
        .arg(&data_dir)
        .env_remove("DATABASE_URL")
        .env_remove("PAPERCLIP_SECRETS_MASTER_KEY");
    if let Some(url) = &database_url {
        cmd.env("DATABASE_URL", url);
    }
    let refused = cmd.output().unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("chmod 600"), "{said}");
    std::fs::remove_dir_all(&data_dir).unwrap();
}
