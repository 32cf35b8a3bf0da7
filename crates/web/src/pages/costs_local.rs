//! The costs page's "Local models" section (issue 39): spend on local
//! model servers apart from paid spend, month to date, with each provider
//! on its side. Local tokens are counted like any others; their price is
//! the server's, zero unless the board set one.

use maud::{html, Markup};
use paperclip_store::money::local_spend::LocalSplit;

use super::costs::tokens;
use crate::fmt::{count, money};

pub(crate) fn section(split: &LocalSplit) -> Markup {
    let local: Vec<_> = split.providers.iter().filter(|p| p.local).collect();
    html! {
        section.local-spend data-local-spend {
            h2 { "Local models and paid providers" }
            div.spend-split {
                div.local data-spend="local" {
                    span.muted { "Local models" }
                    strong { (money(split.local.cost_cents)) }
                    span { (tokens(split.local.input_tokens, split.local.output_tokens)) " tokens" }
                }
                div.paid data-spend="paid" {
                    span.muted { "Paid providers" }
                    strong { (money(split.paid.cost_cents)) }
                    span { (tokens(split.paid.input_tokens, split.paid.output_tokens)) " tokens" }
                }
            }
            @if !split.providers.is_empty() {
                table.data {
                    thead { tr { th { "Provider" } th { "Kind" } th.num { "Spend" } th.num { "Tokens" } th.num { "Events" } } }
                    tbody {
                        @for p in &split.providers { tr data-provider=(p.provider.as_deref().unwrap_or("")) {
                            td { (p.provider.as_deref().unwrap_or("(unknown provider)")) }
                            td { @if p.local { "Local model" } @else { "Paid" } }
                            td.num { (money(p.sums.cost_cents))
                                @if p.unpriced_event_count > 0 { span.muted title="events without a price" { " +" (p.unpriced_event_count) " unpriced" } } }
                            td.num { (tokens(p.sums.input_tokens, p.sums.output_tokens)) }
                            td.num { (count(p.event_count)) }
                        } }
                    }
                }
            }
            @if local.is_empty() {
                p.muted { "No local model used this month. Hire an agent \"On a local model\" (Ollama, LM Studio, vLLM, llama.cpp): its tokens show here at $0 unless its server has a price." }
            }
        }
    }
}
