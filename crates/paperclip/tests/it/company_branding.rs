//! A company's logo and branding (upstream's `POST .../logo`,
//! `PATCH .../branding`, `GET /api/assets/{id}/content`): an image upload
//! bounded and checked, served back with a type that runs no script, named
//! as the logo by the board or the company's CEO agent only, replaced and
//! removed with its file, and shown on the board.

use crate::common;

use common::attach::{multipart, send, with, As, PNG};
use common::TestServer;
use reqwest::StatusCode;
use serde_json::{json, Value};

async fn upload_logo(
    s: &TestServer,
    who: As<'_>,
    cid: &str,
    name: &str,
    ct: &str,
    data: &[u8],
) -> (StatusCode, Value) {
    let (content_type, body) = multipart(&[("file", Some(name), Some(ct), data)]);
    let req = s
        .client()
        .post(s.url(&format!("/api/companies/{cid}/logo")))
        .header("content-type", content_type)
        .body(body);
    send(with(req, who)).await
}

fn text(v: &Value, key: &str) -> String {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("no {key} in {v}"))
        .to_string()
}

/// A PNG of `len` bytes: the signature, then padding (the type check reads
/// the magic bytes).
fn png_of(len: usize) -> Vec<u8> {
    let mut bytes = PNG.to_vec();
    bytes.resize(len, 0);
    bytes
}

async fn agent_with_role(s: &TestServer, cid: &str, name: &str, role: &str) -> (String, String) {
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": name, "role": role, "adapterType": "process",
                "adapterConfig": { "command": "true" } }),
        )
        .await;
    let aid = text(&agent, "id");
    let key = s.key(&aid).await;
    (aid, key)
}

