//! Whether a Job's pod runs its CLI yet, or never will (and why, in words
//! a person can act on).

use k8s_openapi::api::core::v1::Pod;

#[derive(Debug, PartialEq)]
pub(crate) enum PodState {
    Running,
    Waiting(String),
    Broken(String),
}

/// Whether a Job's pod runs its CLI yet, or never will.
pub(crate) fn pod_state(pod: &Pod, main: &str) -> PodState {
    let Some(status) = &pod.status else {
        return PodState::Waiting("no status yet".into());
    };
    for c in status.conditions.iter().flatten() {
        if c.type_ == "PodScheduled"
            && c.status == "False"
            && c.reason.as_deref() == Some("Unschedulable")
        {
            return PodState::Broken(format!(
                "Pod unschedulable: {}. Free capacity, or lower the Job's resources / change its nodeSelector and tolerations in the agent's config",
                c.message.clone().unwrap_or_default()
            ));
        }
    }
    let init = status.init_container_statuses.clone().unwrap_or_default();
    let main_statuses = status.container_statuses.clone().unwrap_or_default();
    for c in init.iter().chain(main_statuses.iter()) {
        let state = c.state.clone().unwrap_or_default();
        if let Some(t) = &state.terminated {
            if t.exit_code != 0 && init.iter().any(|i| i.name == c.name) {
                return PodState::Broken(format!(
                    "Init container \"{}\" failed with exit code {}: {}",
                    c.name,
                    t.exit_code,
                    t.message.clone().or(t.reason.clone()).unwrap_or_default()
                ));
            }
        }
        if let Some(w) = &state.waiting {
            let reason = w.reason.clone().unwrap_or_default();
            if ["ErrImagePull", "ImagePullBackOff", "InvalidImageName"].contains(&reason.as_str()) {
                return PodState::Broken(format!(
                    "Image pull failed for container \"{}\" ({}): {}. Check adapterConfig.image and that the namespace's imagePullSecrets can read it",
                    c.name,
                    reason,
                    w.message.clone().unwrap_or_default()
                ));
            }
            if reason == "CrashLoopBackOff" || reason == "CreateContainerConfigError" {
                return PodState::Broken(format!(
                    "Container \"{}\" cannot start ({}): {}",
                    c.name,
                    reason,
                    w.message.clone().unwrap_or_default()
                ));
            }
        }
    }
    let phase = status.phase.clone().unwrap_or_default();
    if ["Running", "Succeeded", "Failed"].contains(&phase.as_str()) {
        return PodState::Running;
    }
    let inits_done = init.iter().all(|i| {
        i.state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .is_some_and(|t| t.exit_code == 0)
    });
    let main_running = main_statuses
        .iter()
        .any(|c| c.name == main && c.state.as_ref().is_some_and(|s| s.running.is_some()));
    if inits_done && main_running {
        return PodState::Running;
    }
    PodState::Waiting(if phase.is_empty() {
        "Pending".into()
    } else {
        phase
    })
}

/// How a finished pod's main container ended.
#[derive(Debug, PartialEq)]
pub(crate) struct MainEnd {
    pub exit_code: i32,
    /// Killed by the kernel at its cgroup's memory limit.
    pub oom: bool,
    /// `resources.limits.memory` as the pod was made with it.
    pub memory_limit: Option<String>,
}

/// The main container's end, from its state, else its last state (a
/// container that restarted); `None` when it never ended.
pub(crate) fn main_end(pod: &Pod, main: &str) -> Option<MainEnd> {
    let status = pod
        .status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == main)?;
    let ended = [status.state.as_ref(), status.last_state.as_ref()]
        .into_iter()
        .flatten()
        .find_map(|s| s.terminated.as_ref())?;
    let memory_limit = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.iter().find(|c| c.name == main))
        .and_then(|c| c.resources.as_ref()?.limits.as_ref()?.get("memory"))
        .map(|q| q.0.clone());
    Some(MainEnd {
        exit_code: ended.exit_code,
        oom: ended.reason.as_deref() == Some("OOMKilled") && ended.exit_code != 0,
        memory_limit,
    })
}

