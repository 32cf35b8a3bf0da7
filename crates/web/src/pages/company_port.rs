//! Company packages on the board: the Export and Import card of the company
//! settings page, and the starter templates offered where a company is
//! created. `assets/company-port.js` drives both through the API.

use maud::{html, Markup};
use paperclip_core::package::templates::TEMPLATES;

/// The settings card: download the company as a package; pick a package
/// (a folder, or a `.json` export), see the dry run, apply it.
pub fn card(company_id: &str) -> Markup {
    html! {
        section.card.settings-card #company-port data-company-id=(company_id) {
            h2 { "Export and import" }
            p.muted { "A package is the company as markdown files (agents, goals, projects, routines and tasks with their threads), in the format the original Paperclip reads and writes. Secret values are never in it: each agent's secrets become named inputs to bind again after an import." }
            div.actions {
                button type="button" data-port-export { "Export package" }
            }
            h3 { "Import into this company" }
            label { "A package folder"
                input type="file" name="folder" webkitdirectory multiple data-port-pick; }
            label { "or an exported .json file"
                input type="file" name="file" accept=".json,application/json" data-port-pick; }
            label { "When a name exists"
                select name="collision" data-port-collision {
                    option value="rename" { "Import it under a new name" }
                    option value="skip" { "Keep the existing one" }
                }
            }
            div.actions {
                button type="button" data-port-preview disabled { "Preview import" }
                button.primary type="button" data-port-apply disabled { "Apply import" }
            }
            div #port-plan aria-live="polite" {}
        }
    }
}

/// The starter templates, as buttons that make a company from one.
pub fn templates_row() -> Markup {
    html! {
        div.template-picker {
            span.muted { "Or start from a template: " }
            @for (name, label, _) in TEMPLATES {
                button.small type="button" data-company-template=(name) title=(label) { (label) }
            }
        }
    }
}
