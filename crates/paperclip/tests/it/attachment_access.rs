//! Attachments across boundaries, black-box: isolation between companies
//! (agents, board keys, sessions), what deleting an issue or a company does
//! to its files, the skill's steps run verbatim inside a run, and storage in
//! an S3-compatible bucket (a fake one, checking what it is sent).

use crate::common;

use common::attach::*;
use common::teams;
use common::TestServer;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn companies_are_isolated_for_agents_board_keys_and_sessions() {
    let (s, admin) = teams::instance(&[]).await;
    let make = |name: &'static str| {
        let (s, admin) = (&s, &admin);
        async move {
            let (_, c) = teams::call(
                s,
                Method::POST,
                "/api/companies",
                Some(admin),
                Some(json!({ "name": name })),
            )
            .await;
            let cid = id(&c);
            let (_, i) = teams::call(
                s,
                Method::POST,
                &format!("/api/companies/{cid}/issues"),
                Some(admin),
                Some(json!({ "title": "t" })),
            )
            .await;
            (cid, id(&i))
        }
    };
    let (a_cid, a_iid) = make("Alpha").await;
    let (b_cid, b_iid) = make("Beta").await;
    let admin_as = As::Person(&admin, true);
    // A session's upload needs its CSRF token like every write.
    let (status, refused) = upload(
        &s,
        As::Person(&admin, false),
        &a_cid,
        &a_iid,
        "x.png",
        "image/png",
        PNG,
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    let (status, a_file) = upload(&s, admin_as, &a_cid, &a_iid, "x.png", "image/png", PNG).await;
    assert_eq!(status, 201, "{a_file}");
    let a_id = id(&a_file);
    let (status, wp) = send(
        with(
            s.client()
                .post(s.url(&format!("/api/issues/{a_iid}/work-products"))),
            admin_as,
        )
        .json(&json!({ "type": "pull_request", "provider": "github", "title": "PR" })),
    )
    .await;
    assert_eq!(status, 201, "{wp}");
    let wp_id = id(&wp);

    // Beta's agent (with a run) and a board key scoped to Beta.
    let (_, b_agent) = teams::call(&s, Method::POST, &format!("/api/companies/{b_cid}/agents"), Some(&admin),
        Some(json!({ "name": "Bee", "adapterType": "process", "adapterConfig": { "command": "true" } }))).await;
    let b_agent = id(&b_agent);
    teams::call(
        &s,
        Method::POST,
        &format!("/api/agents/{b_agent}/wakeup"),
        Some(&admin),
        Some(json!({})),
    )
    .await;
    let run = common::until(30, "Bee's run", async || {
        let (_, runs) = teams::call(
            &s,
            Method::GET,
            &format!("/api/companies/{b_cid}/heartbeat-runs?agentId={b_agent}"),
            Some(&admin),
            None,
        )
        .await;
        runs.as_array()?
            .iter()
            .find(|r| r["status"] == "succeeded")
            .map(id)
    })
    .await;
    let agent_key = teams::agent_key_of(&s, &admin, &b_agent).await;
    let (_, key) = teams::call(
        &s,
        Method::POST,
        "/api/board-api-keys",
        Some(&admin),
        Some(json!({ "name": "beta only", "requestedCompanyId": b_cid })),
    )
    .await;
    let board_key = key["token"].as_str().unwrap().to_string();

    for who in [As::Agent(&agent_key, Some(&run)), As::Key(&board_key)] {
        let (status, body) = call(
            &s,
            who,
            Method::GET,
            &format!("/api/issues/{a_iid}/attachments"),
        )
        .await;
        assert!(status == 403 || status == 404, "list: {status} {body}");
        let (status, body) = call(
            &s,
            who,
            Method::GET,
            &format!("/api/attachments/{a_id}/content"),
        )
        .await;
        assert!(status == 403 || status == 404, "download: {status} {body}");
        let (status, body) =
            call(&s, who, Method::DELETE, &format!("/api/attachments/{a_id}")).await;
        assert!(status == 403 || status == 404, "delete: {status} {body}");
        let (status, body) = upload(&s, who, &a_cid, &a_iid, "y.png", "image/png", PNG).await;
        assert!(status == 403 || status == 404, "upload: {status} {body}");
        // Their own company's path with another company's issue.
        let (status, body) = upload(&s, who, &b_cid, &a_iid, "y.png", "image/png", PNG).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["error"], "Issue does not belong to company");
        let (status, body) = call(
            &s,
            who,
            Method::GET,
            &format!("/api/issues/{a_iid}/work-products"),
        )
        .await;
        assert!(status == 403 || status == 404, "products: {status} {body}");
        let (status, body) = send(
            with(
                s.client()
                    .patch(s.url(&format!("/api/work-products/{wp_id}"))),
                who,
            )
            .json(&json!({ "status": "merged" })),
        )
        .await;
        assert!(status == 403 || status == 404, "patch: {status} {body}");
        let (status, body) = call(
            &s,
            who,
            Method::DELETE,
            &format!("/api/work-products/{wp_id}"),
        )
        .await;
        assert!(
            status == 403 || status == 404,
            "delete product: {status} {body}"
        );
        // At home it works.
        let (status, body) = upload(&s, who, &b_cid, &b_iid, "z.txt", "text/plain", b"ok").await;
        assert_eq!(status, 201, "{body}");
    }
    // Nothing of Alpha's changed.
    let r = with(
        s.client()
            .get(s.url(&format!("/api/attachments/{a_id}/content"))),
        admin_as,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(&r.bytes().await.unwrap()[..], PNG);
    let (_, list) = call(
        &s,
        admin_as,
        Method::GET,
        &format!("/api/issues/{a_iid}/attachments"),
    )
    .await;
    assert_eq!(list.as_array().unwrap().len(), 1);
    let (_, products) = call(
        &s,
        admin_as,
        Method::GET,
        &format!("/api/issues/{a_iid}/work-products"),
    )
    .await;
    assert_eq!(products[0]["status"], "active");
}

