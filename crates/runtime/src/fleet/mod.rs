//! Several instances of the control plane on one Postgres database (issue
//! 38). Each instance registers under a stable id with a lease it renews
//! ([`lease`]); every run it claims records it as the owner. While it runs,
//! each instance sweeps for runs whose owner's lease expired and settles
//! them ([`crate::recovery::settle_lost`]), and lets go of runs of its own
//! that another instance settled or took over. Live events cross instances
//! on the Postgres bus ([`bus`]). On SQLite there is one instance: the lease
//! is kept all the same (recovery at start reads it) and there is no bus.

pub(crate) mod bus;
pub(crate) mod lease;

use std::path::Path;
use std::time::Duration;

/// How long a lease lasts without renewal, by default; renewed every sixth
/// of it. A dead instance's runs are taken over within this plus one sweep.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
/// The shortest lease accepted (tests use short ones).
pub const MIN_LEASE: Duration = Duration::from_secs(2);

/// Who this instance is: its stable id, this start of it, and its host.
#[derive(Debug, Clone)]
pub struct Identity {
    pub id: String,
    pub incarnation: String,
    pub hostname: String,
}

/// How this instance takes part in the fleet, set before the runtime starts.
#[derive(Debug, Clone)]
pub struct FleetSettings {
    /// The instance id (`--instance-id`, `PAPERCLIP_INSTANCE_ID`); `None`:
    /// the id kept in the data dir, made at the first start.
    pub id: Option<String>,
    pub lease: Duration,
}

impl Default for FleetSettings {
    fn default() -> FleetSettings {
        FleetSettings {
            id: None,
            lease: DEFAULT_LEASE,
        }
    }
}

/// Whether `id` can name an instance: printable, no spaces, at most 200 bytes.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 200 && id.chars().all(|c| c.is_ascii_graphic())
}

pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown-host".into())
}

/// This start's identity: the configured id, or the one kept in
/// `<data_dir>/instance-id` (made now if there is none).
pub(crate) fn identity(data_dir: &Path, configured: Option<&str>) -> anyhow::Result<Identity> {
    let hostname = hostname();
    let id = match configured {
        Some(id) => id.to_string(),
        None => {
            let path = data_dir.join("instance-id");
            match std::fs::read_to_string(&path) {
                Ok(id) if valid_id(id.trim()) => id.trim().to_string(),
                _ => {
                    let id = format!(
                        "{hostname}-{}",
                        &uuid::Uuid::new_v4().simple().to_string()[..8]
                    );
                    std::fs::write(&path, format!("{id}\n"))?;
                    id
                }
            }
        }
    };
    anyhow::ensure!(valid_id(&id), "the instance id {id:?} is not a valid id");
    Ok(Identity {
        id,
        incarnation: uuid::Uuid::now_v7().to_string(),
        hostname,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_keeps_its_id_across_starts_but_not_its_incarnation() {
        let dir = std::env::temp_dir().join(format!("fleet-id-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let first = identity(&dir, None).unwrap();
        let again = identity(&dir, None).unwrap();
        assert_eq!(first.id, again.id);
        assert_ne!(first.incarnation, again.incarnation);
        assert_eq!(identity(&dir, Some("pod-a")).unwrap().id, "pod-a");
        assert!(identity(&dir, Some("two words")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
