//! Prompt templates: `{{path}}` placeholders from a fixed catalog. There is no
//! code execution, no conditionals and no loops; an unknown variable is an
//! error when the template is saved, never a silent blank at run time.

use std::collections::BTreeMap;

/// Every variable a template may use.
pub const CATALOG: &[&str] = &[
    "company.id",
    "company.name",
    "company.issuePrefix",
    "agent.id",
    "agent.name",
    "agent.role",
    "agent.title",
    "agent.urlKey",
    "run.id",
    "run.source",
    "run.triggerDetail",
    "run.startedAt",
    "heartbeat.reason",
    "task.id",
    "task.identifier",
    "task.title",
    "task.status",
    "task.description",
    "wake.commentId",
    "wake.comments",
    "wake.payloadJson",
    "approval.id",
    "approval.status",
    "api.url",
    "paperclip.skill",
    "credentials.apiBaseUrl",
    "credentials.apiKey",
];

/// Variables whose values are credentials: allowed (the spec keeps them for
/// simplicity) but flagged where a person picks them, and never shown in a
/// preview. At run time the values are in the run's redaction set, so they
/// never reach a log, an excerpt or a live event either.
pub fn is_sensitive(name: &str) -> bool {
    name.starts_with("credentials.")
}

/// What a preview shows in place of a sensitive value.
pub fn masked(name: &str) -> String {
    format!("[{name}: resolved at run time, hidden]")
}

/// [`render`] with every sensitive variable's value replaced by [`masked`]:
/// what a person may see of a prompt.
pub fn render_masked(template: &str, values: &BTreeMap<&str, String>) -> String {
    let mut shown = values.clone();
    for name in CATALOG.iter().filter(|n| is_sensitive(n)) {
        shown.insert(name, masked(name));
    }
    render(template, &shown)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateError {
    Unknown(String),
    Unclosed(usize),
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TemplateError::Unknown(name) => write!(f, "Unknown template variable {{{{{name}}}}}"),
            TemplateError::Unclosed(at) => write!(f, "Unclosed {{{{ at byte {at}"),
        }
    }
}

/// The variables a template uses, in order; errors on unknown or unclosed ones.
pub fn variables(template: &str) -> Result<Vec<String>, TemplateError> {
    let mut out = Vec::new();
    let mut rest = template;
    let mut offset = 0;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or(TemplateError::Unclosed(offset + start))?;
        let name = after[..end].trim();
        if !CATALOG.contains(&name) {
            return Err(TemplateError::Unknown(name.to_string()));
        }
        out.push(name.to_string());
        offset += start + 2 + end + 2;
        rest = &after[end + 2..];
    }
    Ok(out)
}