#[tokio::test]
async fn deleting_an_issue_or_a_company_leaves_no_files_and_no_errors() {
    let s = TestServer::start().await;
    let (cid, iid) = setup(&s, "Gone Co").await;
    let (_, a) = upload(&s, As::Board, &cid, &iid, "x.png", "image/png", PNG).await;
    let (_, b) = upload(&s, As::Board, &cid, &iid, "y.txt", "text/plain", b"y").await;
    let issue_dir = s
        .data_dir
        .join("storage")
        .join(&cid)
        .join("issues")
        .join(&iid);
    assert!(issue_dir.is_dir());
    s.ok_post(&format!("/api/issues/{iid}/work-products"), json!({ "type": "artifact", "provider": "paperclip", "title": "x", "metadata": { "attachmentId": a["id"] } })).await;
    let (status, _) = s.delete(&format!("/api/issues/{iid}")).await;
    assert_eq!(status, 200);
    assert!(!issue_dir.exists());
    for path in [
        format!("/api/attachments/{}/content", a["id"].as_str().unwrap()),
        format!("/api/issues/{iid}/attachments"),
        format!("/api/issues/{iid}/work-products"),
    ] {
        assert_eq!(s.get(&path).await.0, 404, "{path}");
    }
    let (status, _) = s
        .delete(&format!("/api/attachments/{}", b["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 404);
    let other = s.issue(&cid, json!({ "title": "Second" })).await;
    let (_, c) = upload(
        &s,
        As::Board,
        &cid,
        other["id"].as_str().unwrap(),
        "z.txt",
        "text/plain",
        b"z",
    )
    .await;
    let (status, _) = s.delete(&format!("/api/companies/{cid}")).await;
    assert_eq!(status, 200);
    assert!(!s.data_dir.join("storage").join(&cid).exists());
    assert_eq!(
        s.get(&format!(
            "/api/attachments/{}/content",
            c["id"].as_str().unwrap()
        ))
        .await
        .0,
        404
    );
}

/// The skill's attachment block, exactly as agents read it.
fn skill_steps() -> String {
    let skill = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../skills/paperclip/SKILL.md"
    ))
    .unwrap();
    let start = skill
        .find("<!-- skill-steps:attachments")
        .expect("the skill's attachment steps");
    let block = &skill[start..];
    let block = &block[block.find("```sh\n").unwrap() + 6..];
    block[..block.find("```").unwrap()].to_string()
}

#[tokio::test]
async fn the_skills_attachment_steps_work_verbatim_inside_a_run() {
    let s = TestServer::start().await;
    let cid = s.company("Skill Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let report = s.data_dir.join("report.md");
    std::fs::write(&report, "# Findings\n\nAll good.\n").unwrap();
    let out = s.data_dir.join("steps.out");
    let script = format!(
        "set -e\nFILE='{}'\nTITLE='Weekly report'\nexec > '{}' 2>&1\n{}",
        report.display(),
        out.display(),
        skill_steps()
    );
    let agent = id(&s
        .script_agent(&cid, "Reporter", &script, json!({ "timeoutSec": 60 }))
        .await);
    let issue = s
        .issue(
            &cid,
            json!({ "title": "Write the report", "status": "todo" }),
        )
        .await;
    let iid = id(&issue);
    s.ok_patch(
        &format!("/api/issues/{iid}"),
        json!({ "assigneeAgentId": agent }),
    )
    .await;
    let runs = s
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={agent}"),
            60,
            |runs| {
                runs.as_array()
                    .unwrap()
                    .iter()
                    .any(|r| !matches!(r["status"].as_str(), Some("queued" | "running")))
            },
        )
        .await;
    let log = std::fs::read_to_string(&out).unwrap_or_default();
    assert_eq!(runs[0]["status"], "succeeded", "{log}");
    let run = runs[0]["id"].as_str().unwrap();

    let files = s.ok_get(&format!("/api/issues/{iid}/attachments")).await;
    let files = files.as_array().unwrap();
    assert_eq!(files.len(), 1, "{log}");
    assert_eq!(files[0]["contentType"], "text/markdown");
    assert_eq!(files[0]["originatingRunId"], run);
    let r = s
        .client()
        .get(s.url(files[0]["contentPath"].as_str().unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.text().await.unwrap(), "# Findings\n\nAll good.\n");
    let products = s.ok_get(&format!("/api/issues/{iid}/work-products")).await;
    let products = products.as_array().unwrap();
    assert_eq!(products.len(), 1, "one card for the file: {products:?}");
    assert_eq!(products[0]["title"], "Weekly report");
    assert_eq!(products[0]["status"], "ready_for_review");
    assert_eq!(products[0]["reviewState"], "needs_board_review");
    assert_eq!(products[0]["isPrimary"], true);
    assert_eq!(products[0]["createdByRunId"], run);
    let comments = s.ok_get(&format!("/api/issues/{iid}/comments")).await;
    let linked = comments.as_array().unwrap().iter().any(|c| {
        c["body"]
            .as_str()
            .unwrap_or("")
            .contains(files[0]["contentPath"].as_str().unwrap())
    });
    assert!(linked, "{comments}");
}

/// A fake S3: objects in memory by path; a request must carry a SigV4
/// authorization for its key id and the SHA-256 of its body, else 403.
#[derive(Clone, Default)]
struct FakeS3 {
    objects: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, Vec<u8>>>>,
    refused: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ranged: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

fn sha256_hex(data: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

async fn fake_s3() -> (String, FakeS3) {
    use axum::http::{HeaderMap, Method as M, StatusCode as S, Uri};
    let fake = FakeS3::default();
    let state = fake.clone();
    let app = axum::Router::new().fallback(
        move |method: M, uri: Uri, headers: HeaderMap, body: axum::body::Bytes| {
            let state = state.clone();
            async move {
                let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or("");
                let auth = h("authorization");
                let signed = auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIATEST/")
                    && auth.contains("/us-east-1/s3/aws4_request")
                    && auth.contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date")
                    && auth.contains("Signature=")
                    && h("x-amz-content-sha256") == sha256_hex(&body)
                    && h("x-amz-date").len() == 16;
                if !signed {
                    state
                        .refused
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    return (S::FORBIDDEN, Vec::new());
                }
                let mut objects = state.objects.lock().unwrap();
                let path = uri.path().to_string();
                match method {
                    M::PUT => {
                        objects.insert(path, body.to_vec());
                        (S::OK, Vec::new())
                    }
                    // One `bytes=a-b` range is served as S3 serves it.
                    M::GET => match (objects.get(&path), h("range").strip_prefix("bytes=")) {
                        (Some(b), Some(range)) => {
                            let (a, z) = range.split_once('-').unwrap();
                            let (a, z): (usize, usize) = (a.parse().unwrap(), z.parse().unwrap());
                            state
                                .ranged
                                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            (S::PARTIAL_CONTENT, b[a..=z.min(b.len() - 1)].to_vec())
                        }
                        (Some(b), None) => (S::OK, b.clone()),
                        (None, _) => (S::NOT_FOUND, Vec::new()),
                    },
                    M::DELETE => {
                        objects.remove(&path);
                        (S::NO_CONTENT, Vec::new())
                    }
                    _ => (S::METHOD_NOT_ALLOWED, Vec::new()),
                }
            }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, fake)
}

#[tokio::test]
async fn attachments_can_live_in_an_s3_compatible_bucket() {
    let (endpoint, fake) = fake_s3().await;
    let s = TestServer::start_env(&[
        ("PAPERCLIP_STORAGE_PROVIDER", "s3"),
        ("PAPERCLIP_STORAGE_S3_BUCKET", "bkt"),
        ("PAPERCLIP_STORAGE_S3_ENDPOINT", &endpoint),
        ("PAPERCLIP_STORAGE_S3_PREFIX", "pc"),
        ("PAPERCLIP_STORAGE_S3_FORCE_PATH_STYLE", "true"),
        ("AWS_ACCESS_KEY_ID", "AKIATEST"),
        ("AWS_SECRET_ACCESS_KEY", "not-a-real-secret"),
    ])
    .await;
    let (cid, iid) = setup(&s, "Bucket Co").await;
    let (status, a) = upload(&s, As::Board, &cid, &iid, "pixel.png", "image/png", PNG).await;
    assert_eq!(status, 201, "{a}");
    assert_eq!(a["provider"], "s3");
    let key = a["objectKey"].as_str().unwrap();
    let path = format!("/bkt/pc/{key}");
    assert_eq!(
        fake.objects.lock().unwrap().get(&path).map(Vec::as_slice),
        Some(PNG),
        "stored in the bucket under its prefix"
    );
    assert!(
        !s.data_dir.join("storage").join(key).exists(),
        "not on disk"
    );
    let r = s
        .client()
        .get(s.url(a["contentPath"].as_str().unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(&r.bytes().await.unwrap()[..], PNG);
    let r = s
        .client()
        .get(s.url(a["contentPath"].as_str().unwrap()))
        .header("range", "bytes=1-3")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 206);
    assert_eq!(&r.bytes().await.unwrap()[..], &PNG[1..4]);
    // Only the range was asked of the bucket.
    assert!(fake.ranged.load(std::sync::atomic::Ordering::SeqCst) >= 2);
    let (status, _) = s.delete(&format!("/api/attachments/{}", id(&a))).await;
    assert_eq!(status, 200);
    assert!(
        fake.objects.lock().unwrap().is_empty(),
        "deleted from the bucket"
    );

    // Deleting the task deletes its objects too.
    let (_, b) = upload(&s, As::Board, &cid, &iid, "b.txt", "text/plain", b"bytes").await;
    assert_eq!(fake.objects.lock().unwrap().len(), 1, "{b}");
    assert_eq!(s.delete(&format!("/api/issues/{iid}")).await.0, 200);
    assert!(fake.objects.lock().unwrap().is_empty());
    assert_eq!(
        fake.refused.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "every request was signed for its body"
    );
}
