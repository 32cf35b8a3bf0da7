//! The hire dialog's "On a local model" section (issue 39): the models of
//! Ollama as detected on the server and of the model servers the board
//! added, one click each; `localmodels.js` fills it from
//! `GET /api/companies/{id}/model-servers` when the dialog opens and, on a
//! click, puts the config `.../model-servers/{id}/agent-config` builds in
//! the editor, so nobody writes provider JSON. Adding a server (LM Studio,
//! vLLM, llama.cpp) is a small form here too. Its inputs carry no `name`,
//! so the hire itself never sends them.

use maud::{html, Markup};

pub(crate) fn section() -> Markup {
    html! {
        section.hire-local data-local-models aria-labelledby="hire-local-title" {
            h3 #hire-local-title { "On a local model" }
            p.muted data-local-status { "Looking for Ollama on the server and the company's model servers…" }
            ul.local-servers data-local-servers {}
            div.row {
                label { "Run it with"
                    select data-local-adapter {
                        option value="pi_local" { "Pi (pi_local)" }
                        option value="opencode_local" { "OpenCode (opencode_local)" }
                    }
                }
            }
            details.local-add {
                summary { "Add a model server (LM Studio, vLLM, llama.cpp, another Ollama)" }
                div.row {
                    label { "Name" input data-local-field="name" autocomplete="off" placeholder="e.g. LM Studio"; }
                    label { "Base URL" input data-local-field="baseUrl" type="url" autocomplete="off" placeholder="http://127.0.0.1:1234"; }
                }
                div.row {
                    label { "Kind" select data-local-field="kind" {
                        option value="openai_compatible" { "OpenAI-compatible (/v1/models)" }
                        option value="ollama" { "Ollama (/api/tags)" }
                    } }
                    label { "API key (optional)" input data-local-field="apiKey" type="password" autocomplete="off"; }
                }
                div.row {
                    label { "$ per million input tokens" input data-local-field="input" type="number" min="0" step="any" placeholder="0 (free)"; }
                    label { "$ per million output tokens" input data-local-field="output" type="number" min="0" step="any" placeholder="0 (free)"; }
                }
                div.field-error data-local-error role="alert" hidden {}
                button type="button" data-local-add { "Add server" }
            }
        }
    }
}
