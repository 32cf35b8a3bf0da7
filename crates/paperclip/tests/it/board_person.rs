//! Local trusted mode has a board person, as the original does: `local-board`,
//! named "Board", behind the routes bound to a person (`auth/get-session`,
//! `auth/profile`, board API keys, invites). Its keys act as it (within the
//! companies they name) and stop at revocation; an agent is never it. The
//! upstream CLI's commands on those routes work against us.

use crate::common;

use common::upstream::{upstream_cli, Cli};
use common::TestServer;
use reqwest::StatusCode;
use serde_json::{json, Value};

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

/// The original's profile: `id`, `email`, `name` strings and `image` (null).
fn assert_profile(user: &Value, name: &str) {
    assert_eq!(user["id"], "local-board", "{user}");
    assert_eq!(user["email"], "local@paperclip.local", "{user}");
    assert_eq!(user["name"], name, "{user}");
    assert!(user.get("image").is_some_and(Value::is_null), "{user}");
}

#[tokio::test]
async fn the_local_board_is_a_person_with_keys_a_profile_and_invites() {
    let s = TestServer::start().await;

    // The session and profile of the person at the machine, in the
    // original's shapes.
    let session = s.ok_get("/api/auth/get-session").await;
    assert_eq!(
        session["session"]["id"],
        "paperclip:local_implicit:local-board"
    );
    assert_eq!(session["session"]["userId"], "local-board");
    assert_profile(&session["user"], "Board");
    assert_profile(&s.ok_get("/api/auth/profile").await, "Board");
    let renamed = s
        .ok_patch("/api/auth/profile", json!({ "name": "Ada at the desk" }))
        .await;
    assert_profile(&renamed, "Ada at the desk");
    let (status, err) = s.patch("/api/auth/profile", json!({ "name": " " })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_profile(
        &s.ok_get("/api/auth/get-session").await["user"],
        "Ada at the desk",
    );

    // A board key scoped to one company acts as the local board's person
    // there, and nowhere else.
    let cid = text(&s.company("Keyed").await["id"]).to_string();
    let other = text(&s.company("Other").await["id"]).to_string();
    // Who the CLI is: the same person, an owner of every company.
    let me = s.ok_get("/api/cli-auth/me").await;
    assert_eq!(me["user"]["id"], "local-board", "{me}");
    assert_eq!(me["source"], "local_implicit");
    assert!(
        me["memberships"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["companyId"] == cid.as_str()
                && m["membershipRole"] == "owner"
                && m["status"] == "active"),
        "{me}"
    );
    let (status, key) = s
        .post(
            "/api/board-api-keys",
            json!({ "name": "script", "requestedCompanyId": cid }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{key}");
    for field in ["id", "name", "token", "createdAt", "expiresAt"] {
        assert!(key[field].is_string(), "{field}: {key}");
    }
    assert!(key["lastUsedAt"].is_null() && key["revokedAt"].is_null());
    let token = text(&key["token"]).to_string();
    assert!(token.starts_with("pcp_board_"));
    let key_id = text(&key["id"]).to_string();
    let listed = s.ok_get("/api/board-api-keys").await;
    let found = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == key["id"])
        .unwrap_or_else(|| panic!("key not listed: {listed}"));
    assert!(found.get("token").is_none(), "a listed key shows no token");

    let (status, me) = s
        .as_agent(&token, None, "GET", "/api/auth/get-session", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(me["session"]["id"], "paperclip:board_key:local-board");
    assert_profile(&me["user"], "Ada at the desk");
    let (status, issue) = s
        .as_agent(
            &token,
            None,
            "POST",
            &format!("/api/companies/{cid}/issues"),
            Some(json!({ "title": "Made with the local board's key" })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{issue}");
    assert_eq!(issue["createdByUserId"], "local-board", "{issue}");
    let (status, err) = s
        .as_agent(
            &token,
            None,
            "GET",
            &format!("/api/companies/{other}/issues"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");
    // A key naming companies takes no instance-wide action.
    let (status, err) = s
        .as_agent(
            &token,
            None,
            "POST",
            "/api/companies",
            Some(json!({ "name": "Not from a scoped key" })),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");

    // An agent is no person.
    let agent = s.agent(&cid, "Worker", None).await;
    let agent_key = s.key(text(&agent["id"])).await;
    for path in [
        "/api/auth/get-session",
        "/api/auth/profile",
        "/api/board-api-keys",
    ] {
        let (status, err) = s.as_agent(&agent_key, None, "GET", path, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}: {err}");
    }

    // Invites: made, listed and revoked by the local board.
    let (status, invite) = s
        .post(&format!("/api/companies/{cid}/invites"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{invite}");
    assert!(text(&invite["token"]).starts_with("pcp_invite_"));
    assert!(text(&invite["inviteUrl"]).contains("/invite/pcp_invite_"));
    let invites = s.ok_get(&format!("/api/companies/{cid}/invites")).await;
    assert!(
        invites["invites"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["id"] == invite["id"]),
        "{invites}"
    );
    let revoked = s
        .ok_post(
            &format!("/api/invites/{}/revoke", text(&invite["id"])),
            json!({}),
        )
        .await;
    assert!(revoked["revokedAt"].is_string(), "{revoked}");

    // Revoked, the key is refused.
    let (status, gone) = s.delete(&format!("/api/board-api-keys/{key_id}")).await;
    assert_eq!(status, StatusCode::OK, "{gone}");
    assert_eq!(gone, json!({ "keyId": key_id, "ok": true }));
    let (status, err) = s
        .as_agent(&token, None, "GET", "/api/auth/profile", None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{err}");
}

#[tokio::test]
async fn the_upstream_cli_acts_as_the_local_board_person() {
    let Some(path) = upstream_cli() else { return };
    let s = TestServer::start().await;
    let cli = Cli::new(path, &s);
    let cid = text(&s.company("CLI Co").await["id"]).to_string();

    let session = cli.ok(&["profile", "session", "--json"]).await.json();
    assert_eq!(session["user"]["id"], "local-board", "{session}");
    let profile = cli.ok(&["profile", "get", "--json"]).await.json();
    assert_profile(&profile, "Board");
    let payload = json!({ "name": "CLI Board" }).to_string();
    let updated = cli
        .ok(&["profile", "update", "--payload-json", &payload, "--json"])
        .await
        .json();
    assert_profile(&updated, "CLI Board");

    let made = cli
        .ok(&[
            "token", "board", "create", "--name", "from-cli", "-C", &cid, "--json",
        ])
        .await
        .json()["key"]
        .clone();
    let key_id = text(&made["id"]).to_string();
    assert!(text(&made["token"]).starts_with("pcp_board_"), "{made}");
    let (status, me) = s
        .as_agent(text(&made["token"]), None, "GET", "/api/auth/profile", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{me}");
    let listed = cli.ok(&["token", "board", "list", "--json"]).await.json();
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["id"] == key_id.as_str()),
        "{listed}"
    );
    cli.ok(&["token", "board", "revoke", &key_id, "--json"])
        .await;
    let (status, _) = s
        .as_agent(text(&made["token"]), None, "GET", "/api/auth/profile", None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let invite = cli
        .ok(&[
            "invite",
            "create",
            "-C",
            &cid,
            "--payload-json",
            "{}",
            "--json",
        ])
        .await
        .json();
    let invite_id = text(&invite["id"]).to_string();
    let invites = cli
        .ok(&["invite", "list", "-C", &cid, "--json"])
        .await
        .json();
    assert!(invites.to_string().contains(&invite_id), "{invites}");
    cli.ok(&["invite", "revoke", &invite_id, "--json"]).await;
    let after = s.ok_get(&format!("/api/companies/{cid}/invites")).await;
    let row = after["invites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == invite_id.as_str())
        .cloned()
        .unwrap_or_default();
    assert!(row["revokedAt"].is_string(), "{after}");
}
