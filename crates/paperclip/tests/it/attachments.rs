//! Issue attachments, black-box: upload limits and type checks, download
//! with its headers and ranges, deletion, what an agent's run records, and
//! the request guard's one multipart exception (and the cross-site refusals
//! it keeps).

use crate::common;

use common::attach::*;
use common::TestServer;
use serde_json::{json, Value};

#[tokio::test]
async fn uploads_are_bounded_checked_served_and_deleted() {
    let s = TestServer::start_args(&["--attachment-max-bytes", "1024"]).await;
    let (cid, iid) = setup(&s, "Files Co").await;

    let (status, png) = upload(&s, As::Board, &cid, &iid, "pixel.png", "image/png", PNG).await;
    assert_eq!(status, 201, "{png}");
    let pid = id(&png);
    assert_eq!(png["companyId"], cid.as_str());
    assert_eq!(png["issueId"], iid.as_str());
    assert_eq!(png["provider"], "local_disk");
    assert_eq!(png["contentType"], "image/png");
    assert_eq!(png["byteSize"], PNG.len());
    assert_eq!(png["originalFilename"], "pixel.png");
    assert_eq!(png["createdByUserId"], "local-board");
    assert_eq!(
        png["contentPath"],
        format!("/api/attachments/{pid}/content")
    );
    assert_eq!(png["openPath"], png["contentPath"]);
    assert_eq!(
        png["downloadPath"],
        format!("/api/attachments/{pid}/content?download=1")
    );
    let sha = png["sha256"].as_str().unwrap();
    assert_eq!(sha.len(), 64);
    let key = png["objectKey"].as_str().unwrap();
    assert!(
        key.starts_with(&format!("{cid}/issues/{iid}/")) && key.ends_with("-pixel.png"),
        "{key}"
    );
    assert!(s.data_dir.join("storage").join(key).is_file());

    // The limit is exact: 1024 bytes pass, 1025 do not; empty never does.
    let (status, at_limit) = upload(
        &s,
        As::Board,
        &cid,
        &iid,
        "a.txt",
        "text/plain",
        &[b'a'; 1024],
    )
    .await;
    assert_eq!(status, 201, "{at_limit}");
    let (status, over) = upload(
        &s,
        As::Board,
        &cid,
        &iid,
        "b.txt",
        "text/plain",
        &[b'a'; 1025],
    )
    .await;
    assert_eq!(status, 422, "{over}");
    assert_eq!(over["error"], "Attachment is larger than the 1 KB limit");
    let (status, empty) = upload(&s, As::Board, &cid, &iid, "e.txt", "text/plain", b"").await;
    assert_eq!(status, 422, "{empty}");
    assert_eq!(empty["error"], "Attachment is empty");
    // A body far past the limit is refused on its declared length.
    let (status, huge) = upload(
        &s,
        As::Board,
        &cid,
        &iid,
        "h.txt",
        "text/plain",
        &vec![b'a'; 200_000],
    )
    .await;
    assert_eq!(status, 413, "{huge}");
    // No `file` field; two of them; a JSON body.
    let (status, missing) = upload_parts(
        &s,
        As::Board,
        &cid,
        &iid,
        &[("document", Some("x.txt"), Some("text/plain"), b"x")],
    )
    .await;
    assert_eq!(status, 400, "{missing}");
    assert_eq!(missing["error"], "Missing file field 'file'");
    let two: &[Part] = &[
        ("file", Some("x.txt"), Some("text/plain"), b"x"),
        ("file", Some("y.txt"), Some("text/plain"), b"y"),
    ];
    assert_eq!(upload_parts(&s, As::Board, &cid, &iid, two).await.0, 400);
    let bad_comment: &[Part] = &[
        ("file", Some("x.txt"), Some("text/plain"), b"x"),
        ("issueCommentId", None, None, b"not-a-uuid"),
    ];
    let (status, meta) = upload_parts(&s, As::Board, &cid, &iid, bad_comment).await;
    assert_eq!(
        (status.as_u16(), meta["error"].as_str()),
        (400, Some("Invalid attachment metadata"))
    );
    let (status, json_body) = s
        .post(
            &format!("/api/companies/{cid}/issues/{iid}/attachments"),
            json!({}),
        )
        .await;
    assert_eq!(status, 415, "{json_body}");
    // The bytes must be what the type says, for types shown inline.
    for (name, ct, data) in [
        ("fake.png", "image/png", &b"GIF89a\x01\0\x01\0"[..]),
        (
            "page.png",
            "image/png",
            b"<html><script>alert(1)</script></html>",
        ),
        ("page.jpg", "image/jpeg", b"  <!DOCTYPE html><p>hi"),
        (
            "script.txt",
            "text/plain",
            b"<script>alert(document.cookie)</script>",
        ),
        ("bin.txt", "text/plain", PNG),
        ("svg.svg", "image/svg+xml", b"<html><body onload=alert(1)>"),
    ] {
        let (status, refused) = upload(&s, As::Board, &cid, &iid, name, ct, data).await;
        assert_eq!(status, 422, "{name}: {refused}");
        assert!(
            refused["error"]
                .as_str()
                .unwrap()
                .contains("do not match its declared type"),
            "{refused}"
        );
    }
    // NUL and path tricks in the file name stay out of the key.
    let (status, tricky) = upload(
        &s,
        As::Board,
        &cid,
        &iid,
        "../../../etc/x.md",
        "text/markdown",
        b"# hi",
    )
    .await;
    assert_eq!(status, 201, "{tricky}");
    assert_eq!(tricky["originalFilename"], "x.md");
    assert!(!tricky["objectKey"].as_str().unwrap().contains(".."));

    // A NUL or control character in the name is dropped, not stored.
    let (status, nul) = upload(
        &s,
        As::Board,
        &cid,
        &iid,
        "a\u{0}b\u{7}.txt",
        "text/plain",
        b"n",
    )
    .await;
    assert_eq!(status, 201, "{nul}");
    assert_eq!(nul["originalFilename"], "ab.txt");
    assert_eq!(
        s.delete(&format!("/api/attachments/{}", id(&nul))).await.0,
        200
    );
    // No such task, or a task id that is no id.
    let missing = "00000000-0000-7000-8000-000000000000";
    assert_eq!(
        upload(&s, As::Board, &cid, missing, "x.txt", "text/plain", b"x")
            .await
            .0,
        404
    );
    assert_eq!(
        upload(&s, As::Board, &cid, "NOPE-1", "x.txt", "text/plain", b"x")
            .await
            .0,
        404
    );

    // Download: the same bytes, with upstream's headers.
    let resp = s
        .client()
        .get(s.url(&format!("/api/attachments/{pid}/content")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let h = resp.headers().clone();
    assert_eq!(h["content-type"], "image/png");
    assert_eq!(h["accept-ranges"], "bytes");
    assert_eq!(h["cache-control"], "private, max-age=60");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert!(h["content-disposition"]
        .to_str()
        .unwrap()
        .starts_with("inline; filename=\"pixel.png\""));
    assert_eq!(&resp.bytes().await.unwrap()[..], PNG);
    let resp = s
        .client()
        .get(s.url(&format!("/api/attachments/{pid}/content?download=1")))
        .send()
        .await
        .unwrap();
    assert!(resp.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .starts_with("attachment;"));
    let md = s
        .client()
        .get(s.url(tricky["contentPath"].as_str().unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(md.headers()["content-type"], "text/markdown; charset=utf-8");

    // Ranges: one range is 206, a bad or multi-part one is 416.
    let ranged = |range: &'static str| {
        s.client()
            .get(s.url(&format!("/api/attachments/{pid}/content")))
            .header("range", range)
            .send()
    };
    let r = ranged("bytes=0-3").await.unwrap();
    assert_eq!(r.status(), 206);
    assert_eq!(
        r.headers()["content-range"],
        format!("bytes 0-3/{}", PNG.len())
    );
    assert_eq!(&r.bytes().await.unwrap()[..], &PNG[..4]);
    let r = ranged("bytes=-5").await.unwrap();
    assert_eq!(r.status(), 206);
    assert_eq!(&r.bytes().await.unwrap()[..], &PNG[PNG.len() - 5..]);
    for bad in ["bytes=500-", "bytes=0-1,3-4", "bytes=9-2", "pages=1"] {
        let r = ranged(bad).await.unwrap();
        assert_eq!(r.status(), 416, "{bad}");
        assert_eq!(
            r.headers()["content-range"],
            format!("bytes */{}", PNG.len())
        );
    }

    // HTML is accepted as a file but only ever downloaded, sandboxed; an
    // SVG is shown under a sandbox policy.
    let (status, html) = upload(
        &s,
        As::Board,
        &cid,
        &iid,
        "page.html",
        "text/html",
        b"<script>alert(1)</script>",
    )
    .await;
    assert_eq!(status, 201, "{html}");
    let r = s
        .client()
        .get(s.url(html["contentPath"].as_str().unwrap()))
        .send()
        .await
        .unwrap();
    assert!(r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .starts_with("attachment;"));
    assert!(r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .starts_with("sandbox"));
    let (status, svg) = upload(
        &s,
        As::Board,
        &cid,
        &iid,
        "d.svg",
        "image/svg+xml",
        b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
    )
    .await;
    assert_eq!(status, 201, "{svg}");
    let r = s
        .client()
        .get(s.url(svg["contentPath"].as_str().unwrap()))
        .send()
        .await
        .unwrap();
    assert!(r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("sandbox"));

    // Listed newest first.
    let list = s.ok_get(&format!("/api/issues/{iid}/attachments")).await;
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 5);
    assert_eq!(ids[0], svg["id"].as_str().unwrap());
    assert_eq!(ids[4], pid);

    // Delete: ok, then gone everywhere, then 404.
    let (status, ok) = s.delete(&format!("/api/attachments/{pid}")).await;
    assert_eq!((status.as_u16(), ok), (200, json!({ "ok": true })));
    assert!(!s.data_dir.join("storage").join(key).exists());
    assert_eq!(
        s.get(&format!("/api/attachments/{pid}/content")).await.0,
        404
    );
    assert_eq!(s.delete(&format!("/api/attachments/{pid}")).await.0, 404);
    let list = s.ok_get(&format!("/api/issues/{iid}/attachments")).await;
    assert_eq!(list.as_array().unwrap().len(), 4);
    assert_eq!(s.get("/api/attachments/not-an-id/content").await.0, 404);

    let actions = s.actions(&cid).await;
    assert_eq!(
        actions
            .iter()
            .filter(|a| *a == "issue.attachment_added")
            .count(),
        6
    );
    assert_eq!(
        actions
            .iter()
            .filter(|a| *a == "issue.attachment_removed")
            .count(),
        2
    );
    let log = s
        .ok_get(&format!("/api/companies/{cid}/activity?limit=100"))
        .await;
    let added = log
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "issue.attachment_added")
        .unwrap();
    assert_eq!(added["entityType"], "issue");
    assert!(
        added["details"]["attachmentId"].is_string() && added["details"]["byteSize"].is_number()
    );
}

/// Downloads are streamed from the store a read at a time: a file larger
/// than one read comes whole, and a range across the reads' boundaries is
/// exactly its bytes.
#[tokio::test]
async fn a_large_file_streams_whole_and_by_range() {
    let s = TestServer::start().await;
    let (cid, iid) = setup(&s, "Big Co").await;
    let big: Vec<u8> = (0..200_000u32)
        .map(|i| b"abcdefghijklmnopqrstuvwxyz\n"[(i % 27) as usize])
        .collect();
    let (status, b) = upload(&s, As::Board, &cid, &iid, "big.txt", "text/plain", &big).await;
    assert_eq!(status, 201, "{b}");
    let path = b["contentPath"].as_str().unwrap().to_string();
    let r = s.client().get(s.url(&path)).send().await.unwrap();
    assert_eq!(r.headers()["content-length"], "200000");
    assert_eq!(&r.bytes().await.unwrap()[..], &big[..]);
    for (range, from, to) in [
        ("bytes=65530-131080", 65530, 131080),
        ("bytes=131072-", 131072, 199_999),
        ("bytes=-1", 199_999, 199_999),
    ] {
        let r = s
            .client()
            .get(s.url(&path))
            .header("range", range)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 206, "{range}");
        assert_eq!(
            r.headers()["content-range"],
            format!("bytes {from}-{to}/200000")
        );
        assert_eq!(&r.bytes().await.unwrap()[..], &big[from..=to], "{range}");
    }
}

