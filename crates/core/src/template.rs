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
    "heartbeat.reason",
    "task.id",
    "task.identifier",
    "task.title",
    "task.status",
    "task.description",
    "wake.commentId",
    "wake.payloadJson",
    "approval.id",
    "approval.status",
    "api.url",
];

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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn rendering_does_not_reinterpret_values() {
        let mut values = BTreeMap::new();
        values.insert("task.title", "{{agent.id}}".to_string());
        assert_eq!(render("{{task.title}}", &values), "{{agent.id}}");
    }
}
