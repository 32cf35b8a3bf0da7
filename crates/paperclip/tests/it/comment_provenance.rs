//! A comment's provenance, as the original has it: who deleted it (a person
//! or an agent, and the run it acted in), the presentation and metadata a
//! person adds beside the body, the person an agent's key answers to, and
//! the agent whose run a board-written comment came from.

use crate::common::{self, TestServer};
use serde_json::{json, Value};

fn text(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not text: {v}"))
        .to_string()
}

/// A request as the local board naming a run (`X-Paperclip-Run-Id`).
async fn board_in_run(
    s: &TestServer,
    method: &str,
    path: &str,
    run: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = s
        .client()
        .request(method, s.url(path))
        .header("x-paperclip-run-id", run);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// A company with an agent that has finished one run, its key, and a task.
struct Setup {
    cid: String,
    prefix: String,
    aid: String,
    run: String,
    key: String,
    iid: String,
    identifier: String,
}

async fn setup(s: &TestServer, name: &str) -> Setup {
    let company = s.company(name).await;
    let cid = text(&company["id"]);
    let aid = text(&s.script_agent(&cid, "Scribe", "true\n", json!({})).await["id"]);
    s.wake(&aid, json!({})).await;
    let run = text(&s.only_run_succeeded(&cid, &aid).await[0]["id"]);
    let key = s.key(&aid).await;
    let issue = s.issue(&cid, json!({ "title": "Write it down" })).await;
    Setup {
        cid,
        prefix: text(&company["issuePrefix"]),
        aid,
        run,
        key,
        iid: text(&issue["id"]),
        identifier: text(&issue["identifier"]),
    }
}

fn bodies(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|c| text(&c["body"]))
        .collect()
}

#[tokio::test]
async fn who_deleted_a_comment_is_kept_for_a_person_and_for_an_agent_in_its_run() {
    let s = TestServer::start().await;
    let t = setup(&s, "Deleters Co").await;
    let comments = format!("/api/issues/{}/comments", t.iid);
    let by_board = s.ok_post(&comments, json!({ "body": "board note" })).await;
    let (status, by_agent) = s
        .as_agent(
            &t.key,
            Some(&t.run),
            "POST",
            &comments,
            Some(json!({ "body": "agent note" })),
        )
        .await;
    assert_eq!(status, 201, "{by_agent}");
    // The key answers to the person who made it: the local board here.
    assert_eq!(by_agent["onBehalfOfUserId"], "local-board", "{by_agent}");
    assert_eq!(
        by_board["onBehalfOfUserId"],
        Value::Null,
        "a person writes for themself"
    );
    let stays = s.ok_post(&comments, json!({ "body": "stays" })).await;
    let third = s
        .ok_post(&comments, json!({ "body": "board in a run" }))
        .await;
    let fourth = s
        .ok_post(&comments, json!({ "body": "board naming no run" }))
        .await;

    let (status, deleted) = s
        .delete(&format!("{comments}/{}", text(&by_board["id"])))
        .await;
    assert_eq!(status, 200, "{deleted}");
    assert!(deleted["deletedAt"].is_string(), "{deleted}");
    assert_eq!(deleted["deletedByType"], "user");
    assert_eq!(deleted["deletedByUserId"], "local-board");
    assert_eq!(deleted["deletedByAgentId"], Value::Null);
    assert_eq!(deleted["deletedByRunId"], Value::Null);

    let (status, deleted) = s
        .as_agent(
            &t.key,
            Some(&t.run),
            "DELETE",
            &format!("{comments}/{}", text(&by_agent["id"])),
            None,
        )
        .await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(deleted["deletedByType"], "agent");
    assert_eq!(deleted["deletedByAgentId"], t.aid.as_str());
    assert_eq!(deleted["deletedByRunId"], t.run.as_str());
    assert_eq!(deleted["deletedByUserId"], Value::Null);

    // The board naming a run records it when it is one of the company's,
    // and nothing when it names no run at all.
    let (status, deleted) = board_in_run(
        &s,
        "DELETE",
        &format!("{comments}/{}", text(&third["id"])),
        &t.run,
        None,
    )
    .await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(deleted["deletedByType"], "user");
    assert_eq!(deleted["deletedByRunId"], t.run.as_str());
    let stranger = uuid::Uuid::new_v4().to_string();
    let (status, deleted) = board_in_run(
        &s,
        "DELETE",
        &format!("{comments}/{}", text(&fourth["id"])),
        &stranger,
        None,
    )
    .await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(deleted["deletedByRunId"], Value::Null, "{deleted}");

    // Reads hide deleted comments as before: the list, the comment, the page.
    assert_eq!(bodies(&s.ok_get(&comments).await), ["stays"]);
    let (status, _) = s
        .get(&format!("{comments}/{}", text(&by_board["id"])))
        .await;
    assert_eq!(status, 404);
    let page = s
        .page(&format!("/{}/tasks/{}", t.prefix, t.identifier))
        .await;
    assert!(page.contains(&format!("comment-{}", text(&stays["id"]))));
    for gone in [&by_board, &by_agent, &third, &fourth] {
        let anchor = format!("comment-{}", text(&gone["id"]));
        assert!(!page.contains(&anchor), "deleted stays hidden");
    }

    // The activity log says who deleted each.
    let log = s
        .ok_get(&format!("/api/companies/{}/activity?limit=100", t.cid))
        .await;
    let deletions: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["action"] == "issue.comment_deleted")
        .map(|a| &a["details"])
        .collect();
    assert_eq!(deletions.len(), 4, "{log}");
    let of = |id: &Value| {
        *deletions
            .iter()
            .find(|d| d["commentId"] == *id)
            .unwrap_or_else(|| panic!("no deletion of {id}"))
    };
    assert_eq!(of(&by_agent["id"])["deletedByAgentId"], t.aid.as_str());
    assert_eq!(of(&by_agent["id"])["deletedByRunId"], t.run.as_str());
    assert_eq!(of(&by_board["id"])["deletedByType"], "user");
    assert_eq!(of(&by_board["id"])["deletedByUserId"], "local-board");
}

