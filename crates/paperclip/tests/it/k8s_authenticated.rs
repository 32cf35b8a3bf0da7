//! The control plane as `deploy/` runs it in a cluster: authenticated mode,
//! listening on every address. A `claude_k8s` Job (the real CLI against the
//! scripted provider, run by the fake API server's local kubelet) calls back
//! on the machine's network address, as a pod calls the Service, with its
//! run's credentials, and works the task; a request from that address
//! without credentials is nobody.

use crate::clis;
use crate::common;
use crate::fake;
use crate::setup;

use common::teams::*;
use common::{until, TestServer};
use fake::{FakeK8s, LocalKubelet, Script};
use paperclip_scripted_provider::ScriptedProvider;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// This machine's address on its network (no packet is sent: connecting a
/// UDP socket only picks the route), or `None` without one.
fn own_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("10.255.255.255:1").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[tokio::test]
async fn a_job_calls_back_to_an_authenticated_control_plane_on_its_network_address() {
    let Some(cli) = clis::Cli::find("claude_local") else {
        return;
    };
    let Some(ip) = own_address() else {
        eprintln!("skipping: this machine has no network address besides loopback");
        return;
    };
    let provider =
        ScriptedProvider::start(setup::work_the_task("Done from a pod on the network.")).await;

    let k8s = FakeK8s::start().await;
    k8s.script(Script::default());
    let dir = std::env::temp_dir().join(format!("paperclip-k8s-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = k8s.kubeconfig(&dir);
    let ip_text = ip.to_string();
    let mut s = TestServer::start_env(&[
        ("KUBECONFIG", kubeconfig.to_str().unwrap()),
        ("HOSTNAME", fake::SELF_POD),
        ("PAPERCLIP_NAMESPACE", fake::NAMESPACE),
        ("PAPERCLIP_DEPLOYMENT_MODE", "authenticated"),
        ("PAPERCLIP_BIND", "0.0.0.0"),
        ("PAPERCLIP_ALLOWED_HOSTNAMES", &ip_text),
    ])
    .await;
    let port = s.base.rsplit(':').next().unwrap().to_string();
    assert!(s.base.starts_with("http://0.0.0.0:"), "{}", s.base);
    s.base = format!("http://127.0.0.1:{port}");
    let on_network = format!("http://{ip}:{port}");

    // Nobody is the board from the network without signing in.
    let resp = s
        .client()
        .get(format!("{on_network}/api/companies"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);

    let token = bootstrap_token(&s);
    let admin = sign_up_invited(&s, "Ada Admin", "ada@example.com", Some(&token)).await;
    let (status, _) = call(
        &s,
        Method::POST,
        &format!("/api/invites/{token}/accept"),
        Some(&admin),
        Some(json!({ "requestType": "human" })),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (_, company) = call(
        &s,
        Method::POST,
        "/api/companies",
        Some(&admin),
        Some(json!({ "name": "Cluster Co" })),
    )
    .await;
    let cid = company["id"].as_str().unwrap().to_string();
    let (status, agent) = call(
        &s,
        Method::POST,
        &format!("/api/companies/{cid}/agents"),
        Some(&admin),
        Some(
            json!({ "name": "Pod Coder", "role": "engineer", "adapterType": "claude_k8s",
            "adapterConfig": cli.config(&provider) }),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{agent}");
    let aid = agent["id"].as_str().unwrap().to_string();

    // The pod's PAPERCLIP_API_URL is the network address, as a Service's would be.
    k8s.set_api_url(&on_network);
    k8s.run_locally(LocalKubelet {
        home: cli.home.clone(),
        workdir: cli.home.join("work"),
    });
    let (status, issue) = call(
        &s,
        Method::POST,
        &format!("/api/companies/{cid}/issues"),
        Some(&admin),
        Some(json!({ "title": "Ship from the cluster", "status": "todo", "assigneeAgentId": aid })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{issue}");
    let iid = issue["id"].as_str().unwrap().to_string();
    let run: Value = until(120, "the Job's run to end", async || {
        let (_, runs) = call(
            &s,
            Method::GET,
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            Some(&admin),
            None,
        )
        .await;
        runs.as_array()?
            .iter()
            .find(|r| !matches!(r["status"].as_str(), Some("queued" | "running")))
            .cloned()
    })
    .await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let (_, issue) = call(
        &s,
        Method::GET,
        &format!("/api/issues/{iid}"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(issue["status"], "done", "{issue}");
    let (_, comments) = call(
        &s,
        Method::GET,
        &format!("/api/issues/{iid}/comments"),
        Some(&admin),
        None,
    )
    .await;
    assert!(
        comments
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["body"] == "Done from a pod on the network."
                && c["authorAgentId"] == aid.as_str()),
        "{comments}"
    );
}
