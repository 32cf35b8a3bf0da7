//! Identifiers, never UUIDs, in what agents write: a task's id in a
//! comment or a final reply reads as its identifier (ACM-12) linking to it,
//! an agent's as its name, a run's as "run 1a2b3c4d" linking to its page.
//! The page collects the ids it already has (its agents, its runs) and asks
//! the store once for the tasks among the rest ([`task_ids`]), so the text
//! is rewritten in one pass without a query per id. Code (spans and fenced
//! blocks) and URLs keep their ids: there the id is what is meant.

use std::borrow::Cow;
use std::collections::HashMap;

/// The ids a page can name, with where each links.
#[derive(Default)]
pub struct Known {
    /// By id: the words shown and the page linked.
    names: HashMap<String, (String, String)>,
}

impl Known {
    /// Links are absolute: `/{prefix}/tasks/ACM-12`.
    pub fn task(&mut self, prefix: &str, id: &str, identifier: &str) {
        self.insert(
            id,
            identifier.to_string(),
            format!("/{prefix}/tasks/{identifier}"),
        );
    }

    pub fn agent(&mut self, prefix: &str, id: &str, name: &str, url_key: &str) {
        self.insert(id, name.to_string(), format!("/{prefix}/agents/{url_key}"));
    }

    pub fn run(&mut self, prefix: &str, id: &str, agent_key: &str) {
        let short: String = id.chars().take(8).collect();
        self.insert(
            id,
            format!("run {short}"),
            format!("/{prefix}/agents/{agent_key}/runs/{id}"),
        );
    }

    fn insert(&mut self, id: &str, words: String, href: String) {
        self.names
            .entry(id.to_ascii_lowercase())
            .or_insert((words, href));
    }

    fn get(&self, id: &str) -> Option<&(String, String)> {
        self.names.get(&id.to_ascii_lowercase())
    }

    /// `text` (Markdown) with each known id as a link named for it.
    pub fn markdown<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.rewrite(text, true)
    }

    /// `text` with each known id as its name, no links (a one-line excerpt).
    pub fn plain<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.rewrite(text, false)
    }

    fn rewrite<'t>(&self, text: &'t str, links: bool) -> Cow<'t, str> {
        if self.names.is_empty() || !uuids(text).any(|(_, id)| self.get(id).is_some()) {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut fenced = false;
        for line in text.split_inclusive('\n') {
            let t = line.trim_start();
            if links && (t.starts_with("```") || t.starts_with("~~~")) {
                fenced = !fenced;
                out.push_str(line);
                continue;
            }
            if fenced {
                out.push_str(line);
                continue;
            }
            // Odd pieces between backticks are code spans.
            for (i, piece) in line.split('`').enumerate() {
                if i > 0 {
                    out.push('`');
                }
                if i % 2 == 1 && links {
                    out.push_str(piece);
                } else {
                    self.rewrite_prose(piece, links, &mut out);
                }
            }
        }
        Cow::Owned(out)
    }

    fn rewrite_prose(&self, text: &str, links: bool, out: &mut String) {
        let mut last = 0;
        for (at, id) in uuids(text) {
            let before = text[..at].chars().next_back();
            // In a URL or a path the id is part of an address.
            let in_address = matches!(before, Some('/' | '=' | ':' | '#' | '?' | '&'));
            let Some((words, href)) = self.get(id).filter(|_| !in_address) else {
                continue;
            };
            out.push_str(&text[last..at]);
            if links && before != Some('[') {
                out.push_str(&format!("[{}]({href})", escape(words)));
            } else {
                out.push_str(words);
            }
            last = at + id.len();
        }
        out.push_str(&text[last..]);
    }
}

/// Markdown's link-text specials in a name.
fn escape(words: &str) -> String {
    words.replace('[', "\\[").replace(']', "\\]")
}

/// The UUIDs in `text`, with their byte offsets.
pub fn uuids(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
    let mut i = 0;
    std::iter::from_fn(move || {
        while i + 36 <= b.len() {
            let at = i;
            i += 1;
            if (at > 0 && word(b[at - 1])) || b.get(at + 36).is_some_and(|c| word(*c)) {
                continue;
            }
            let shaped = b[at..at + 36].iter().enumerate().all(|(k, c)| match k {
                8 | 13 | 18 | 23 => *c == b'-',
                _ => c.is_ascii_hexdigit(),
            });
            if shaped {
                i = at + 36;
                return Some((at, &text[at..at + 36]));
            }
        }
        None
    })
}

