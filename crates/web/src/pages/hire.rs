//! The hire dialog: presets first (the bundled example agent, and each
//! coding CLI `hire.js` finds installed on the server through
//! `GET /api/companies/{id}/adapters/detect`), the agent's identity, then the
//! adapter config as fields of the chosen adapter type (kept in step with an
//! "Advanced (JSON)" view by `hire.js`), and the environment test, which
//! runs before hiring. The same editor ([`editor`]) edits an existing
//! agent's config on its page. The field tables are in `hire_fields.rs`.

use maud::{html, Markup};
use paperclip_core::model::Agent;
use serde_json::Value;

use super::hire_fields::{Field, Kind, ADAPTERS, ROLES};
use crate::Ctx;

fn field(prefix: &str, kind_name: &str, fd: &Field, value: Option<&Value>) -> Markup {
    let id = format!("{prefix}-{kind_name}-{}", fd.key);
    let help_id = format!("{id}-help");
    let text = value.map(|v| shown(fd.kind, v)).unwrap_or_default();
    html! {
        div.hire-field data-key=(fd.key) data-kind=(kind_attr(fd.kind)) {
            @if fd.kind == Kind::Bool {
                label.inline for=(id) {
                    input #(id) type="checkbox" aria-describedby=(help_id) checked[value == Some(&Value::Bool(true))];
                    " " (fd.label)
                }
            } @else {
                label for=(id) {
                    (fd.label)
                    @if fd.required { span.required title="Required" { " *" } }
                    @match fd.kind {
                        Kind::Lines | Kind::Pairs | Kind::Json | Kind::Multiline => {
                            textarea #(id) rows="2" placeholder=(fd.placeholder) aria-describedby=(help_id)
                                required[fd.required] { (text) }
                        }
                        Kind::Choice(options) => {
                            select #(id) aria-describedby=(help_id) {
                                option value="" { "Default" }
                                @for o in options { option value=(o) selected[*o == text] { (o) } }
                                // A stored value the list lacks is still shown, not lost.
                                @if !text.is_empty() && !options.contains(&text.as_str()) {
                                    option value=(text) selected { (text) }
                                }
                            }
                        }
                        Kind::Number => {
                            input #(id) type="number" min="0" step="any" placeholder=(fd.placeholder)
                                aria-describedby=(help_id) value=(text);
                        }
                        // Any id may be typed; the list offers what the
                        // adapter's models route answers (hire-models.js).
                        _ if fd.key == "model" => {
                            @let list = format!("{id}-models");
                            input #(id) type="text" placeholder=(fd.placeholder) aria-describedby=(help_id)
                                list=(list) data-model-input autocomplete="off" value=(text);
                            datalist #(list) {}
                        }
                        _ => {
                            input #(id) type="text" placeholder=(fd.placeholder) aria-describedby=(help_id)
                                required[fd.required] autocomplete="off" value=(text);
                        }
                    }
                }
            }
            div.help #(help_id) { (fd.help) }
            div.field-error hidden {}
        }
    }
}

