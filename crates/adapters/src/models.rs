//! What the adapter routes tell a hire form about an adapter type, in
//! upstream's shapes: the models it can run (`{id, label}`), the model its
//! CLI would pick by itself (`{model, provider, source, candidates?}`), and
//! a declarative description of its config fields (`{fields: [...]}`).

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::config::KnownKeys;

/// A model an adapter can run: `id` goes into `adapterConfig.model`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Model {
    pub id: String,
    pub label: String,
}

impl Model {
    pub fn new(id: impl Into<String>, label: impl Into<String>) -> Model {
        Model {
            id: id.into(),
            label: label.into(),
        }
    }

    /// A model whose id is the best label it has (`provider/model` ids).
    pub fn plain(id: impl Into<String>) -> Model {
        let id = id.into();
        Model {
            label: id.clone(),
            id,
        }
    }
}

/// The model a CLI would use when the config names none, and where that
/// was read (a settings file, an environment variable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DetectedModel {
    pub model: String,
    pub provider: String,
    /// `env:NAME` or the file it came from.
    pub source: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
}

/// Drops blank and repeated ids, keeping the first label seen.
pub fn dedupe(models: Vec<Model>) -> Vec<Model> {
    let mut seen = std::collections::HashSet::new();
    models
        .into_iter()
        .filter_map(|m| {
            let id = m.id.trim().to_string();
            if id.is_empty() || !seen.insert(id.clone()) {
                return None;
            }
            let label = match m.label.trim() {
                "" => id.clone(),
                l => l.to_string(),
            };
            Some(Model { id, label })
        })
        .collect()
}

/// How the form shows one config key: upstream's `type` vocabulary
/// (`text`, `select`, `toggle`, `number`, `textarea`, `combobox`).
struct FieldDoc {
    key: &'static str,
    label: &'static str,
    kind: &'static str,
    hint: &'static str,
    options: &'static [(&'static str, &'static str)],
}

const fn doc(
    key: &'static str,
    label: &'static str,
    kind: &'static str,
    hint: &'static str,
) -> FieldDoc {
    FieldDoc {
        key,
        label,
        kind,
        hint,
        options: &[],
    }
}

/// The keys our adapters read, described once for every adapter that reads
/// them. A key missing here is still listed, as a text field named by its key.
const DOCS: &[FieldDoc] = &[
    doc("command", "Command", "text", "The program to run; a name on PATH or an absolute path."),
    doc("args", "Arguments", "textarea", "Arguments after the command, one per line."),
    doc("extraArgs", "Extra arguments", "textarea", "Appended to the arguments Paperclip builds, one per line."),
    doc("cwd", "Working directory", "text", "Absolute path. Empty: the agent's own workspace (a task of a project with a repository gets its own worktree)."),
    doc("env", "Environment", "textarea", "Variables for the agent's process, NAME=value; a secret reference keeps the value out of the config."),
    doc("model", "Model", "combobox", "The model id the CLI is given; empty lets the CLI choose."),
    doc("instructionsFilePath", "Instructions file", "text", "Absolute path to a Markdown file handed to the agent as its instructions."),
    doc("promptTemplate", "Prompt template", "textarea", "The run prompt; {{agent.name}}, {{context.*}} and the other catalog variables are filled in."),
    doc("timeoutSec", "Timeout (seconds)", "number", "A run is stopped after this long; 0 means no limit."),
    doc("graceSec", "Grace (seconds)", "number", "Between the stop signal and a kill."),
    doc("effort", "Reasoning effort", "select", "Passed to the CLI's effort flag."),
    doc("maxTurnsPerRun", "Max turns per run", "number", "The CLI stops after this many turns."),
    doc("dangerouslySkipPermissions", "Skip permission prompts", "toggle", "The CLI runs tools without asking; a run has no one to ask."),
    doc("modelReasoningEffort", "Reasoning effort", "select", "Passed as the model_reasoning_effort config override."),
    doc("search", "Web search", "toggle", "Lets the model search the web."),
    doc("dangerouslyBypassApprovalsAndSandbox", "Bypass approvals and sandbox", "toggle", "Runs commands without approval and outside the CLI's own sandbox."),
    doc("configOverrides", "Config overrides", "textarea", "Dotted config keys and values passed with -c."),
    doc("variant", "Variant", "text", "The model variant (reasoning level) the CLI is given."),
    doc("url", "URL", "text", "The endpoint a run is sent to (http or https)."),
    doc("method", "Method", "select", "The HTTP method."),
    doc("headers", "Headers", "textarea", "Request headers, Name: value."),
    doc("timeoutMs", "Timeout (ms)", "number", "How long to wait for the answer."),
    doc("payloadTemplate", "Payload template", "textarea", "The JSON body; the wake's context is filled in."),
    doc("async", "Asynchronous", "toggle", "The endpoint answers 202 and finishes the run through the callback route."),
    doc("callbackTimeoutSec", "Callback timeout (seconds)", "number", "How long an accepted run may wait for its callback."),
    doc("forwardAuth", "Forward the run token", "toggle", "Sends the run's token so the endpoint can call the API as the agent."),
    doc("filesystemScope", "File system scope", "select", "Confine the agent's writes (bubblewrap)."),
    doc("networkScope", "Network scope", "select", "Confine the agent's network to the API, the model provider and listed hosts."),
    doc("filesystemExtraPaths", "Extra writable paths", "textarea", "Paths the agent may also write, one per line."),
    doc("networkAllowlist", "Allowed hosts", "textarea", "Hosts the agent may reach when the network scope is an allow-list."),
    doc("engine", "Execution engine", "select", "How the agent is driven: its CLI, or the Agent Client Protocol."),
    doc("agentCommand", "ACP agent command", "text", "The command that speaks ACP on stdio."),
    doc("thinking", "Thinking level", "select", "Passed to the CLI's thinking flag."),
];

