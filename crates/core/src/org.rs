//! Org-tree rules that do not need the database to decide.

use std::collections::HashMap;

/// Whether making `agent` report to `new_manager` would close a loop, given
/// the current `reports_to` edges of the company (agent id -> manager id).
/// The walk is bounded by the number of edges, so a corrupt graph cannot hang it.
pub fn would_create_cycle(
    reports_to: &HashMap<String, Option<String>>,
    agent: &str,
    new_manager: &str,
) -> bool {
    let mut current = Some(new_manager.to_string());
    let mut steps = 0;
    while let Some(id) = current {
        if id == agent {
            return true;
        }
        steps += 1;
        if steps > reports_to.len() + 1 {
            return true;
        }
        current = reports_to.get(&id).cloned().flatten();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edges(pairs: &[(&str, Option<&str>)]) -> HashMap<String, Option<String>> {
        pairs
            .iter()
            .map(|(a, m)| (a.to_string(), m.map(str::to_string)))
            .collect()
    }

    #[test]
    fn detects_direct_and_indirect_cycles() {
        let g = edges(&[("ceo", None), ("cto", Some("ceo")), ("eng", Some("cto"))]);
        assert!(would_create_cycle(&g, "ceo", "eng"));
        assert!(would_create_cycle(&g, "ceo", "ceo"));
        assert!(!would_create_cycle(&g, "eng", "ceo"));
    }
}