/// What a person reads when the CLI's container ran out of memory: the
/// limit it hit and the config key that raises it.
pub(crate) fn oom_words(container: &str, exit_code: i32, limit: &str) -> String {
    format!(
        "Out of memory: Kubernetes killed the {container} container (OOMKilled, exit code {exit_code}) at its memory limit of {limit}. Raise resources.limits.memory in the agent's adapter config (now {limit}; e.g. double it), then retry"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "status": status})).unwrap()
    }

    #[test]
    fn a_pod_runs_once_its_init_is_done_and_its_cli_started() {
        let initialising = pod(json!({"phase": "Pending",
            "initContainerStatuses": [{"name": "write-prompt", "ready": false, "restartCount": 0, "image": "b", "imageID": "",
                "state": {"waiting": {"reason": "PodInitializing"}}}]}));
        assert_eq!(
            pod_state(&initialising, "claude"),
            PodState::Waiting("Pending".into())
        );
        let started = pod(json!({"phase": "Pending",
            "initContainerStatuses": [{"name": "write-prompt", "ready": false, "restartCount": 0, "image": "b", "imageID": "",
                "state": {"terminated": {"exitCode": 0}}}],
            "containerStatuses": [{"name": "claude", "ready": true, "restartCount": 0, "image": "c", "imageID": "",
                "state": {"running": {}}}]}));
        assert_eq!(pod_state(&started, "claude"), PodState::Running);
        assert_eq!(
            pod_state(&pod(json!({"phase": "Succeeded"})), "claude"),
            PodState::Running
        );
    }

    #[test]
    fn an_oom_killed_container_is_told_from_a_failed_one_with_its_limit() {
        let ended = |reason: &str, code: i32| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": "p"},
                "spec": {"containers": [{"name": "claude", "resources": {"limits": {"memory": "8Gi"}}}]},
                "status": {"phase": "Failed", "containerStatuses": [{"name": "claude", "ready": false,
                    "restartCount": 0, "image": "c", "imageID": "",
                    "state": {"terminated": {"exitCode": code, "reason": reason}}}]}}))
            .unwrap()
        };
        let oom = main_end(&ended("OOMKilled", 137), "claude").unwrap();
        assert_eq!(
            oom,
            MainEnd {
                exit_code: 137,
                oom: true,
                memory_limit: Some("8Gi".into())
            }
        );
        assert!(!main_end(&ended("Error", 137), "claude").unwrap().oom);
        assert_eq!(main_end(&ended("Error", 1), "opencode"), None);
        let running = pod(json!({"phase": "Running",
            "containerStatuses": [{"name": "claude", "ready": true, "restartCount": 1, "image": "c", "imageID": "",
                "state": {"running": {}},
                "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}));
        let restarted = main_end(&running, "claude").unwrap();
        assert!(restarted.oom && restarted.memory_limit.is_none());
        let words = oom_words("claude", 137, "8Gi");
        assert!(
            words.contains("8Gi") && words.contains("resources.limits.memory"),
            "{words}"
        );
    }

    #[test]
    fn pods_that_will_never_run_say_why() {
        let init_failed = pod(json!({"phase": "Pending",
            "initContainerStatuses": [{"name": "write-prompt", "ready": false, "restartCount": 0, "image": "b", "imageID": "",
                "state": {"terminated": {"exitCode": 1, "message": "no space"}}}]}));
        let PodState::Broken(why) = pod_state(&init_failed, "claude") else {
            panic!()
        };
        assert_eq!(
            why,
            "Init container \"write-prompt\" failed with exit code 1: no space"
        );
        let crash = pod(json!({"phase": "Pending",
            "containerStatuses": [{"name": "claude", "ready": false, "restartCount": 3, "image": "c", "imageID": "",
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}}}]}));
        assert!(
            matches!(pod_state(&crash, "claude"), PodState::Broken(w) if w.contains("CrashLoopBackOff"))
        );
        let pull = pod(json!({"phase": "Pending",
            "containerStatuses": [{"name": "claude", "ready": false, "restartCount": 0, "image": "c", "imageID": "",
                "state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}}}]}));
        assert!(
            matches!(pod_state(&pull, "claude"), PodState::Broken(w) if w.contains("adapterConfig.image"))
        );
        let unschedulable = pod(
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "message": "0/3 nodes are available"}]}),
        );
        assert!(
            matches!(pod_state(&unschedulable, "claude"), PodState::Broken(w) if w.starts_with("Pod unschedulable: 0/3 nodes"))
        );
    }
}
