//! The onboarding chief in the board (issue 41): "Start with a chief of
//! staff" on an empty company's dashboard and on the first-run page, and
//! the chief's cards (plan approval, suggested tasks) in the chat. The
//! buttons post to `POST /api/companies/{id}/chief` (`assets/chief.js`),
//! which hires the chief and opens the chat the page then goes to.

use std::collections::HashMap;

use axum::response::Response;
use maud::{html, Markup};
use paperclip_core::model::{Agent, Issue};

use super::hire_fields::ADAPTERS;
use crate::store_failure;

/// The adapter picker: the example chief first (no model), then every
/// adapter the hire form offers, with that adapter's defaults.
fn adapter_choice() -> Markup {
    html! {
        label { "Chief's adapter"
            select name="adapterType" data-chief-adapter {
                option value="example" selected { "Example chief — a script, no model or API key" }
                @for (k, what, _, _) in ADAPTERS { option value=(k) { (k) " — " (what) } }
            }
        }
    }
}

const WHAT: &str = "A chief of staff is an agent you chat with: tell it your goal and it \
    proposes a plan (a goal, a project, the agents to hire and the first tasks) for you to \
    approve, then asks for the hires and suggests the tasks. The example chief does this by \
    script, without a model, so you can see the steps first.";

/// The dashboard's invitation on a company with no agents or no tasks.
pub fn start(company_id: &str) -> Markup {
    html! {
        section.card.chief-start #chief-start {
            h2 { "Start with a chief of staff" }
            p.muted { (WHAT) }
            form.inline-form data-api-form="chief-start" data-company-id=(company_id) {
                (adapter_choice())
                button.primary type="submit" { "Start with a chief of staff" }
            }
        }
    }
}

/// The first-run card: a company and its chief in one go.
pub fn first_run() -> Markup {
    html! {
        section.card.chief-start #chief-first-run {
            h2 { "Or start with a chief of staff" }
            p { (WHAT) }
            form data-api-form="chief-first-run" {
                label { "Company name" input name="name" required value="My company"; }
                (adapter_choice())
                button.primary type="submit" { "Start with a chief of staff" }
            }
        }
    }
}

/// The chat's cards, answered in place (`cards.js`), below the messages.
pub async fn chat_cards(
    store: &paperclip_store::Store,
    issue: &Issue,
    agent: &Agent,
) -> Result<Markup, Response> {
    let cards = paperclip_store::thread::interactions::list(store, issue)
        .await
        .map_err(store_failure)?;
    let names: HashMap<&str, &Agent> = HashMap::from([(agent.id.as_str(), agent)]);
    Ok(super::cards::section(
        &issue.id,
        &cards,
        &names,
        &HashMap::new(),
        true,
        chrono::Utc::now(),
    ))
}