#[tokio::test]
async fn presentation_and_metadata_round_trip_and_a_bad_shape_names_its_field() {
    let s = TestServer::start().await;
    let t = setup(&s, "Notices Co").await;
    let comments = format!("/api/issues/{}/comments", t.iid);
    let metadata = json!({ "version": 1, "sections": [{ "title": " Why ", "rows": [
        { "type": "key_value", "label": "Left", "value": "3 USD" },
        { "type": "run_link", "runId": t.run, "agentId": t.aid },
        { "type": "code", "code": "  keep my indent", "language": "sh" },
    ]}]});
    let posted = s
        .ok_post(
            &comments,
            json!({ "body": "Budget is low.",
                    "presentation": { "kind": "system_notice", "tone": "warning",
                                      "title": "  Budget low ", "density": "compact" },
                    "metadata": metadata }),
        )
        .await;
    let want_presentation = json!({ "kind": "system_notice", "tone": "warning",
        "title": "Budget low", "detailsDefaultOpen": false, "density": "compact" });
    assert_eq!(posted["presentation"], want_presentation, "{posted}");
    assert_eq!(posted["metadata"]["sections"][0]["title"], "Why");
    assert_eq!(
        posted["metadata"]["sections"][0]["rows"][2]["code"],
        "  keep my indent"
    );
    let id = text(&posted["id"]);
    let one = s.ok_get(&format!("{comments}/{id}")).await;
    assert_eq!(one["presentation"], want_presentation);
    assert_eq!(one["metadata"], posted["metadata"]);
    let list = s.ok_get(&comments).await;
    assert_eq!(list[0]["metadata"], posted["metadata"]);
    // The original's defaults, and nulls where nothing was sent.
    let plain = s
        .ok_post(&comments, json!({ "body": "plain", "presentation": {} }))
        .await;
    assert_eq!(
        plain["presentation"],
        json!({ "kind": "message", "tone": "neutral", "detailsDefaultOpen": false })
    );
    assert_eq!(plain["metadata"], Value::Null);

    // The board's thread shows the notice, its tone and its details.
    let page = s
        .page(&format!("/{}/tasks/{}", t.prefix, t.identifier))
        .await;
    assert!(
        page.contains(r#"class="comment system-notice compact""#),
        "{page}"
    );
    assert!(page.contains(r#"data-tone="warning""#));
    assert!(page.contains("Budget low") && page.contains("keep my indent"));

    // A bad shape is a 400 naming where it is.
    let bad = [
        (json!({ "presentation": { "tone": "loud" } }), "tone"),
        (json!({ "presentation": { "colour": "red" } }), "colour"),
        (json!({ "presentation": { "title": "   " } }), "title"),
        (
            json!({ "metadata": { "version": 2, "sections": metadata["sections"] } }),
            "version",
        ),
        (
            json!({ "metadata": { "version": 1, "sections": [] } }),
            "sections",
        ),
        (
            json!({ "metadata": { "version": 1, "sections": [{ "rows": [
                { "type": "text", "text": "fine" }, { "type": "agent_link", "agentId": "me" } ] }] } }),
            "agentId",
        ),
        (
            json!({ "metadata": { "version": 1, "sections": [{ "rows": [{ "type": "issue_link" }] }] } }),
            "issueId",
        ),
    ];
    for (extra, field) in bad {
        let mut body = extra.clone();
        body["body"] = json!("x");
        let (status, answer) = s.post(&comments, body).await;
        assert_eq!(status, 400, "{extra} -> {answer}");
        assert!(answer.to_string().contains(field), "{extra} -> {answer}");
    }

    // Past the bound: 400 naming metadata; past the body limit: 413.
    let row = json!({ "type": "code", "code": "x".repeat(4000) });
    let sections: Vec<Value> = (0..20)
        .map(|_| json!({ "rows": [row.clone(), row.clone()] }))
        .collect();
    let (status, answer) = s
        .post(
            &comments,
            json!({ "body": "big", "metadata": { "version": 1, "sections": sections } }),
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        answer["details"][0]["path"],
        json!(["metadata"]),
        "{answer}"
    );
    assert_eq!(answer["details"][0]["code"], "too_big", "{answer}");
    let (status, _) = s
        .post(
            &comments,
            json!({ "body": "huge", "metadata": { "pad": "x".repeat(2 << 20) } }),
        )
        .await;
    assert_eq!(status, 413);

    // Agents write neither, nor whom they write for.
    for extra in [
        json!({ "presentation": null }),
        json!({ "metadata": metadata }),
        json!({ "onBehalfOfUserId": "someone" }),
    ] {
        let mut body = extra.clone();
        body["body"] = json!("from the agent");
        let (status, answer) = s
            .as_agent(&t.key, Some(&t.run), "POST", &comments, Some(body))
            .await;
        assert_eq!(status, 403, "{extra} -> {answer}");
    }
    let total = s.ok_get(&comments).await.as_array().unwrap().len();
    assert_eq!(total, 2, "nothing refused was written");
}

#[tokio::test]
async fn a_comment_the_board_writes_in_an_agents_run_is_attributed_to_that_agent() {
    let s = TestServer::start().await;
    let t = setup(&s, "Derived Co").await;
    let comments = format!("/api/issues/{}/comments", t.iid);
    let (status, in_run) = board_in_run(
        &s,
        "POST",
        &comments,
        &t.run,
        Some(json!({ "body": "posted for the scribe" })),
    )
    .await;
    assert_eq!(status, 201, "{in_run}");
    assert_eq!(in_run["authorUserId"], "local-board");
    assert_eq!(in_run["derivedAuthorAgentId"], t.aid.as_str(), "{in_run}");
    assert_eq!(in_run["derivedCreatedByRunId"], t.run.as_str());
    assert_eq!(in_run["derivedAuthorSource"], "run_id");
    let stranger = uuid::Uuid::new_v4().to_string();
    let (status, no_run) = board_in_run(
        &s,
        "POST",
        &comments,
        &stranger,
        Some(json!({ "body": "names no run" })),
    )
    .await;
    assert_eq!(status, 201, "{no_run}");
    assert_eq!(no_run["derivedAuthorAgentId"], Value::Null, "{no_run}");
    let own = s
        .ok_post(&comments, json!({ "body": "the board itself" }))
        .await;
    assert_eq!(own["derivedAuthorSource"], Value::Null);
    let (_, agents_own) = s
        .as_agent(
            &t.key,
            Some(&t.run),
            "POST",
            &comments,
            Some(json!({ "body": "mine" })),
        )
        .await;
    assert_eq!(agents_own["authorAgentId"], t.aid.as_str());
    assert_eq!(
        agents_own["derivedAuthorAgentId"],
        Value::Null,
        "an agent is its own author"
    );
    let page = s
        .page(&format!("/{}/tasks/{}", t.prefix, t.identifier))
        .await;
    assert!(
        page.contains("<strong>Scribe</strong><span class=\"muted\""),
        "{page}"
    );

    // A database from before provenance: its comments upgrade with nulls,
    // and the board's comment in the run is attributed as a new one is.
    let (data_dir, database_url) = s.stop_keeping_data();
    let url = common::database_url(&data_dir, &database_url);
    {
        let pool = common::database(&url).await;
        let steps = common::before_secrets_and_teams();
        let last = steps
            .iter()
            .position(|s| s.contains("version = 59"))
            .expect("migration 59's rollback");
        for sql in &steps[..=last] {
            sqlx::query(sql).execute(&pool).await.unwrap();
        }
        pool.close().await;
    }
    let s = TestServer::start_with(data_dir, database_url, &[]).await;
    let list = s.ok_get(&format!("{comments}?order=asc")).await;
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 4);
    assert_eq!(
        list[0]["derivedAuthorAgentId"],
        t.aid.as_str(),
        "{:?}",
        list[0]
    );
    assert_eq!(list[0]["derivedCreatedByRunId"], t.run.as_str());
    assert_eq!(list[0]["derivedAuthorSource"], "run_id");
    for c in list {
        for key in [
            "presentation",
            "metadata",
            "deletedByType",
            "deletedByRunId",
            "onBehalfOfUserId",
        ] {
            assert_eq!(c[key], Value::Null, "{key}: {c}");
        }
    }
    for c in &list[1..] {
        assert_eq!(c["derivedAuthorAgentId"], Value::Null, "{c}");
    }
}