/// The ids in these texts a page does not already know: the ones to look
/// up as tasks, in one query.
pub fn task_ids<'t>(texts: impl IntoIterator<Item = &'t str>, known: &Known) -> Vec<&'t str> {
    let mut ids: Vec<&str> = texts
        .into_iter()
        .flat_map(uuids)
        .map(|(_, id)| id)
        .filter(|id| known.get(id).is_none())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// What a page can name: its agents and runs, and the company's tasks
/// among the other ids in `texts` (one query, however many).
pub async fn load<'t>(
    store: &paperclip_store::Store,
    company_id: &str,
    prefix: &str,
    agents: &[paperclip_core::model::Agent],
    runs: &[(&str, &str)],
    texts: impl IntoIterator<Item = &'t str>,
) -> paperclip_store::Result<Known> {
    let mut known = Known::default();
    for a in agents {
        known.agent(prefix, &a.id, &a.name, &a.url_key);
    }
    for (run, agent) in runs {
        if let Some(a) = agents.iter().find(|a| a.id == *agent) {
            known.run(prefix, run, &a.url_key);
        }
    }
    let ids = task_ids(texts, &known);
    let tasks = paperclip_store::views::detail::identifiers(store, company_id, &ids).await?;
    for (id, identifier) in &tasks {
        known.task(prefix, id, identifier);
    }
    Ok(known)
}

/// The task page's: its comments and its runs' texts.
pub async fn of_task(
    store: &paperclip_store::Store,
    company: &paperclip_core::model::Company,
    agents: &[paperclip_core::model::Agent],
    runs: &[paperclip_core::model::HeartbeatRun],
    comments: &[paperclip_core::model::Comment],
    events: &[paperclip_core::model::RunEvent],
) -> paperclip_store::Result<Known> {
    let run_ids: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| (r.id.as_str(), r.agent_id.as_str()))
        .collect();
    let said = events
        .iter()
        .filter(|e| e.event_type == "transcript.assistant")
        .filter_map(|e| e.payload.as_ref()?.get("text")?.as_str());
    let texts = comments.iter().map(|c| c.body.as_str()).chain(said);
    load(
        store,
        &company.id,
        &company.issue_prefix,
        agents,
        &run_ids,
        texts,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASK: &str = "0b6f7c1e-3a55-4c1a-9d2e-7f00aa11bb22";
    const AGENT: &str = "5e8d1c2a-0000-4000-8000-000000000001";
    const RUN: &str = "9a8b7c6d-1111-4222-8333-444455556666";

    fn known() -> Known {
        let mut k = Known::default();
        k.task("ACM", TASK, "ACM-12");
        k.agent("ACM", AGENT, "Coder", "coder");
        k.run("ACM", RUN, "coder");
        k
    }

    #[test]
    fn ids_become_identifiers_names_and_runs() {
        let text = format!("Done {TASK}; asked {AGENT} in {RUN}.");
        assert_eq!(
            known().markdown(&text),
            "Done [ACM-12](/ACM/tasks/ACM-12); asked [Coder](/ACM/agents/coder) in \
             [run 9a8b7c6d](/ACM/agents/coder/runs/9a8b7c6d-1111-4222-8333-444455556666)."
        );
        assert_eq!(
            known().plain(&text),
            "Done ACM-12; asked Coder in run 9a8b7c6d."
        );
        // Upper case is the same id.
        assert_eq!(known().plain(&TASK.to_uppercase()), "ACM-12");
    }

    #[test]
    fn code_addresses_and_unknown_ids_are_kept() {
        let other = "11111111-2222-4333-8444-555555555555";
        let text = format!(
            "See `curl /api/issues/{TASK}` and /api/issues/{TASK}?x={AGENT}\n```\n{TASK}\n```\n{other} x{TASK}"
        );
        assert_eq!(known().markdown(&text), text);
        assert!(matches!(known().markdown("no ids"), Cow::Borrowed(_)));
        // Link text keeps words, not a link in a link.
        assert_eq!(known().markdown(&format!("[{TASK}](/x)")), "[ACM-12](/x)");
    }

    #[test]
    fn the_unknown_ids_are_looked_up_once() {
        let other = "11111111-2222-4333-8444-555555555555";
        let texts = [format!("{other} {TASK}"), format!("{other} and {AGENT}")];
        let mut k = Known::default();
        k.agent("ACM", AGENT, "Coder", "coder");
        let ids = task_ids(texts.iter().map(String::as_str), &k);
        assert_eq!(ids, vec![TASK, other]);
        assert_eq!(uuids("ab0b6f7c1e-3a55-4c1a-9d2e-7f00aa11bb22").count(), 0);
    }
}
