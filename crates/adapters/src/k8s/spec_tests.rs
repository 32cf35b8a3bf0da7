use super::*;
use crate::k8s::config;
use crate::k8s::selfpod::{SecretVolume, SelfPod};

fn pod() -> SelfPod {
    SelfPod {
        name: Some("paperclip-0".into()),
        namespace: "paperclip".into(),
        image: Some("ghcr.io/x/paperclip:1".into()),
        pvc_claim: Some("paperclip-data".into()),
        secret_volumes: vec![SecretVolume {
            volume_name: "creds".into(),
            secret_name: "s1".into(),
            mount_path: "/etc/creds".into(),
            default_mode: Some(256),
        }],
        env_value_from: serde_json::from_value(json!([
            {"name": "ANTHROPIC_API_KEY", "valueFrom": {"secretKeyRef": {"name": "k", "key": "a"}}},
            {"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"name": "db", "key": "url"}}},
            {"name": "FOO", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
        ]))
        .unwrap(),
        env_from: serde_json::from_value(json!([{"secretRef": {"name": "bulk"}}])).unwrap(),
        image_pull_secrets: vec!["regcred".into()],
        dns_config: Some(json!({"nameservers": ["10.0.0.10"]})),
        ..SelfPod::default()
    }
}

fn job_json(config: Value, prompt: &str, env: &[(&str, &str)]) -> (Value, Option<Value>) {
    let cfg = config::parse(&config).unwrap();
    let pod = pod();
    let env: BTreeMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let args = vec!["--print".to_string(), "it's".to_string()];
    let secret_env = paperclip_core::company_secret::resolved_names(&config);
    let built = build(&JobInput {
        adapter_type: "claude_k8s",
        container: "claude",
        agent_id: "agent-1",
        agent_name: "Pod Coder",
        run_id: "run-1",
        company_id: "co-1",
        task_id: Some("task-1"),
        namespace: cfg.namespace.as_deref().unwrap_or("paperclip"),
        image: "ghcr.io/x/paperclip:1",
        config: &cfg,
        pod: &pod,
        env: &env,
        secret_env: &secret_env,
        program: "claude",
        args: &args,
        working_dir: "/paperclip",
        prompt,
        active_deadline: None,
    })
    .unwrap();
    (
        serde_json::to_value(&built.job).unwrap(),
        built
            .prompt_secret
            .map(|s| serde_json::to_value(s).unwrap()),
    )
}

#[test]
fn names_are_dns_labels_with_a_hash_of_the_raw_ids() {
    let run = "0123456789abcdef0123456789abcdef01234567";
    let name = job_name("claude_k8s", "AgentWithUPPER_and_under", run);
    assert!(name.len() <= 63, "{name}");
    assert!(name.starts_with("ac-agentwithupperan-0123456789abcdef-"));
    let hash = Sha256::digest(format!("AgentWithUPPER_and_under:{run}").as_bytes());
    assert!(name.ends_with(&format!("{:02x}{:02x}{:02x}", hash[0], hash[1], hash[2])));
    let other = job_name("claude_k8s", "AgentWithUPPER_and_under", &format!("{run}x"));
    assert_ne!(name, other, "a shared prefix still gives two names");
    let long = job_name("opencode_k8s", &"a".repeat(80), &"b".repeat(80));
    assert!(long.len() <= 63 && long.starts_with("agent-opencode-"));
}

#[test]
fn label_values_are_sanitized_or_left_out() {
    assert_eq!(label_value("run:1/2").as_deref(), Some("run12"));
    assert_eq!(label_value("-_x_-").as_deref(), Some("x"));
    assert_eq!(label_value("::"), None);
    assert_eq!(label_value(&"a".repeat(70)).unwrap().len(), 63);
    assert_eq!(
        agent_selector("claude_k8s", "agent-1"),
        "paperclip.io/agent-id=agent-1,paperclip.io/adapter-type=claude_k8s"
    );
}

#[test]
fn the_job_carries_the_contract_labels_security_and_resources() {
    let (job, secret) = job_json(
        json!({"labels": {"team": "a", "paperclip.io/run-id": "x"}}),
        "hi",
        &[],
    );
    assert!(secret.is_none());
    let labels = &job["metadata"]["labels"];
    assert_eq!(labels, &job["spec"]["template"]["metadata"]["labels"]);
    assert_eq!(labels["paperclip.io/agent-id"], "agent-1");
    assert_eq!(
        labels["paperclip.io/run-id"], "run-1",
        "a user label cannot override"
    );
    assert_eq!(labels["paperclip.io/company-id"], "co-1");
    assert_eq!(labels["paperclip.io/adapter-type"], "claude_k8s");
    assert_eq!(labels["team"], "a");
    assert_eq!(labels["paperclip.io/task-id"], "task-1");
    let annotations = &job["metadata"]["annotations"];
    assert_eq!(annotations["paperclip.io/agent-name"], "Pod Coder");
    assert_eq!(annotations["paperclip.io/adapter-type"], "claude_k8s");
    assert_eq!(
        annotations, &job["spec"]["template"]["metadata"]["annotations"],
        "the pod is annotated as its Job"
    );
    let spec = &job["spec"];
    assert_eq!(spec["backoffLimit"], 0);
    assert_eq!(spec["ttlSecondsAfterFinished"], 300);
    assert!(spec.get("activeDeadlineSeconds").is_none());
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(
        pod["securityContext"],
        json!({"runAsNonRoot": true, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000, "fsGroupChangePolicy": "OnRootMismatch"})
    );
    let main = &pod["containers"][0];
    let sc = json!({"capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": false, "runAsNonRoot": true, "runAsUser": 1000, "allowPrivilegeEscalation": false});
    assert_eq!(main["securityContext"], sc);
    assert_eq!(pod["initContainers"][0]["securityContext"], sc);
    assert_eq!(
        main["resources"]["requests"],
        json!({"cpu": "1000m", "memory": "2Gi"})
    );
    assert_eq!(
        main["resources"]["limits"],
        json!({"cpu": "4000m", "memory": "8Gi"})
    );
    assert_eq!(
        main["command"][2],
        "cat /tmp/prompt/prompt.txt | claude '--print' 'it'\\''s'"
    );
    assert_eq!(pod["imagePullSecrets"], json!([{"name": "regcred"}]));
    assert_eq!(pod["dnsConfig"]["nameservers"][0], "10.0.0.10");
    let volumes = pod["volumes"].as_array().unwrap();
    assert!(volumes.contains(
        &json!({"name": "data", "persistentVolumeClaim": {"claimName": "paperclip-data"}})
    ));
    assert!(volumes.contains(&json!({"name": "creds", "secret": {"secretName": "s1", "defaultMode": 256, "optional": true}})));
    assert!(main["volumeMounts"]
        .as_array()
        .unwrap()
        .contains(&json!({"name": "data", "mountPath": "/paperclip"})));
}

#[test]
fn retained_jobs_have_no_ttl_and_a_timeout_is_the_active_deadline() {
    let (job, _) = job_json(json!({"retainJobs": true}), "hi", &[]);
    assert!(job["spec"].get("ttlSecondsAfterFinished").is_none());
}

#[test]
fn env_references_are_allow_listed_and_literals_win() {
    let (job, _) = job_json(
        json!({}),
        "hi",
        &[("FOO", "literal"), ("HOME", "/paperclip")],
    );
    let main = &job["spec"]["template"]["spec"]["containers"][0];
    let names: Vec<&str> = main["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec![
            "FOO",
            "HOME",
            "ANTHROPIC_API_KEY",
            "DATABASE_URL",
            "PAPERCLIP_SECRETS_MASTER_KEY"
        ]
    );
    // The server's own secrets read empty whatever its envFrom holds.
    assert_eq!(main["env"][3], json!({"name": "DATABASE_URL", "value": ""}));
    assert_eq!(main["envFrom"], json!([{"secretRef": {"name": "bulk"}}]));
    let init = &job["spec"]["template"]["spec"]["initContainers"][0];
    assert!(init.get("envFrom").is_none());
}

#[test]
fn env_from_passes_by_reference_in_the_control_planes_namespace_unless_opted_out() {
    let env_from = |config: Value| {
        let (job, _) = job_json(config, "hi", &[]);
        let main = job["spec"]["template"]["spec"]["containers"][0].clone();
        let blanked = main["env"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "DATABASE_URL");
        (main.get("envFrom").cloned(), blanked)
    };
    let bulk = Some(json!([{"secretRef": {"name": "bulk"}}]));
    assert_eq!(env_from(json!({})), (bulk.clone(), true));
    assert_eq!(
        env_from(json!({"inheritEnvFrom": null})),
        (bulk.clone(), true)
    );
    assert_eq!(env_from(json!({"inheritEnvFrom": false})), (None, false));
    // Another namespace: the names would not resolve there, unless the
    // config says they do.
    assert_eq!(env_from(json!({"namespace": "agents"})), (None, false));
    assert_eq!(
        env_from(json!({"namespace": "agents", "inheritEnvFrom": true})),
        (bulk, true)
    );
    assert!(config::parse(&json!({"inheritEnvFrom": "yes"})).is_err());
}

#[test]
fn a_prompt_up_to_256_kib_goes_by_env_and_a_larger_one_by_secret() {
    let exact = "a".repeat(PROMPT_ENV_LIMIT);
    let (job, secret) = job_json(json!({}), &exact, &[]);
    assert!(secret.is_none());
    let init = &job["spec"]["template"]["spec"]["initContainers"][0];
    assert_eq!(init["env"][0]["name"], "PROMPT_CONTENT");
    assert_eq!(
        init["env"][0]["value"].as_str().unwrap().len(),
        PROMPT_ENV_LIMIT
    );
    assert_eq!(
        init["command"][2],
        "printf '%s' \"$PROMPT_CONTENT\" > /tmp/prompt/prompt.txt"
    );
    // counted in bytes: 131,073 two-byte characters are over the limit
    let large = "é".repeat(PROMPT_ENV_LIMIT / 2 + 1);
    let (job, secret) = job_json(json!({}), &large, &[]);
    let secret = secret.expect("a prompt Secret");
    let name = job["metadata"]["name"].as_str().unwrap();
    assert_eq!(secret["metadata"]["name"], format!("{name}-prompt"));
    assert_eq!(secret["stringData"]["prompt.txt"], large.as_str());
    let pod = &job["spec"]["template"]["spec"];
    let init = &pod["initContainers"][0];
    assert!(init["env"].as_array().is_none_or(|e| e.is_empty()));
    assert_eq!(
        init["command"][2],
        "cp /tmp/prompt-secret/prompt.txt /tmp/prompt/prompt.txt"
    );
    assert!(pod["volumes"].as_array().unwrap().contains(
        &json!({"name": "prompt-secret", "secret": {"secretName": format!("{name}-prompt"), "optional": false}})
    ));
}

#[test]
fn credential_shaped_values_go_into_the_runs_secret() {
    let (job, _) = job_json(
        json!({}),
        "hi",
        &[("PAPERCLIP_API_KEY", "jwt"), ("TZ", "UTC")],
    );
    let name = job["metadata"]["name"].as_str().unwrap();
    let env = job["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap()
        .clone();
    let key = env
        .iter()
        .find(|e| e["name"] == "PAPERCLIP_API_KEY")
        .unwrap();
    assert_eq!(
        key["valueFrom"]["secretKeyRef"],
        json!({"name": format!("{name}-env"), "key": "PAPERCLIP_API_KEY"})
    );
    assert!(env.iter().any(|e| e["name"] == "TZ" && e["value"] == "UTC"));
    assert!(!job.to_string().contains("jwt"));
}

#[test]
fn a_company_secrets_value_goes_into_the_runs_secret_whatever_its_name() {
    let binding = paperclip_core::company_secret::resolved_binding("s3cret-host".into());
    let (job, _) = job_json(
        json!({ "env": { "DEPLOY_HOST": binding } }),
        "hi",
        &[("DEPLOY_HOST", "s3cret-host")],
    );
    let env = &job["spec"]["template"]["spec"]["containers"][0]["env"];
    let host = env
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "DEPLOY_HOST")
        .unwrap();
    assert!(host["valueFrom"]["secretKeyRef"].is_object(), "{host}");
    assert!(!job.to_string().contains("s3cret-host"));
}
