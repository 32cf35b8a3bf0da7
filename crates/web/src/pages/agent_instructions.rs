//! The agent page's instructions editor: the entry file (`AGENTS.md`) its
//! runs are handed, saved through `PUT /api/agents/{id}/instructions-bundle/file`.

use maud::{html, Markup};
use paperclip_core::model::Agent;

/// What the editor shows of a file: enough to edit an instructions file.
const MAX_SHOWN: u64 = 256 * 1024;

pub fn section(agent: &Agent) -> Markup {
    let path = agent
        .adapter_config
        .get("instructionsFilePath")
        .and_then(|v| v.as_str())
        .filter(|s| !s.trim().is_empty());
    let entry = path
        .and_then(|p| std::path::Path::new(p).file_name())
        .map_or("AGENTS.md".to_string(), |n| n.to_string_lossy().to_string());
    let content = path
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() <= MAX_SHOWN))
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    html! {
        section data-instructions {
            h2 { "Instructions" }
            p.muted { "The " code { (entry) } " file every run of this agent is handed as its instructions." }
            form data-api-form="agent-instructions" data-url={"/api/agents/" (agent.id) "/instructions-bundle/file"} data-path=(entry) {
                label { (entry) textarea name="content" rows="12" spellcheck="false" { (content) } }
                div.actions { button.primary type="submit" { "Save instructions" } }
            }
        }
    }
}
