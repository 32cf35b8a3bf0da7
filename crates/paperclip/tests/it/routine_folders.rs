//! Routine folders, as the original has them: a tree of named folders (a
//! slug unique among its siblings, at most four deep, never under itself),
//! routines filed into one by `folderId` or by the item move, the list's
//! counts, renames, moves and deletions, each in the activity log; bad
//! input is a 400 naming its field. Another company's agent sees none of it.

use crate::common::TestServer;
use serde_json::{json, Value};

async fn folder(s: &TestServer, cid: &str, body: Value) -> Value {
    let (status, made) = s.post(&format!("/api/companies/{cid}/folders"), body).await;
    assert_eq!(status, 201, "{made}");
    made
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn folders_group_routines_and_keep_their_tree_sound() {
    let s = TestServer::start().await;
    let cid = id(&s.company("Acme").await);
    let aid = id(&s.agent(&cid, "A", None).await);
    let folders = format!("/api/companies/{cid}/folders");

    let reports = folder(
        &s,
        &cid,
        json!({ "kind": "routine", "name": "Weekly Reports" }),
    )
    .await;
    assert_eq!(reports["slug"], "weekly-reports");
    assert_eq!(reports["path"], "weekly-reports");
    assert_eq!(reports["depth"], 1);
    assert_eq!(reports["position"], 0);
    assert_eq!(reports["kind"], "routine");
    for key in ["parentId", "systemKey", "color"] {
        assert_eq!(reports[key], Value::Null, "{key}: {reports}");
    }
    let rid_folder = id(&reports);
    let finance = folder(
        &s,
        &cid,
        json!({ "kind": "routine", "name": "Finance", "parentId": rid_folder, "color": "#0a0" }),
    )
    .await;
    assert_eq!(finance["path"], "weekly-reports/finance");
    assert_eq!(finance["depth"], 2);
    assert_eq!(finance["color"], "#0a0");
    let fid = id(&finance);

    // Bad input: 400 naming the field, or the original's status.
    for (body, field) in [
        (json!({ "kind": "plugin", "name": "X" }), "kind"),
        (json!({ "kind": "routine", "name": "   " }), "name"),
        (
            json!({ "kind": "routine", "name": "X", "slug": "Not A Slug" }),
            "slug",
        ),
        (
            json!({ "kind": "routine", "name": "X", "parentId": "nope" }),
            "parentId",
        ),
        (
            json!({ "kind": "routine", "name": "X", "position": -1 }),
            "position",
        ),
    ] {
        let (status, err) = s.post(&folders, body.clone()).await;
        assert_eq!(status, 400, "{body}: {err}");
        assert!(err.to_string().contains(field), "{field}: {err}");
    }
    let (status, err) = s.get(&folders).await;
    assert_eq!(status, 400, "{err}");
    assert!(err.to_string().contains("kind"), "{err}");
    let (status, _) = s
        .post(
            &folders,
            json!({ "kind": "routine", "name": "weekly reports" }),
        )
        .await;
    assert_eq!(status, 409, "a sibling has the slug");
    let (status, _) = s
        .post(
            &folders,
            json!({ "kind": "routine", "name": "X", "parentId": uuid::Uuid::new_v4().to_string() }),
        )
        .await;
    assert_eq!(status, 404);
    let (status, body) = s
        .post(&folders, json!({ "kind": "skill", "name": "X" }))
        .await;
    assert_eq!(status, 422, "{body}");

    // Four deep at most.
    let mut parent = fid.clone();
    for name in ["Three", "Four"] {
        let made = folder(
            &s,
            &cid,
            json!({ "kind": "routine", "name": name, "parentId": parent }),
        )
        .await;
        parent = id(&made);
    }
    let (status, body) = s
        .post(
            &folders,
            json!({ "kind": "routine", "name": "Five", "parentId": parent }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body["error"].as_str().unwrap().contains("depth"), "{body}");

    // Routines filed by folderId, by the item move, and back out.
    let routines = format!("/api/companies/{cid}/routines");
    let (status, r1) = s
        .post(
            &routines,
            json!({ "title": "Sales", "assigneeAgentId": aid, "folderId": fid }),
        )
        .await;
    assert_eq!(status, 201, "{r1}");
    assert_eq!(r1["folderId"], fid.as_str());
    let r2 = s
        .ok_post(&routines, json!({ "title": "Ops", "assigneeAgentId": aid }))
        .await;
    let r3 = s
        .ok_post(
            &routines,
            json!({ "title": "Misc", "assigneeAgentId": aid }),
        )
        .await;
    assert_eq!(r2["folderId"], Value::Null);
    let moved = s
        .ok_post(
            &format!("{folders}/items/move"),
            json!({ "kind": "routine", "itemId": id(&r2), "folderId": rid_folder }),
        )
        .await;
    assert_eq!(
        moved,
        json!({ "kind": "routine", "itemId": id(&r2), "folderId": rid_folder })
    );
    let (status, err) = s
        .post(
            &format!("{folders}/items/move"),
            json!({ "kind": "routine", "itemId": "x", "folderId": rid_folder }),
        )
        .await;
    assert_eq!(status, 400);
    assert!(err.to_string().contains("itemId"), "{err}");
    let (status, _) = s
        .post(
            &format!("{folders}/items/move"),
            json!({ "kind": "routine", "itemId": id(&r3), "folderId": uuid::Uuid::new_v4().to_string() }),
        )
        .await;
    assert_eq!(status, 404);
    let (status, err) = s
        .patch(
            &format!("/api/routines/{}", id(&r3)),
            json!({ "folderId": "nope" }),
        )
        .await;
    assert_eq!(status, 400);
    assert!(err.to_string().contains("folderId"), "{err}");

    let list = s.ok_get(&format!("{folders}?kind=routine")).await;
    assert_eq!(list["kind"], "routine");
    assert_eq!(list["allCount"], 3);
    assert_eq!(list["unfiledCount"], 1);
    let count = |list: &Value, fid: &str| {
        list["folders"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == fid)
            .map(|f| f["itemCount"].clone())
    };
    assert_eq!(count(&list, &rid_folder), Some(json!(1)));
    assert_eq!(count(&list, &fid), Some(json!(1)));
    let listed = s.ok_get(&routines).await;
    let r2_listed = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == r2["id"])
        .unwrap();
    assert_eq!(r2_listed["folderId"], rid_folder.as_str());

    // The board's routines page groups them by folder, the unfiled last.
    let prefix = s.ok_get(&format!("/api/companies/{cid}")).await["issuePrefix"]
        .as_str()
        .unwrap()
        .to_string();
    let page = crate::common::visible_text(&s.page(&format!("/{prefix}/routines")).await);
    let at = |text: &str| {
        page.find(text)
            .unwrap_or_else(|| panic!("{text} in {page}"))
    };
    assert!(at("Weekly Reports (1)") < at("Weekly Reports / Finance (1)"));
    assert!(at("Weekly Reports / Finance / Three (0)") < at("Unfiled (1)"));
    assert!(at("Weekly Reports / Finance (1) Sales") > 0, "{page}");

    // Filing is not an edit: no new revision.
    let out = s
        .ok_patch(
            &format!("/api/routines/{}", id(&r1)),
            json!({ "folderId": null }),
        )
        .await;
    assert_eq!(out["folderId"], Value::Null);
    assert_eq!(out["latestRevisionNumber"], r1["latestRevisionNumber"]);

    // A rename gives a new slug, and the paths under it follow.
    let (status, _) = s.patch(&format!("{folders}/{rid_folder}"), json!({})).await;
    assert_eq!(status, 400);
    let renamed = s
        .ok_patch(
            &format!("{folders}/{rid_folder}"),
            json!({ "name": "Monthly" }),
        )
        .await;
    assert_eq!(renamed["slug"], "monthly");
    let list = s.ok_get(&format!("{folders}?kind=routine")).await;
    let path_of = |list: &Value, fid: &str| {
        list["folders"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == fid)
            .map(|f| f["path"].clone())
    };
    assert_eq!(path_of(&list, &fid), Some(json!("monthly/finance")));

    // Moves: never under itself or its subtree, and no deeper than four.
    let (status, _) = s
        .post(
            &format!("{folders}/{rid_folder}/move"),
            json!({ "parentId": fid, "position": 0 }),
        )
        .await;
    assert_eq!(status, 422);
    let (status, _) = s
        .post(
            &format!("{folders}/{fid}/move"),
            json!({ "parentId": fid, "position": 0 }),
        )
        .await;
    assert_eq!(status, 422);
    let top = s
        .ok_post(
            &format!("{folders}/{fid}/move"),
            json!({ "parentId": null, "position": 5 }),
        )
        .await;
    assert_eq!(
        (top["path"].clone(), top["depth"].clone()),
        (json!("finance"), json!(1))
    );
    assert_eq!(top["position"], 5);

    // Deletion: not while folders are under it; its routines become unfiled.
    let (status, _) = s.delete(&format!("{folders}/{fid}")).await;
    assert_eq!(status, 409);
    let (status, gone) = s.delete(&format!("{folders}/{rid_folder}")).await;
    assert_eq!(status, 200, "{gone}");
    assert_eq!(gone["deleted"]["id"], rid_folder.as_str());
    let r2_after = s.ok_get(&format!("/api/routines/{}", id(&r2))).await;
    assert_eq!(r2_after["folderId"], Value::Null);
    let (status, _) = s.delete(&format!("{folders}/{rid_folder}")).await;
    assert_eq!(status, 404);

    let actions = s.actions(&cid).await;
    for a in [
        "folder.created",
        "folder.updated",
        "folder.moved",
        "folder.deleted",
        "folder.item_moved",
    ] {
        assert!(actions.iter().any(|x| x == a), "{a} in {actions:?}");
    }

    // Another company's agent neither reads nor changes them.
    let other = id(&s.company("Other").await);
    let spy = s.key(&id(&s.agent(&other, "Spy", None).await)).await;
    for (method, path, body) in [
        ("GET", format!("{folders}?kind=routine"), None),
        (
            "POST",
            folders.clone(),
            Some(json!({ "kind": "routine", "name": "Mine" })),
        ),
        (
            "PATCH",
            format!("{folders}/{fid}"),
            Some(json!({ "name": "Taken" })),
        ),
        ("DELETE", format!("{folders}/{fid}"), None),
    ] {
        let (status, _) = s.as_agent(&spy, None, method, &path, body).await;
        assert!(status == 403 || status == 404, "{method} {path}: {status}");
    }
}