const OPTIONS: &[(&str, &[(&str, &str)])] = &[
    (
        "effort",
        &[
            ("low", "Low"),
            ("medium", "Medium"),
            ("high", "High"),
            ("xhigh", "Extra high"),
            ("max", "Max"),
        ],
    ),
    (
        "modelReasoningEffort",
        &[
            ("minimal", "Minimal"),
            ("low", "Low"),
            ("medium", "Medium"),
            ("high", "High"),
            ("xhigh", "Extra high"),
        ],
    ),
    (
        "method",
        &[
            ("POST", "POST"),
            ("PUT", "PUT"),
            ("PATCH", "PATCH"),
            ("GET", "GET"),
        ],
    ),
    ("filesystemScope", &[("workspace", "Workspace only")]),
    (
        "networkScope",
        &[
            ("deny", "API and model provider only"),
            ("allowlist", "Those and listed hosts"),
        ],
    ),
    ("engine", &[("cli", "CLI"), ("acp", "ACP")]),
    (
        "thinking",
        &[
            ("off", "Off"),
            ("minimal", "Minimal"),
            ("low", "Low"),
            ("medium", "Medium"),
            ("high", "High"),
            ("xhigh", "Extra high"),
        ],
    ),
];

/// `{fields: [...]}` for the keys an adapter reads (not those accepted
/// unused: a form offering them would promise an effect). `required` names
/// the keys a save refuses to go without; `models` fill the model field's
/// options.
pub fn schema(keys: &KnownKeys, required: &[&str], models: &[Model]) -> Value {
    let fields: Vec<Value> = keys
        .read
        .iter()
        .map(|key| field(key, required.contains(key), models))
        .collect();
    json!({ "fields": fields })
}

fn field(key: &str, required: bool, models: &[Model]) -> Value {
    let doc = DOCS.iter().find(|d| d.key == key);
    let mut f = Map::new();
    f.insert("key".into(), json!(key));
    f.insert("label".into(), json!(doc.map(|d| d.label).unwrap_or(key)));
    f.insert("type".into(), json!(doc.map(|d| d.kind).unwrap_or("text")));
    let options: Vec<Value> = match key {
        "model" => models
            .iter()
            .map(|m| json!({ "value": m.id, "label": m.label }))
            .collect(),
        _ => OPTIONS
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, o)| *o)
            .or(doc.map(|d| d.options))
            .unwrap_or(&[])
            .iter()
            .map(|(value, label)| json!({ "value": value, "label": label }))
            .collect(),
    };
    if !options.is_empty() {
        f.insert("options".into(), Value::Array(options));
    }
    if let Some(hint) = doc.map(|d| d.hint).filter(|h| !h.is_empty()) {
        f.insert("hint".into(), json!(hint));
    }
    if required {
        f.insert("required".into(), json!(true));
    }
    Value::Object(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedupe_keeps_the_first_and_drops_blanks() {
        let got = dedupe(vec![
            Model::new("a", "A"),
            Model::new(" ", "blank"),
            Model::new("a", "again"),
            Model::new("b", ""),
        ]);
        assert_eq!(got, vec![Model::new("a", "A"), Model::new("b", "b")]);
    }

    #[test]
    fn the_schema_lists_read_keys_with_upstream_field_names() {
        let keys = KnownKeys::new(&["command", "model", "effort", "oddKey"], &["unusedKey"]);
        let s = schema(&keys, &["command"], &[Model::new("m1", "Model one")]);
        let fields = s["fields"].as_array().unwrap();
        let keys: Vec<&str> = fields.iter().map(|f| f["key"].as_str().unwrap()).collect();
        assert_eq!(keys, ["command", "model", "effort", "oddKey"]);
        assert_eq!(fields[0]["required"], true);
        assert_eq!(fields[1]["type"], "combobox");
        assert_eq!(
            fields[1]["options"][0],
            json!({"value": "m1", "label": "Model one"})
        );
        assert_eq!(fields[2]["options"][0]["value"], "low");
        assert_eq!(
            fields[3],
            json!({"key": "oddKey", "label": "oddKey", "type": "text"})
        );
        for f in fields {
            for k in f.as_object().unwrap().keys() {
                assert!(
                    [
                        "key", "label", "type", "options", "hint", "required", "default", "group",
                        "meta"
                    ]
                    .contains(&k.as_str()),
                    "{k} is not one of upstream's ConfigFieldSchema fields"
                );
            }
        }
    }
}