#[tokio::test]
async fn a_logo_is_uploaded_checked_served_and_named_by_the_board() {
    let s = TestServer::start_args(&["--attachment-max-bytes", "1024"]).await;
    let cid = text(&s.company("Logo Co").await, "id");
    let fresh = s.ok_get(&format!("/api/companies/{cid}")).await;
    assert_eq!(fresh["logoAssetId"], Value::Null);
    assert_eq!(fresh["logoUrl"], Value::Null);

    let (status, asset) = upload_logo(&s, As::Board, &cid, "mark.png", "image/png", PNG).await;
    assert_eq!(status, 201, "{asset}");
    let aid = text(&asset, "assetId");
    assert_eq!(asset["companyId"], cid.as_str());
    assert_eq!(asset["contentType"], "image/png");
    assert_eq!(asset["byteSize"], PNG.len());
    assert_eq!(asset["originalFilename"], "mark.png");
    assert_eq!(asset["createdByUserId"], "local-board");
    assert_eq!(asset["contentPath"], format!("/api/assets/{aid}/content"));
    let key = text(&asset, "objectKey");
    assert!(
        key.starts_with(&format!("{cid}/assets/companies/")),
        "{key}"
    );
    assert!(s.data_dir.join("storage").join(&key).is_file());
    // Uploaded is not yet the logo: the branding names it.
    assert_eq!(
        s.ok_get(&format!("/api/companies/{cid}")).await["logoUrl"],
        Value::Null
    );
    let company = s
        .ok_patch(
            &format!("/api/companies/{cid}/branding"),
            json!({ "logoAssetId": aid }),
        )
        .await;
    assert_eq!(company["logoAssetId"], aid.as_str());
    let url = text(&company, "logoUrl");
    assert_eq!(url, format!("/api/assets/{aid}/content"));
    let listed = s.ok_get("/api/companies").await;
    let mine = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == cid.as_str())
        .unwrap();
    assert_eq!(mine["logoUrl"], url.as_str(), "every company answer has it");

    // Served back as the image it is, never sniffed into something else.
    let resp = s.client().get(s.url(&url)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
    };
    assert_eq!(header("content-type").as_deref(), Some("image/png"));
    assert_eq!(header("x-content-type-options").as_deref(), Some("nosniff"));
    assert!(header("content-disposition").unwrap().starts_with("inline"));
    assert_eq!(resp.bytes().await.unwrap().as_ref(), PNG);

    // Bounds: the attachment limit (422, upstream's code), a body far past
    // it (413 on its declared length), and the image types a logo may be.
    let (status, over) =
        upload_logo(&s, As::Board, &cid, "big.png", "image/png", &png_of(1025)).await;
    assert_eq!(status, 422, "{over}");
    assert_eq!(over["error"], "Image is larger than the 1 KB limit");
    let (status, huge) = upload_logo(
        &s,
        As::Board,
        &cid,
        "huge.png",
        "image/png",
        &png_of(200_000),
    )
    .await;
    assert_eq!(status, 413, "{huge}");
    let (status, plain) =
        upload_logo(&s, As::Board, &cid, "notes.txt", "text/plain", b"hello").await;
    assert_eq!(status, 422, "{plain}");
    assert_eq!(plain["error"], "Unsupported image type: text/plain");
    let (status, fake) = upload_logo(
        &s,
        As::Board,
        &cid,
        "fake.png",
        "image/png",
        b"<html><script>alert(1)</script></html>",
    )
    .await;
    assert_eq!(status, 422, "{fake}");
    let (status, empty) = upload_logo(&s, As::Board, &cid, "e.png", "image/png", b"").await;
    assert_eq!(status, 422, "{empty}");
    let (ct, body) = multipart(&[("other", None, None, b"x")]);
    let req = s
        .client()
        .post(s.url(&format!("/api/companies/{cid}/logo")))
        .header("content-type", ct)
        .body(body);
    let (status, missing) = send(req).await;
    assert_eq!(status, 400, "{missing}");
    assert_eq!(missing["error"], "Missing file field 'file'");

    // An SVG is taken, and served under a policy that runs none of its script.
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script><circle r="4"/></svg>"#;
    let (status, vector) = upload_logo(&s, As::Board, &cid, "mark.svg", "image/svg+xml", svg).await;
    assert_eq!(status, 201, "{vector}");
    let resp = s
        .client()
        .get(s.url(&text(&vector, "contentPath")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "image/svg+xml");
    let csp = resp.headers()["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("sandbox") && csp.contains("default-src 'none'"),
        "{csp}"
    );

    // Replacing the logo deletes the old asset and its file; null removes it.
    let replaced = s
        .ok_patch(
            &format!("/api/companies/{cid}/branding"),
            json!({ "logoAssetId": text(&vector, "assetId") }),
        )
        .await;
    assert_eq!(replaced["logoAssetId"], vector["assetId"]);
    assert_eq!(s.get(&url).await.0, 404, "the old logo is gone");
    assert!(!s.data_dir.join("storage").join(&key).exists());
    let cleared = s
        .ok_patch(
            &format!("/api/companies/{cid}/branding"),
            json!({ "logoAssetId": null }),
        )
        .await;
    assert_eq!(cleared["logoUrl"], Value::Null);
    assert_eq!(cleared["logoAssetId"], Value::Null);

    let actions = s.actions(&cid).await;
    assert_eq!(
        actions.iter().filter(|a| *a == "asset.created").count(),
        2,
        "{actions:?}"
    );
    assert_eq!(
        actions
            .iter()
            .filter(|a| *a == "company.branding_updated")
            .count(),
        3,
        "{actions:?}"
    );
}

