//! The original's keys in an `issue.updated` activity row's details, beside
//! our `changes` (each field's `from` and `to`): each changed field's new
//! value at the top level (upstream spreads the request's fields there),
//! their old values under `_previous`, and the rule that let the actor
//! write (`authorizationReason`). Readers of upstream's log (its review
//! policy looks at `_previous.status`) find them where they expect.

use paperclip_core::actor::{Actor, ActorKind};
use serde_json::{Map, Value};

/// Adds upstream's keys to `details` for `changes`; a key we already set
/// there (`identifier`, `changes`, a reopening's) is kept as it is.
pub(crate) fn add(details: &mut Value, changes: &Map<String, Value>, actor: &Actor) {
    let Some(out) = details.as_object_mut() else {
        return;
    };
    let mut previous = Map::new();
    // A description is in `changes` already, old and new, and may be long
    // (up to its bound): two more copies would double each edit's row.
    for (field, change) in changes.iter().filter(|(f, _)| *f != "description") {
        previous.insert(field.clone(), change["from"].clone());
        out.entry(field.clone())
            .or_insert_with(|| change["to"].clone());
    }
    if !previous.is_empty() {
        out.insert("_previous".into(), Value::Object(previous));
    }
    // Upstream's reasons for the two kinds of writers it has: the board, and
    // an agent within its company's scope. Paperclip's own changes (the
    // scheduler, recovery) go through no such rule.
    let reason = match actor.kind {
        ActorKind::User => Some("allow_board_actor"),
        ActorKind::Agent => Some("allow_scoped_agent_write"),
        ActorKind::System => None,
    };
    if let Some(reason) = reason {
        out.insert("authorizationReason".into(), reason.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_assignment_reads_as_upstreams() {
        let changes = json!({ "assigneeAgentId": { "from": null, "to": "a1" } });
        let mut details = json!({ "identifier": "ACM-1", "changes": changes });
        add(
            &mut details,
            changes.as_object().unwrap(),
            &Actor::local_board(),
        );
        assert_eq!(
            details,
            json!({
                "identifier": "ACM-1",
                "changes": changes,
                "assigneeAgentId": "a1",
                "_previous": { "assigneeAgentId": null },
                "authorizationReason": "allow_board_actor",
            })
        );
    }

    #[test]
    fn our_own_keys_stay_and_the_writer_is_named() {
        let changes = json!({ "status": { "from": "done", "to": "todo" } });
        let mut details = json!({ "identifier": "ACM-2", "status": "kept" });
        add(
            &mut details,
            changes.as_object().unwrap(),
            &Actor::agent("a1", "c1", None),
        );
        assert_eq!(details["status"], "kept");
        assert_eq!(details["_previous"], json!({ "status": "done" }));
        assert_eq!(details["authorizationReason"], "allow_scoped_agent_write");
        let long = json!({ "description": { "from": "old", "to": "new" } });
        let mut edited = json!({});
        add(
            &mut edited,
            long.as_object().unwrap(),
            &Actor::local_board(),
        );
        assert!(edited.get("description").is_none() && edited.get("_previous").is_none());
        let mut system = json!({});
        add(&mut system, changes.as_object().unwrap(), &Actor::system());
        assert!(system.get("authorizationReason").is_none());
        assert_eq!(system["status"], "todo");
    }
}
