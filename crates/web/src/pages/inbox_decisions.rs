//! The inbox's "Decisions" section: what agents asked the board to choose,
//! each with its question, who asked on which task, and one button per
//! option (the option's effects run when it is chosen) plus Dismiss.

use chrono::Utc;
use maud::{html, Markup};
use serde_json::{json, Value};

use crate::fmt::time;

/// The section shows the newest; the API lists every open one.
const SHOWN: i64 = 30;

pub async fn section(
    store: &paperclip_store::Store,
    cid: &str,
    prefix: &str,
) -> paperclip_store::Result<Markup> {
    let open = paperclip_store::decisions::open_for_board(store, cid, SHOWN).await?;
    let now = Utc::now();
    Ok(html! {
        section data-decisions { h2 { "Decisions" }
            @if open.is_empty() { p.empty { "No agent is waiting on a decision." } }
            ul.inbox-items { @for d in &open { (row(d, prefix, now)) } }
        }
    })
}

fn text<'a>(d: &'a Value, key: &str) -> &'a str {
    d[key].as_str().unwrap_or_default()
}

fn row(d: &Value, p: &str, now: chrono::DateTime<Utc>) -> Markup {
    let id = text(d, "id");
    let ident = text(d, "originIdentifier");
    let asks = d["inputs"].as_array().is_some_and(|i| !i.is_empty());
    html! {
        li.inbox-item data-decision=(id) data-at=(text(d, "createdAt")) {
            div {
                strong { (text(d, "title")) }
                " " span.muted {
                    "asked by " (d["originAgentName"].as_str().unwrap_or("an agent")) " on "
                    a href={"/" (p) "/tasks/" (ident)} { span.ident { (ident) } }
                    @if let Some(bundle) = d["bundleTitle"].as_str() { " · " (bundle) }
                    " " (time(text(d, "createdAt"), now))
                }
            }
            @if !text(d, "body").is_empty() { p.decision-body { (text(d, "body")) } }
            @if asks { p.muted { "This decision asks for input: answer it through the API with inputValues." } }
            div.actions {
                @for o in d["options"].as_array().into_iter().flatten() {
                    @let destructive = o["style"] == "destructive";
                    @let effects = o["effects"].as_array().map_or(0, Vec::len);
                    button.small.primary[!destructive && effects > 0].danger[destructive] type="button" data-action="POST"
                        data-url={"/api/decisions/" (id) "/decide"}
                        data-body=(json!({ "optionId": o["id"] }).to_string())
                        data-confirm=[destructive.then(|| format!("{}?", text(o, "label")))]
                        data-done={"Decided: " (text(o, "label"))}
                        title=[o["description"].as_str()] { (text(o, "label")) }
                }
                button.small type="button" data-action="POST" data-url={"/api/decisions/" (id) "/dismiss"} data-body="{}" data-done="Dismissed" { "Dismiss" }
            }
        }
    }
}