/// A stored value as its field shows it; `hire.js` writes the same text.
/// Values arrive already redacted, so a secret shows as its placeholder.
fn shown(kind: Kind, v: &Value) -> String {
    let plain = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match (kind, v) {
        (Kind::Lines, Value::Array(items)) => {
            items.iter().map(plain).collect::<Vec<_>>().join("\n")
        }
        (Kind::Pairs, Value::Object(map)) => map
            .iter()
            .map(|(k, x)| match x.get("value") {
                Some(inner) if x.is_object() => format!("{k}={}", plain(inner)),
                _ if x.is_object() => format!("{k}={x}"),
                _ => format!("{k}={}", plain(x)),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        (Kind::Json, v) => serde_json::to_string_pretty(v).unwrap_or_default(),
        (_, v) => plain(v),
    }
}

fn more_names(fields: &[&Field]) -> String {
    let names: Vec<String> = fields.iter().map(|f| f.label.to_lowercase()).collect();
    names.join(", ")
}

fn kind_attr(kind: Kind) -> &'static str {
    match kind {
        Kind::Text | Kind::Choice(_) | Kind::Multiline => "text",
        Kind::Number => "number",
        Kind::Lines => "lines",
        Kind::Pairs => "pairs",
        Kind::Bool => "bool",
        Kind::Json => "json",
    }
}

/// The dialog; it sits outside the live region so a live update never
/// resets what is being typed.
/// The adapter type picker the editor switches on; an agent's type that
/// this build has no fields for stays selectable, so a save keeps it.
pub(crate) fn adapter_select(selected: &str) -> Markup {
    let known = ADAPTERS.iter().any(|(k, ..)| *k == selected);
    html! {
        select name="adapterType" data-hire-type {
            @for (k, what, _, _) in ADAPTERS { option value=(k) selected[*k == selected] { (k) " — " (what) } }
            @if !known { option value=(selected) selected { (selected) } }
        }
    }
}

/// The adapter config editor shared by the hire dialog and the agent page:
/// a fieldset per adapter type (only `selected` shown, its fields filled
/// from `config`), the "Advanced (JSON)" view of the whole config and the
/// environment report. `skip` leaves out fields the page edits elsewhere.
/// `hire.js` keeps fields and JSON in step and runs the check.
pub(crate) fn editor(prefix: &str, selected: &str, skip: &[&str], config: &Value) -> Markup {
    let known = ADAPTERS.iter().any(|(k, ..)| *k == selected);
    let json = serde_json::to_string_pretty(config).unwrap_or_else(|_| "{}".into());
    html! {
        @for (k, _, fields, main) in ADAPTERS {
            @let visible: Vec<&Field> = fields.iter().filter(|f| !skip.contains(&f.key)).collect();
            @let main = visible.iter().filter(|f| fields[..*main].iter().any(|m| m.key == f.key)).count();
            @let value = |fd: &Field| if *k == selected { config.get(fd.key) } else { None };
            fieldset.adapter-fields data-adapter=(k) hidden[*k != selected] {
                legend { (k) " configuration" }
                @for fd in &visible[..main] { (field(prefix, k, fd, value(fd))) }
                details.more-fields {
                    summary { "More options: " (more_names(&visible[main..])) }
                    @for fd in &visible[main..] { (field(prefix, k, fd, value(fd))) }
                }
            }
        }
        details.advanced open[!known] {
            summary { "Advanced (JSON)" }
            label { "adapterConfig"
                textarea name="adapterConfig" rows="5" spellcheck="false" data-hire-json { (json) }
            }
            div.field-error data-json-error hidden {}
            // The server's refusal of a key no field shows (hire.js).
            div.field-error data-config-error role="alert" hidden {}
        }
        div.env-report #{(prefix) "-env"} data-env-report aria-live="polite" hidden {}
    }
}

pub(crate) fn dialog(ctx: &Ctx, agents: &[Agent]) -> Markup {
    let first = ADAPTERS[0].0;
    html! {
        dialog #hire .wide {
            form data-api-form="hire" method="dialog" novalidate {
                h2 { "Hire an agent" }
                @if ctx.company.require_board_approval_for_new_agents {
                    p.muted { "This company requires board approval: the hire waits in Approvals." }
                }
                (presets())
                (super::hire_local::section())
                div.row {
                    label { "Name" span.required title="Required" { " *" } input name="name" required autocomplete="off";
                        span.help data-name-note hidden {} }
                    label { "Title" input name="title" placeholder="e.g. Founding Engineer"; }
                }
                div.row {
                    label { "Role" select name="role" { @for r in ROLES { option value=(r.as_str()) { (r.as_str()) } } } }
                    label { "Reports to" select name="reportsTo" {
                        option value="" { "Nobody" }
                        @for a in agents.iter().filter(|a| a.status.as_str() != "terminated") { option value=(a.id) { (a.name) } }
                    } }
                }
                div.row {
                    label { "Adapter" (adapter_select(first)) }
                    label { "Monthly budget ($)" input name="budgetDollars" type="number" min="0" step="0.01" placeholder="0 = no limit"; }
                }
                (editor("hire", first, &[], &Value::Object(Default::default())))
                label.inline.hire-anyway hidden {
                    input type="checkbox" name="hireAnyway";
                    " Hire anyway, although the environment check failed"
                }
                div.actions {
                    button type="button" data-close-dialog { "Cancel" }
                    button type="button" data-hire-check { "Check environment" }
                    button.primary type="submit" { "Hire" }
                }
            }
        }
    }
}

/// One click fills the form. The example agent is always there; the CLIs
/// are filled in by `hire.js` from the server's detection, which runs each
/// CLI's `--version` and so is not worth holding the page for.
fn presets() -> Markup {
    html! {
        section.hire-presets data-hire-presets aria-label="Start from a preset" {
            h3 { "Start from a preset" }
            ul.preset-list {
                li.preset-row {
                    button.preset type="button" data-preset="example" {
                        strong { "Example agent" } " " span.preset-tag { "no key needed" }
                    }
                    span.preset-note { "A shell script bundled with Paperclip: it checks its task out, comments and finishes it. Calls no model." }
                }
                li.preset-row data-detected-clis {
                    span.muted { "Looking for Claude Code, Codex and OpenCode on the server…" }
                }
            }
        }
    }
}
