//! The pages a person sees in an authenticated instance: their companies
//! and role only, and two people with different roles in two browsers.

use crate::common;

use common::teams::*;
use reqwest::{Method, StatusCode};
use serde_json::json;

#[tokio::test]
async fn pages_show_a_person_their_companies_and_role_only() {
    let (server, owner) = instance(&[]).await;
    // The new administrator, with no company yet, is offered to found one.
    let html = server
        .client()
        .get(server.url("/"))
        .header("cookie", &owner.cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("Create your first company"), "{html}");
    let stranger = sign_up(&server, "Stray", "stray@example.com").await;
    let html = server
        .client()
        .get(server.url("/"))
        .header("cookie", &stranger.cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("No company yet") && !html.contains("Create your first company"),
        "{html}"
    );
    let (_, home) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Visible" })),
    )
    .await;
    let (_, away) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Hidden" })),
    )
    .await;
    let viewer = join(
        &server,
        &owner,
        home["id"].as_str().unwrap(),
        "viewer",
        "pv@example.com",
    )
    .await;
    let page = |path: String, s: &Session| {
        server
            .client()
            .get(server.url(&path))
            .header("cookie", &s.cookie)
            .send()
    };
    let resp = page(
        format!("/{}/dashboard", home["issuePrefix"].as_str().unwrap()),
        &viewer,
    )
    .await
    .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let html = resp.text().await.unwrap();
    assert!(
        html.contains("You are a viewer in this company"),
        "read-only notice"
    );
    assert!(
        html.contains(&viewer.csrf),
        "the page carries the CSRF token"
    );
    assert!(
        !html.contains("Hidden"),
        "another company is not in the switcher"
    );
    let resp = page(
        format!("/{}/dashboard", away["issuePrefix"].as_str().unwrap()),
        &viewer,
    )
    .await
    .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let resp = page(
        format!("/{}/dashboard", home["issuePrefix"].as_str().unwrap()),
        &owner,
    )
    .await
    .unwrap();
    let html = resp.text().await.unwrap();
    assert!(!html.contains("You are a viewer"));
    assert!(html.contains("Hidden"));

    // Who did what, by name: the activity log and a comment's author.
    let prefix = home["issuePrefix"].as_str().unwrap();
    let cid = home["id"].as_str().unwrap();
    let (_, issue) = call(
        &server,
        Method::POST,
        &format!("/api/companies/{cid}/issues"),
        Some(&owner),
        Some(json!({ "title": "Named" })),
    )
    .await;
    let (status, _) = call(
        &server,
        Method::POST,
        &format!("/api/issues/{}/comments", issue["id"].as_str().unwrap()),
        Some(&owner),
        Some(json!({ "body": "Looks good" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let html = page(format!("/{prefix}/activity"), &viewer)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let text = common::visible_text(&html);
    assert!(
        text.contains("viewer joined the company as viewer"),
        "{text}"
    );
    assert!(text.contains("Ada Admin created"), "{text}");
    let html = page(
        format!("/{prefix}/tasks/{}", issue["identifier"].as_str().unwrap()),
        &viewer,
    )
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    let text = common::visible_text(&html);
    assert!(
        text.contains("Ada Admin") && text.contains("Looks good"),
        "{text}"
    );
    // People are assignees: the owner can pick the viewer; each sees "Me".
    assert!(
        html.contains(&format!("value=\"user:{}\">Me<", viewer.user_id)),
        "the viewer is Me"
    );
    let ident = issue["identifier"].as_str().unwrap();
    let owners = page(format!("/{prefix}/tasks/{ident}"), &owner)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        owners.contains(&format!("value=\"user:{}\">viewer<", viewer.user_id)),
        "the owner can assign the viewer"
    );
    assert!(owners.contains(&format!("value=\"user:{}\">Me<", owner.user_id)));
}

#[tokio::test(flavor = "multi_thread")]
async fn two_people_with_different_roles_see_the_difference_in_the_browser() {
    if !common::browser::ready() {
        return;
    }
    let (server, owner) = instance(&[]).await;
    let (status, _) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Acme" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    common::browser::run("teams", &server.base, std::time::Duration::from_secs(180)).await;
    // What the browser did, read back from the server.
    let (_, list) = call(&server, Method::GET, "/api/companies", Some(&owner), None).await;
    let cid = list[0]["id"].as_str().unwrap();
    let (_, members) = call(
        &server,
        Method::GET,
        &format!("/api/companies/{cid}/members"),
        Some(&owner),
        None,
    )
    .await;
    let vic = members["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["user"]["email"] == "vic@example.com")
        .unwrap();
    assert_eq!(vic["membershipRole"], "viewer");
    let (_, issues) = call(
        &server,
        Method::GET,
        &format!("/api/companies/{cid}/issues"),
        Some(&owner),
        None,
    )
    .await;
    let titles: Vec<&str> = issues
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["title"].as_str())
        .collect();
    assert_eq!(titles, vec!["Owner creates this"]);
}