#[tokio::test]
async fn the_multipart_exception_keeps_every_cross_site_refusal() {
    let s = TestServer::start().await;
    let (cid, iid) = setup(&s, "Guarded Co").await;
    let (ct, body) = multipart(&[("file", Some("x.txt"), Some("text/plain"), b"hello")]);
    let path = format!("/api/companies/{cid}/issues/{iid}/attachments");
    for (header, value) in [
        ("origin", "https://evil.test"),
        ("origin", "null"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let (status, refused) = send(
            s.client()
                .post(s.url(&path))
                .header("content-type", &ct)
                .header(header, value)
                .body(body.clone()),
        )
        .await;
        assert_eq!(status, 403, "{header}: {value}: {refused}");
        assert_eq!(refused["details"]["code"], "cross_site");
    }
    // Multipart anywhere else is still refused as not JSON.
    let (status, _) = send(
        s.client()
            .post(s.url(&format!("/api/issues/{iid}/comments")))
            .header("content-type", &ct)
            .body(body.clone()),
    )
    .await;
    assert_eq!(status, 415);
    let (status, _) = send(
        s.client()
            .post(s.url(&format!("{path}/extra")))
            .header("content-type", &ct)
            .body(body.clone()),
    )
    .await;
    assert_eq!(status, 415);
    let list = s.ok_get(&format!("/api/issues/{iid}/attachments")).await;
    assert_eq!(list, json!([]), "nothing was stored");
}

#[tokio::test]
async fn an_agent_uploads_within_its_run_and_gets_an_artifact() {
    let s = TestServer::start().await;
    let (cid, iid) = setup(&s, "Agent Files Co").await;
    let agent = id(&s.script_agent(&cid, "Filer", "true\n", json!({})).await);
    s.wake(&agent, json!({})).await;
    let run = s.only_run_succeeded(&cid, &agent).await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let key = s.key(&agent).await;

    let (status, refused) = upload(
        &s,
        As::Agent(&key, None),
        &cid,
        &iid,
        "r.md",
        "text/markdown",
        b"# r",
    )
    .await;
    assert_eq!(status, 401, "{refused}");
    assert_eq!(refused["error"], "Agent run id required");
    assert_eq!(
        s.ok_get(&format!("/api/issues/{iid}/attachments")).await,
        json!([])
    );

    let (status, a) = upload(
        &s,
        As::Agent(&key, Some(&run)),
        &cid,
        &iid,
        "report.md",
        "text/markdown",
        b"# Report",
    )
    .await;
    assert_eq!(status, 201, "{a}");
    assert_eq!(a["originatingRunId"], run.as_str());
    assert_eq!(a["createdByAgentId"], agent.as_str());
    assert_eq!(a["createdByUserId"], Value::Null);
    let products = s.ok_get(&format!("/api/issues/{iid}/work-products")).await;
    let products = products.as_array().unwrap();
    assert_eq!(products.len(), 1, "{products:?}");
    let p = &products[0];
    assert_eq!(p["type"], "artifact");
    assert_eq!(p["provider"], "paperclip");
    assert_eq!(p["externalId"], a["id"]);
    assert_eq!(p["createdByRunId"], run.as_str());
    assert_eq!(p["metadata"]["attachmentId"], a["id"]);
    assert_eq!(p["metadata"]["contentType"], "text/markdown");
    assert_eq!(p["metadata"]["downloadPath"], a["downloadPath"]);
    let log = s
        .ok_get(&format!("/api/companies/{cid}/activity?limit=100"))
        .await;
    let created = log
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "issue.work_product_created")
        .unwrap();
    assert_eq!(created["details"]["source"], "run_attachment_upload");
    assert_eq!(created["runId"], run.as_str());

    // Registering it again from the run updates the same card.
    let (status, again) = s
        .as_agent(
            &key,
            Some(&run),
            "POST",
            &format!("/api/issues/{iid}/work-products"),
            Some(
                json!({ "type": "artifact", "provider": "paperclip", "title": "The report",
                "status": "ready_for_review", "metadata": { "attachmentId": a["id"] } }),
            ),
        )
        .await;
    assert_eq!(status, 201, "{again}");
    assert_eq!(again["id"], p["id"]);
    assert_eq!(again["title"], "The report");
    // Another run's id is not the agent's to name.
    let (status, other) = s
        .as_agent(&key, Some(&run), "POST", &format!("/api/issues/{iid}/work-products"),
            Some(json!({ "type": "branch", "provider": "github", "title": "b", "createdByRunId": "00000000-0000-7000-8000-000000000000" })))
        .await;
    assert_eq!(status, 403, "{other}");

    // An agent may hang a file only on its own comment of this run.
    let board_comment = s
        .ok_post(
            &format!("/api/issues/{iid}/comments"),
            json!({ "body": "from the board" }),
        )
        .await;
    let comment_id = id(&board_comment);
    let parts: &[Part] = &[
        ("file", Some("c.txt"), Some("text/plain"), b"c"),
        ("issueCommentId", None, None, comment_id.as_bytes()),
    ];
    let (status, mismatch) = upload_parts(&s, As::Agent(&key, Some(&run)), &cid, &iid, parts).await;
    assert_eq!(status, 422, "{mismatch}");
    assert_eq!(mismatch["error"], "issue_attachment_parent_run_mismatch");
    let (status, on_comment) = upload_parts(&s, As::Board, &cid, &iid, parts).await;
    assert_eq!(status, 201, "{on_comment}");
    assert_eq!(on_comment["issueCommentId"], comment_id.as_str());
}
