//! Skills (`/{prefix}/skills`): the company skills library (issue 40). Each
//! skill with where it came from and who uses it; `?skill=<id>` opens one
//! (its SKILL.md and files, `&file=` for another file). Installing from a
//! folder or a git URL and deleting go through upstream's skill routes
//! (`assets/skills.js`). The agent page's skills section (checkboxes, saved
//! as one sync) is [`agent_section`].

use axum::extract::{Path, Query, State};
use maud::{html, Markup};
use paperclip_core::model::Agent;
use paperclip_core::skill;
use paperclip_store::org::skills::{self as library, Skill};
use serde::Deserialize;

use crate::{html, layout, store_failure, PageResult, Web};

#[derive(Debug, Deserialize)]
pub struct Open {
    pub skill: Option<String>,
    pub file: Option<String>,
}

#[paperclip_macros::handler]
pub async fn page(
    State(web): State<Web>,
    Path(prefix): Path<String>,
    Query(open): Query<Open>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let c = &ctx.company;
    let skills = library::list(&web.store, &c.id)
        .await
        .map_err(store_failure)?;
    let agents = paperclip_store::org::agents::list(&web.store, &c.id)
        .await
        .map_err(store_failure)?;
    let users = |s: &Skill| -> Vec<&Agent> {
        agents
            .iter()
            .filter(|a| skill::desired_keys(&a.adapter_config).contains(&s.skill.key))
            .collect()
    };
    let opened = open
        .skill
        .as_deref()
        .and_then(|id| skills.iter().find(|s| s.skill.id == id));
    let body = html! {
        header.page-head {
            h1 { "Skills" }
            p.muted { "Folders of instructions (a SKILL.md and its files) the company's agents can be given. An agent gets the skills chosen on its page, written beside the Paperclip skill at each run start." }
        }
        section.card {
            @if skills.is_empty() {
                p.muted #no-skills { "No skills yet: install one below." }
            } @else {
                table.data #skills {
                    thead { tr { th { "Skill" } th { "From" } th { "Files" } th { "Agents" } th { "" } } }
                    tbody {
                        @for s in &skills {
                            @let used = users(s);
                            tr data-skill-id=(s.skill.id) {
                                td {
                                    a href={"?skill=" (s.skill.id)} { strong { (s.skill.name) } }
                                    @if let Some(d) = &s.skill.description { br; span.muted { (d) } }
                                }
                                td { (source_words(s)) }
                                td { (s.files.len()) }
                                td { @if used.is_empty() { span.muted { "none" } } @else {
                                    @for (i, a) in used.iter().enumerate() {
                                        @if i > 0 { ", " }
                                        a href={"/" (c.issue_prefix) "/agents/" (a.url_key)} { (a.name) }
                                    }
                                } }
                                td.actions {
                                    button.small.danger type="button" data-action="DELETE"
                                        data-url={"/api/companies/" (c.id) "/skills/" (s.skill.id)}
                                        data-confirm={"Delete the skill " (s.skill.name) "? Agents that chose it stop getting it."}
                                        data-done="Skill deleted" { "Delete" }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(s) = opened {
            (detail(s, open.file.as_deref()))
        }
    };
    let fixed = html! {
        form.card #skill-import data-api-form="skill-import" data-company-id=(c.id) autocomplete="off" {
            h2 { "Install a skill" }
            label { "Folder on this machine, or git URL"
                input name="source" required maxlength="2000" placeholder="/home/me/skills/release-notes or https://github.com/owner/repo";
            }
            p.muted { "A folder with a SKILL.md is one skill; a folder or repository without one is searched for the skills it holds. Installing again brings a skill up to date as a new version." }
            div.actions { button.primary type="submit" { "Install" } }
        }
    };
    html(layout::page_with(&ctx, "skills", "Skills", body, fixed))
}

fn source_words(s: &Skill) -> Markup {
    let managed = s
        .skill
        .metadata
        .as_ref()
        .and_then(|m| m.get("sourceKind"))
        .and_then(|k| k.as_str())
        == Some("managed_local");
    html! {
        @if managed { "written here" } @else {
            @match &s.skill.source_locator {
                Some(l) => code { (l) },
                None => "—",
            }
        }
    }
}

fn detail(s: &Skill, file: Option<&str>) -> Markup {
    let path = file.unwrap_or("SKILL.md");
    let shown = s.files.iter().find(|f| f.path == path);
    html! {
        section.card #skill-detail data-skill-id=(s.skill.id) {
            h2 { (s.skill.name) " " span.muted.small { code { (s.skill.key) } } }
            p.muted { "Version " (s.skill.current_version_id.as_deref().map(|_| "current").unwrap_or("—")) " · " (s.skill.trust_level.replace('_', " ")) }
            ul.plain.skill-files {
                @for f in &s.files {
                    li { a href={"?skill=" (s.skill.id) "&file=" (f.path)} { code { (f.path) } } " " span.muted { (f.kind) } }
                }
            }
            @match shown {
                Some(f) => { h3 { code { (f.path) } } pre.skill-file { (f.content) } },
                None => p.muted { "No file " code { (path) } " in this skill." },
            }
        }
    }
}

/// The agent page's skills: every company skill with a checkbox; saving
/// replaces the agent's chosen set (upstream's sync, mode `replace`).
pub async fn agent_section(web: &Web, agent: &Agent) -> Markup {
    let skills = library::list(&web.store, &agent.company_id)
        .await
        .unwrap_or_default();
    let chosen = skill::desired_keys(&agent.adapter_config);
    html! {
        section #agent-skills {
            h2 { "Skills" }
            @if skills.is_empty() {
                p.muted { "The company has no skills yet (Company → Skills)." }
            } @else {
                form data-api-form="agent-skills" data-url={"/api/agents/" (agent.id) "/skills/sync"} {
                    @for s in &skills {
                        label.inline {
                            input type="checkbox" name="skill" value=(s.skill.key) checked[chosen.contains(&s.skill.key)];
                            " " (s.skill.name)
                            @if let Some(d) = &s.skill.description { " " span.muted { "— " (d) } }
                        }
                    }
                    div.actions { button.primary type="submit" { "Save skills" } }
                }
            }
        }
    }
}