#[tokio::test]
async fn only_the_board_or_the_companys_ceo_sets_the_branding_and_bodies_are_strict() {
    let s = TestServer::start().await;
    let cid = text(&s.company("Brand Co").await, "id");
    let other = text(&s.company("Other Co").await, "id");
    let (_, ceo) = agent_with_role(&s, &cid, "Chief", "ceo").await;
    let (_, engineer) = agent_with_role(&s, &cid, "Builder", "engineer").await;
    let (_, outsider) = agent_with_role(&s, &other, "Boss", "ceo").await;
    let branding = format!("/api/companies/{cid}/branding");

    let (status, refused) = s
        .as_agent(
            &engineer,
            None,
            "PATCH",
            &branding,
            Some(json!({ "name": "Mine" })),
        )
        .await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(
        refused["error"],
        "Only CEO agents can manage company branding"
    );
    let (status, _) = s
        .as_agent(
            &outsider,
            None,
            "PATCH",
            &branding,
            Some(json!({ "name": "Mine" })),
        )
        .await;
    assert_eq!(status, 403);
    // The engineer may upload an image (as upstream), not make it the logo.
    let (status, asset) = upload_logo(
        &s,
        As::Agent(&engineer, None),
        &cid,
        "mark.png",
        "image/png",
        PNG,
    )
    .await;
    assert_eq!(status, 201, "{asset}");
    let (status, set) = s
        .as_agent(
            &ceo,
            None,
            "PATCH",
            &branding,
            Some(json!({ "name": "Brand Co Renamed", "logoAssetId": asset["assetId"] })),
        )
        .await;
    assert_eq!(status, 200, "{set}");
    assert_eq!(set["name"], "Brand Co Renamed");
    assert_eq!(set["logoAssetId"], asset["assetId"]);
    // The CEO's own PATCH of the company is held to the branding fields.
    let company = format!("/api/companies/{cid}");
    let (status, body) = s
        .as_agent(
            &ceo,
            None,
            "PATCH",
            &company,
            Some(json!({ "budgetMonthlyCents": 5 })),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = s
        .as_agent(
            &ceo,
            None,
            "PATCH",
            &company,
            Some(json!({ "description": "By the CEO" })),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["description"], "By the CEO");
    let (status, _) = s
        .as_agent(
            &engineer,
            None,
            "PATCH",
            &company,
            Some(json!({ "description": "x" })),
        )
        .await;
    assert_eq!(status, 403);

    // Upstream's strict body: something to change, nothing else.
    for (body, want) in [
        (json!({}), 400),
        (json!({ "brandColor": "#112233" }), 400),
        (json!({ "name": "" }), 400),
        (json!({ "logoAssetId": "not-a-uuid" }), 400),
        (
            json!({ "logoAssetId": uuid::Uuid::new_v4().to_string() }),
            404,
        ),
    ] {
        let (status, reply) = s.patch(&branding, body.clone()).await;
        assert_eq!(status, want, "{body} -> {reply}");
        assert!(reply["error"].is_string(), "{reply}");
    }
    // Another company's asset is not ours to show.
    let (_, theirs) = upload_logo(&s, As::Board, &other, "t.png", "image/png", PNG).await;
    let (status, reply) = s
        .patch(&branding, json!({ "logoAssetId": theirs["assetId"] }))
        .await;
    assert_eq!(status, 422, "{reply}");
    assert_eq!(reply["error"], "Logo asset must belong to the same company");
    // Nor are its bytes: an agent of this company cannot read them.
    let (status, _) = s
        .as_agent(
            &ceo,
            None,
            "GET",
            theirs["contentPath"].as_str().unwrap(),
            None,
        )
        .await;
    assert_eq!(status, 403);

    // The activity rows name who acted.
    let log = s.ok_get(&format!("/api/companies/{cid}/activity")).await;
    let branded: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "company.branding_updated")
        .collect();
    assert_eq!(branded.len(), 1, "{log}");
    assert_eq!(branded[0]["actorType"], "agent");
    assert_eq!(
        branded[0]["details"]["changes"]["name"]["to"],
        "Brand Co Renamed"
    );
}

#[tokio::test]
async fn the_board_shows_the_logo_beside_the_company_and_settings_upload_it() {
    let s = TestServer::start().await;
    let company = s.company("Pictured Co").await;
    let cid = text(&company, "id");
    let prefix = text(&company, "issuePrefix");
    let settings = s.page(&format!("/{prefix}/company/settings")).await;
    assert!(settings.contains("data-upload-logo"), "the upload form");
    assert!(!settings.contains("company-logo"), "no logo yet");
    let (_, asset) = upload_logo(&s, As::Board, &cid, "m.png", "image/png", PNG).await;
    s.ok_patch(
        &format!("/api/companies/{cid}/branding"),
        json!({ "logoAssetId": asset["assetId"] }),
    )
    .await;
    let page = s.page(&format!("/{prefix}/dashboard")).await;
    let src = format!("src=\"/api/assets/{}/content\"", text(&asset, "assetId"));
    assert!(
        page.contains("class=\"company-logo\"") && page.contains(&src),
        "the sidebar shows the logo"
    );
    let settings = s.page(&format!("/{prefix}/company/settings")).await;
    assert!(
        settings.contains("data-remove-logo"),
        "and it can be removed"
    );
}
