//! One comment in a task's thread, as its presentation asks: a message or
//! a system notice, in a tone, with a title, compact or not; its metadata
//! as a fold of sections (open when `detailsDefaultOpen`); and, on a comment
//! the board wrote in an agent's run, that agent named as its author.

use maud::{html, Markup};
use paperclip_core::comment::{
    MetadataRow, PresentationDensity, PresentationKind, PresentationTone,
};
use paperclip_core::model::Comment;

/// `author`: who wrote it, as the thread names them; `via_agent`: the agent
/// whose run a board-written comment came from.
pub fn article(
    c: &Comment,
    author: &str,
    via_agent: Option<&str>,
    when: Markup,
    body: Markup,
) -> Markup {
    let p = c.presentation.as_ref();
    let notice = p.is_some_and(|p| p.kind == PresentationKind::SystemNotice);
    let compact = p.is_some_and(|p| p.density == Some(PresentationDensity::Compact));
    let tone = p.map_or(PresentationTone::Neutral, |p| p.tone);
    let open = p.is_some_and(|p| p.details_default_open);
    html! {
        // `#comment-<id>`: the anchor the original's links use.
        article.comment.system-notice[notice].compact[compact]
            data-comment-id=(c.id) id={"comment-" (c.id)}
            data-tone=[(tone != PresentationTone::Neutral).then(|| tone.as_str())] {
            header {
                @match via_agent {
                    Some(agent) => {
                        strong { (agent) }
                        span.muted title="Written with the board's access during this agent's run" { " via " (author) }
                    }
                    None => strong { (author) },
                }
                " " (when)
            }
            @if let Some(title) = p.and_then(|p| p.title.as_deref()) {
                div.comment-title { (title) }
            }
            div.comment-body { (body) }
            @if let Some(m) = &c.metadata {
                details.comment-meta open[open] {
                    summary { "Details" }
                    @for s in &m.sections {
                        section {
                            @if let Some(t) = &s.title { h4 { (t) } }
                            dl { @for row in &s.rows { (row_view(row)) } }
                        }
                    }
                }
            }
        }
    }
}

fn row_view(row: &MetadataRow) -> Markup {
    let label = |l: Option<&String>, fallback: &str| l.map_or(fallback.to_string(), String::clone);
    match row {
        MetadataRow::Text { label: l, text } => html! {
            dt { (label(l.as_ref(), "Note")) } dd { (text) }
        },
        MetadataRow::Code {
            label: l,
            code,
            language,
        } => html! {
            dt { (label(l.as_ref(), language.as_deref().unwrap_or("Code"))) }
            dd { pre { code { (code) } } }
        },
        MetadataRow::KeyValue { label: l, value } => html! { dt { (l) } dd { (value) } },
        MetadataRow::IssueLink {
            label: l,
            issue_id,
            identifier,
            title,
        } => html! {
            dt { (label(l.as_ref(), "Task")) }
            dd {
                (identifier.as_deref().or(issue_id.as_deref()).unwrap_or_default())
                @if let Some(t) = title { " " span.muted { (t) } }
            }
        },
        MetadataRow::AgentLink {
            label: l,
            agent_id,
            name,
        } => html! {
            dt { (label(l.as_ref(), "Agent")) } dd { (name.as_deref().unwrap_or(agent_id)) }
        },
        MetadataRow::RunLink {
            label: l,
            run_id,
            title,
            ..
        } => html! {
            dt { (label(l.as_ref(), "Run")) } dd { (title.as_deref().unwrap_or(run_id)) }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn comment(extra: serde_json::Value) -> Comment {
        let p = extra.get("presentation").cloned();
        let m = extra.get("metadata").cloned();
        Comment {
            id: "c1".into(),
            company_id: "co".into(),
            issue_id: "i".into(),
            author_agent_id: None,
            author_user_id: Some("local-board".into()),
            on_behalf_of_user_id: None,
            author_type: "user".into(),
            created_by_run_id: None,
            derived_author_agent_id: None,
            derived_created_by_run_id: None,
            derived_author_source: None,
            client_request_id: None,
            conversation_session_generation: None,
            body: "hi".into(),
            presentation: p.map(|v| serde_json::from_value(v).unwrap()),
            metadata: m.map(|v| serde_json::from_value(v).unwrap()),
            deleted_at: None,
            deleted_by_type: None,
            deleted_by_agent_id: None,
            deleted_by_user_id: None,
            deleted_by_run_id: None,
            source_trust: None,
            created_at: "2026-01-01T00:00:00Z".into(),
            updated_at: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn a_notice_shows_its_tone_title_and_open_details() {
        let c = comment(json!({
            "presentation": { "kind": "system_notice", "tone": "warning", "title": "Budget <low>", "detailsDefaultOpen": true },
            "metadata": { "version": 1, "sections": [{ "title": "Why", "rows": [{ "type": "key_value", "label": "Left", "value": "<3 USD>" }] }] },
        }));
        let html = article(&c, "Board", None, html! {}, html! { "hi" }).into_string();
        assert!(html.contains(r#"class="comment system-notice""#), "{html}");
        assert!(html.contains(r#"data-tone="warning""#), "{html}");
        assert!(html.contains("Budget &lt;low&gt;"), "{html}");
        assert!(
            html.contains("<details class=\"comment-meta\" open>"),
            "{html}"
        );
        assert!(html.contains("&lt;3 USD&gt;"), "{html}");
    }

    #[test]
    fn a_plain_comment_is_a_plain_message_and_names_the_agent_whose_run_wrote_it() {
        let c = comment(json!({}));
        let html = article(&c, "Board", Some("Coder"), html! {}, html! { "hi" }).into_string();
        assert!(html.contains(r#"class="comment""#), "{html}");
        assert!(
            !html.contains("data-tone") && !html.contains("<details"),
            "{html}"
        );
        assert!(html.contains("<strong>Coder</strong>"), "{html}");
    }
}
