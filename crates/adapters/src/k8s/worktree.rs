//! A task's worktree as a Job's working directory. The Job mounts the
//! control plane's volume at the path the control plane has it
//! ([`SHARED_MOUNT`]), so a worktree the server made there is the same
//! directory in the pod, and what the CLI leaves in it is what the server
//! commits and records after the run. A worktree anywhere else does not
//! exist in the pod: such a run is refused, saying what to change, rather
//! than run in a shared directory where its work would be neither isolated
//! nor recorded.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::selfpod::SelfPod;
use super::spec::SHARED_MOUNT;

/// The worktree the server bound this run to. Read from the run's own
/// variables, which only the server sets (upstream reads the same path from
/// `context.paperclipWorkspace.cwd`, which a wake's context could carry).
pub(crate) fn bound(run_env: &BTreeMap<String, String>) -> Option<PathBuf> {
    run_env
        .get("PAPERCLIP_WORKSPACE_CWD")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// `dir` when a Job of this control plane reaches it at the same path, else
/// why not and what to do.
pub(crate) fn reachable(dir: &Path, pod: &SelfPod) -> Result<(), String> {
    if pod.pvc_claim.is_none() {
        return Err(format!(
            "the task's worktree {} cannot be reached from a Job: this control plane has no \
             shared volume (it runs outside the cluster, or its pod mounts no \
             PersistentVolumeClaim at {SHARED_MOUNT}). Run it in the cluster with its data dir \
             on the volume it mounts at {SHARED_MOUNT} (the Helm chart's \
             --data-dir {SHARED_MOUNT}/instance), or assign the task to an agent with a local \
             adapter",
            dir.display()
        ));
    }
    if !dir.starts_with(SHARED_MOUNT) || dir == Path::new(SHARED_MOUNT) {
        return Err(format!(
            "the task's worktree {} is not on the shared volume mounted at {SHARED_MOUNT}, so a \
             Job cannot work in it: put the control plane's data dir on that volume \
             (--data-dir {SHARED_MOUNT}/instance, as the Helm chart does), where task worktrees \
             are made under <data dir>/worktrees",
            dir.display()
        ));
    }
    Ok(())
}

/// A note for the run's log when git in the pod cannot read the worktree's
/// history: a worktree's `.git` file names the repository's own git dir,
/// which is on the volume only if the repository is. The files the CLI
/// changes are recorded either way (the server reads them).
pub(crate) fn git_note(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(".git")).ok()?;
    let gitdir = text.trim().strip_prefix("gitdir:")?.trim();
    (!Path::new(gitdir).starts_with(SHARED_MOUNT)).then(|| {
        format!(
            "note: the task's repository (git dir {gitdir}) is not on the shared volume, so git \
             in the Job cannot read the worktree's history; what the run changes in the \
             worktree is still recorded. Keep the repository under {SHARED_MOUNT} for git to \
             work in Jobs"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_cluster() -> SelfPod {
        SelfPod {
            pvc_claim: Some("paperclip-data".into()),
            ..SelfPod::default()
        }
    }

    #[test]
    fn a_worktree_is_reachable_only_on_the_shared_volume_of_a_pod() {
        let on_volume = Path::new("/paperclip/instance/worktrees/c1/ACM-1");
        assert_eq!(reachable(on_volume, &in_cluster()), Ok(()));
        let elsewhere = reachable(
            Path::new("/var/lib/paperclip/worktrees/c1/ACM-1"),
            &in_cluster(),
        );
        assert!(elsewhere
            .unwrap_err()
            .contains("put the control plane's data dir"));
        // A prefix of the name is not the volume.
        assert!(reachable(Path::new("/paperclipx/w/ACM-1"), &in_cluster()).is_err());
        let outside = reachable(on_volume, &SelfPod::default()).unwrap_err();
        assert!(outside.contains("no shared volume"), "{outside}");
    }

    #[test]
    fn the_run_env_names_the_bound_worktree() {
        let env = BTreeMap::from([("PAPERCLIP_WORKSPACE_CWD".to_string(), "/paperclip/w".into())]);
        assert_eq!(bound(&env), Some(PathBuf::from("/paperclip/w")));
        assert_eq!(bound(&BTreeMap::new()), None);
    }

    #[test]
    fn git_in_the_job_is_noted_when_the_repository_is_off_the_volume() {
        let dir = std::env::temp_dir().join(format!("k8s-worktree-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(".git"), "gitdir: /srv/app/.git/worktrees/ACM-1\n").unwrap();
        assert!(git_note(&dir)
            .unwrap()
            .contains("/srv/app/.git/worktrees/ACM-1"));
        std::fs::write(
            dir.join(".git"),
            "gitdir: /paperclip/repos/app/.git/worktrees/ACM-1\n",
        )
        .unwrap();
        assert_eq!(git_note(&dir), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