/// Fills placeholders from `values`; a known variable without a value is empty.
/// Call [`variables`] first (at save time) so unknown names cannot get here.
pub fn render(template: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let name = after[..end].trim();
                if let Some(value) = values.get(name) {
                    out.push_str(value);
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The prompt of an agent without a template: who it is, why it woke, the
/// task, what was said since, and the procedure, leaving out what is empty.
pub fn default_prompt(values: &BTreeMap<&str, String>) -> String {
    let get = |k: &str| {
        values
            .get(k)
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty())
    };
    let mut out = format!(
        "You are {}, {} at {}. Paperclip woke you for a heartbeat",
        get("agent.name").unwrap_or("an agent"),
        get("agent.title")
            .or(get("agent.role"))
            .unwrap_or("an agent"),
        get("company.name").unwrap_or("your company"),
    );
    match get("heartbeat.reason") {
        Some(reason) => out.push_str(&format!(" (reason: {reason}).\n")),
        None => out.push_str(".\n"),
    }
    if let Some(id) = get("task.identifier") {
        out.push_str(&format!(
            "\nYour task: {id} \"{}\" (status {}).\n",
            get("task.title").unwrap_or(""),
            get("task.status").unwrap_or("unknown")
        ));
        if let Some(description) = get("task.description") {
            out.push_str(&format!("\n{description}\n"));
        }
    }
    if let Some(comments) = get("wake.comments") {
        out.push_str(&format!(
            "\nNew comments since you last looked:\n{comments}\n"
        ));
    }
    if let Some(status) = get("approval.status") {
        out.push_str(&format!(
            "\nApproval {} was {status}.\n",
            get("approval.id").unwrap_or("")
        ));
    }
    out.push_str(
        "\nFollow the Paperclip skill: check out the task before working on it (a 409 means \
         someone else has it; do not retry), do the work, comment what you did, and set the \
         task's final status. Call the API at $PAPERCLIP_API_URL with \
         `Authorization: Bearer $PAPERCLIP_API_KEY` and `X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID`.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_prompt_names_the_task_and_skips_what_is_empty() {
        let mut v = BTreeMap::new();
        v.insert("agent.name", "Coder".to_string());
        v.insert("agent.role", "engineer".to_string());
        v.insert("company.name", "Acme".to_string());
        v.insert("heartbeat.reason", "issue_assigned".to_string());
        v.insert("task.identifier", "ACM-3".to_string());
        v.insert("task.title", "Fix login".to_string());
        v.insert("task.status", "todo".to_string());
        v.insert("task.description", String::new());
        let p = default_prompt(&v);
        assert!(p.starts_with("You are Coder, engineer at Acme. Paperclip woke you for a heartbeat (reason: issue_assigned)."));
        assert!(p.contains("Your task: ACM-3 \"Fix login\" (status todo)."));
        assert!(!p.contains("New comments"));
        assert!(!p.contains("Approval"));
        v.insert("wake.comments", "- board: please hurry".to_string());
        assert!(default_prompt(&v)
            .contains("New comments since you last looked:\n- board: please hurry"));
    }

    #[test]
    fn known_variables_render_and_unknown_ones_are_refused() {
        let t = "You are {{ agent.name }} at {{company.name}}. Task: {{task.identifier}}.";
        assert_eq!(
            variables(t).unwrap(),
            ["agent.name", "company.name", "task.identifier"]
        );
        let mut values = BTreeMap::new();
        values.insert("agent.name", "CEO".to_string());
        values.insert("company.name", "Acme".to_string());
        assert_eq!(render(t, &values), "You are CEO at Acme. Task: .");
        assert_eq!(
            variables("{{agent.secret}}"),
            Err(TemplateError::Unknown("agent.secret".into()))
        );
        assert_eq!(
            variables("hi {{agent.name"),
            Err(TemplateError::Unclosed(3))
        );
        assert_eq!(variables("no placeholders").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn sensitive_values_are_masked_in_a_preview_only() {
        let t = "Key {{credentials.apiKey}} at {{ credentials.apiBaseUrl }} for {{agent.name}}";
        assert_eq!(
            variables(t).unwrap(),
            ["credentials.apiKey", "credentials.apiBaseUrl", "agent.name"]
        );
        let mut values = BTreeMap::new();
        values.insert("credentials.apiKey", "eyJ.secret".to_string());
        values.insert(
            "credentials.apiBaseUrl",
            "http://127.0.0.1:3100".to_string(),
        );
        values.insert("agent.name", "Coder".to_string());
        let shown = render_masked(t, &values);
        assert!(
            !shown.contains("eyJ.secret") && !shown.contains("127.0.0.1"),
            "{shown}"
        );
        assert!(shown.contains("[credentials.apiKey: resolved at run time, hidden]"));
        assert!(shown.ends_with("for Coder"));
        assert!(render(t, &values).contains("eyJ.secret"));
        assert!(is_sensitive("credentials.apiKey") && !is_sensitive("run.startedAt"));
        for v in ["run.startedAt", "paperclip.skill"] {
            assert!(CATALOG.contains(&v), "{v}");
        }
    }

    #[test]
    fn rendering_does_not_reinterpret_values() {
        let mut values = BTreeMap::new();
        values.insert("task.title", "{{agent.id}}".to_string());
        assert_eq!(render("{{task.title}}", &values), "{{agent.id}}");
    }
}
