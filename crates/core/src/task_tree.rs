//! How deep an agent may grow a task tree (the original's rule): an agent's
//! new task goes at most [`MAX_AGENT_TASK_HIERARCHY_DEPTH`] levels below its
//! root. A request for a deeper task is not refused: the task is placed
//! beside the task that asked (under the requested parent's parent) and the
//! answer says so with `parentAdjusted`. People are never limited, and trees
//! already deeper than the limit stay as they are.

/// The deepest level an agent's new task may sit at; a root task is level 0.
pub const MAX_AGENT_TASK_HIERARCHY_DEPTH: usize = 2;

/// Where an agent's new task goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The parent actually written (`None`: a root task).
    pub parent_id: Option<String>,
    /// Whether that differs from the requested parent.
    pub parent_adjusted: bool,
}

/// The parent of an agent's new task, given the requested parent and that
/// parent's ancestors, nearest first (at least the first
/// `MAX_AGENT_TASK_HIERARCHY_DEPTH` of them when there are that many).
/// The requested parent sits at level `ancestors.len()`; a child there would
/// be one level deeper, so past the limit it moves one level up, beside the
/// requester: never further, so an existing deep tree keeps its shape.
pub fn agent_placement(requested_parent: &str, ancestors: &[String]) -> Placement {
    if ancestors.len() < MAX_AGENT_TASK_HIERARCHY_DEPTH {
        return Placement {
            parent_id: Some(requested_parent.to_string()),
            parent_adjusted: false,
        };
    }
    Placement {
        parent_id: ancestors.first().cloned(),
        parent_adjusted: true,
    }
}

/// The notice an agent reads in the answer when its task was moved.
pub fn adjustment_message(requested: &str, placed_under: Option<&str>) -> String {
    match placed_under {
        Some(parent) => format!(
            "Agent-made task trees are at most {MAX_AGENT_TASK_HIERARCHY_DEPTH} levels deep: \
             the new task is placed under {parent}, beside {requested}, instead of under {requested}."
        ),
        None => format!(
            "Agent-made task trees are at most {MAX_AGENT_TASK_HIERARCHY_DEPTH} levels deep: \
             the new task is a top-level task instead of a subtask of {requested}."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_child_of_a_root_or_of_a_child_stays_where_asked() {
        assert_eq!(
            agent_placement("root", &[]),
            Placement {
                parent_id: Some("root".into()),
                parent_adjusted: false
            }
        );
        assert_eq!(
            agent_placement("child", &chain(&["root"])),
            Placement {
                parent_id: Some("child".into()),
                parent_adjusted: false
            }
        );
    }

    #[test]
    fn a_child_of_a_grandchild_goes_beside_it() {
        assert_eq!(
            agent_placement("grandchild", &chain(&["child", "root"])),
            Placement {
                parent_id: Some("child".into()),
                parent_adjusted: true
            }
        );
    }

    #[test]
    fn a_deeper_existing_tree_moves_the_new_task_one_level_only() {
        let placed = agent_placement("l4", &chain(&["l3", "l2", "l1", "root"]));
        assert_eq!(placed.parent_id.as_deref(), Some("l3"));
        assert!(placed.parent_adjusted);
    }

    #[test]
    fn the_notice_names_both_tasks() {
        let text = adjustment_message("ACM-7", Some("ACM-3"));
        assert!(text.contains("under ACM-3, beside ACM-7"), "{text}");
        assert!(adjustment_message("ACM-7", None).contains("top-level"));
    }
}
