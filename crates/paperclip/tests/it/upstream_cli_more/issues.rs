//! A task's comment, approval and document removal, the person's read and
//! archive marks (read back through an agent's view of that person's
//! inbox), an inbox dismissal, a built-in adapter's override switch, and
//! the company logo uploaded and downloaded as an asset.

use serde_json::json;

use super::More;

/// The board person's "Mine" inbox row for the task, through the CLI.
async fn mine(t: &mut More, iid: &str) -> Option<serde_json::Value> {
    let rows = t
        .json("agent inbox-mine --user-id local-board --api-key {tok}")
        .await;
    rows.as_array()
        .unwrap_or_else(|| panic!("{rows}"))
        .iter()
        .find(|r| r["id"] == iid)
        .cloned()
}

#[tokio::test]
async fn upstream_cli_issue_marks_removals_dismissals_and_assets_work_against_us() {
    let Some((s, mut t)) = More::start().await else {
        return;
    };
    let cid = t.var("cid");
    let agent = s.agent(&cid, "Chief", None).await;
    let aid = t.set("aid", &agent);
    t.vars.insert("tok", s.key(&aid).await);
    let issue = s
        .issue(&cid, json!({ "title": "Ship it", "status": "todo" }))
        .await;
    let iid = t.set("iid", &issue);

    // A comment and a document, made and removed.
    let comment = t.json("issue comment {iid} --body oops").await;
    t.set("cmid", &comment);
    t.json("issue comment:delete {iid} {cmid}").await;
    let comments = s.ok_get(&format!("/api/issues/{iid}/comments")).await;
    assert!(
        !comments
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == comment["id"]),
        "{comments}"
    );
    t.json("issue document:put {iid} notes --title Notes --body draft")
        .await;
    t.json("issue document:delete {iid} notes").await;
    let (status, _) = s.get(&format!("/api/issues/{iid}/documents/notes")).await;
    assert_eq!(status, 404, "the document is gone");

    // An approval tied to the task and untied again.
    let approval = s
        .ok_post(
            &format!("/api/companies/{cid}/approvals"),
            json!({ "type": "approve_ceo_strategy", "payload": { "plan": "ship" } }),
        )
        .await;
    let apid = t.set("apid", &approval);
    t.json("issue approval:link {iid} {apid}").await;
    let linked = s.ok_get(&format!("/api/issues/{iid}/approvals")).await;
    assert!(
        linked
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["id"] == apid.as_str()),
        "{linked}"
    );
    t.json("issue approval:unlink {iid} {apid}").await;
    let linked = s.ok_get(&format!("/api/issues/{iid}/approvals")).await;
    assert_eq!(linked, json!([]), "{linked}");

    // Read and archive marks of the person, as an agent sees their inbox.
    let read = t.json("issue read {iid}").await;
    assert!(read["lastReadAt"].is_string(), "{read}");
    let row = mine(&mut t, &iid).await.expect("the task is in the inbox");
    assert_eq!(row["isUnread"], false, "{row}");
    assert!(row["myLastTouchAt"].is_string(), "{row}");
    t.json("issue unread {iid}").await;
    let row = mine(&mut t, &iid).await.expect("still in the inbox");
    assert_eq!(row["isUnread"], true, "{row}");
    t.json("issue archive {iid}").await;
    assert!(
        mine(&mut t, &iid).await.is_none(),
        "archived out of the inbox"
    );
    t.json("issue unarchive {iid}").await;
    assert!(mine(&mut t, &iid).await.is_some(), "back in the inbox");

    // A board inbox item dismissed.
    let key = format!("approval:{apid}");
    let dismissed = t
        .json(&format!(
            r#"inbox dismiss -C {{cid}} --payload-json {{"itemKey":"{key}"}}"#
        ))
        .await;
    assert_eq!(dismissed["itemKey"], key.as_str(), "{dismissed}");
    let listed = s
        .ok_get(&format!("/api/companies/{cid}/inbox-dismissals"))
        .await;
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["itemKey"] == key.as_str()),
        "{listed}"
    );

    // No external adapter overrides a built-in one here: nothing changes.
    let paused = t
        .json(r#"adapter override process --payload-json {"paused":true}"#)
        .await;
    assert_eq!(
        paused,
        json!({ "type": "process", "paused": true, "changed": false })
    );

    // The company logo, uploaded and read back as an asset.
    let png = s.data_dir.join("logo.png");
    let bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\x0f\0\0\x01\x01\0\x05\x18\xd8N\0\0\0\0IEND\xaeB`\x82";
    std::fs::write(&png, bytes).unwrap();
    t.vars.insert("png", png.to_str().unwrap().to_string());
    let logo = t.json("asset logo:upload --file {png} -C {cid}").await;
    // The upload only stores the image (the company takes it with a PATCH).
    assert_eq!(logo["companyId"], cid.as_str(), "{logo}");
    assert_eq!(logo["byteSize"], bytes.len(), "{logo}");
    let asset = logo["assetId"]
        .as_str()
        .unwrap_or_else(|| panic!("{logo}"))
        .to_string();
    t.vars.insert("asset", asset);
    let out = s.data_dir.join("logo-back.png");
    t.vars.insert("out", out.to_str().unwrap().to_string());
    let saved = t.json("asset content {asset} --out {out}").await;
    assert_eq!(saved["bytes"], bytes.len(), "{saved}");
    assert_eq!(std::fs::read(&out).unwrap(), bytes);

    t.ran("issue marks, removals, dismissals, assets", 18);
}
