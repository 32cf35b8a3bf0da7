//! The models a `gemini_local` hire can pick and the one the CLI picks by
//! itself. With a Gemini API key the provider is asked for its list (a new
//! model shows up without a release of ours); the known list follows, so
//! `auto` and the usual ids are there even when the provider does not answer.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::super::catalog::env_value;
use super::super::CliConfig;
use super::AUTO_MODEL;
use crate::models::{dedupe, DetectedModel, Model};

/// Google's public API root; `GOOGLE_GEMINI_BASE_URL` replaces it, as it
/// does for the CLI.
const GOOGLE: &str = "https://generativelanguage.googleapis.com";

/// The ids the original offers for Gemini, `auto` (no `--model`: the CLI's
/// own router chooses) first.
const KNOWN: &[(&str, &str)] = &[
    (AUTO_MODEL, "Auto (the CLI chooses)"),
    ("gemini-3.1-pro-preview", "Gemini 3.1 Pro (preview)"),
    (
        "gemini-3.1-pro-preview-customtools",
        "Gemini 3.1 Pro (preview, custom tools)",
    ),
    ("gemini-2.5-pro", "Gemini 2.5 Pro"),
    ("gemini-2.5-flash", "Gemini 2.5 Flash"),
    ("gemini-2.5-flash-lite", "Gemini 2.5 Flash-Lite"),
    ("gemini-2.0-flash", "Gemini 2.0 Flash"),
    ("gemini-2.0-flash-lite", "Gemini 2.0 Flash-Lite"),
];

pub(super) fn known() -> Vec<Model> {
    KNOWN
        .iter()
        .map(|(id, label)| Model::new(*id, *label))
        .collect()
}

/// The provider's list when a key is set (agent's env, else the server's),
/// then the known list, each id once.
pub(super) async fn list(config: &CliConfig) -> Vec<Model> {
    let key = env_value(config, "GEMINI_API_KEY").or_else(|| env_value(config, "GOOGLE_API_KEY"));
    let mut found = match key {
        Some(key) => {
            let base = env_value(config, "GOOGLE_GEMINI_BASE_URL").unwrap_or_else(|| GOOGLE.into());
            provider_models(&base, &key).await
        }
        None => Vec::new(),
    };
    found.extend(known());
    dedupe(found)
}

/// `GET {base}/v1beta/models` with the key in Google's header (never in
/// the URL, which proxies log); nothing when it does not answer in 5 s.
async fn provider_models(base: &str, key: &str) -> Vec<Model> {
    let root = base.trim_end_matches('/').trim_end_matches("/v1beta");
    let url = format!("{root}/v1beta/models?pageSize=1000");
    let req = reqwest::Client::new()
        .get(url)
        .header("x-goog-api-key", key)
        .timeout(Duration::from_secs(5));
    let Ok(resp) = req.send().await else {
        return Vec::new();
    };
    if !resp.status().is_success() {
        return Vec::new();
    }
    match resp.json::<Value>().await {
        Ok(body) => parse_list(&body),
        Err(_) => Vec::new(),
    }
}

/// Google's `ListModels` answer: `models[].name` is `models/<id>`. Only
/// models that generate content can run an agent (not embedding models).
pub(super) fn parse_list(body: &Value) -> Vec<Model> {
    let items = body
        .get("models")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    dedupe(
        items
            .iter()
            .filter(|m| {
                m.get("supportedGenerationMethods")
                    .and_then(Value::as_array)
                    .is_none_or(|ms| {
                        ms.iter().any(|x| {
                            matches!(
                                x.as_str(),
                                Some("generateContent" | "streamGenerateContent")
                            )
                        })
                    })
            })
            .filter_map(|m| {
                let name = m.get("name")?.as_str()?;
                let id = name.strip_prefix("models/").unwrap_or(name);
                let label = m.get("displayName").and_then(Value::as_str).unwrap_or(id);
                Some(Model::new(id, label))
            })
            .collect(),
    )
}

/// `GEMINI_MODEL` (the CLI's own variable), else `model.name` of the
/// settings under the agent's `HOME` (else the server's).
pub(super) fn detect(config: &CliConfig) -> Option<DetectedModel> {
    if let Some(model) = env_value(config, "GEMINI_MODEL") {
        return Some(detected(model, "env:GEMINI_MODEL".into()));
    }
    let path = PathBuf::from(env_value(config, "HOME")?).join(".gemini/settings.json");
    let text = std::fs::read_to_string(&path).ok()?;
    let model = settings_model(&text)?;
    Some(detected(model, path.display().to_string()))
}

fn detected(model: String, source: String) -> DetectedModel {
    DetectedModel {
        model,
        provider: "google".into(),
        source,
        candidates: Vec::new(),
    }
}

/// `model.name` of a settings file (the CLI's nested settings; the older
/// flat ones had `model` as a string). The CLI allows `//` comment lines.
fn settings_model(text: &str) -> Option<String> {
    let settings: Value = serde_json::from_str(text).ok().or_else(|| {
        let kept: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect();
        serde_json::from_str(&kept.join("\n")).ok()
    })?;
    let model = settings.get("model")?;
    let name = model.get("name").unwrap_or(model).as_str()?.trim();
    (!name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn googles_list_keeps_generating_models_by_id() {
        let body = json!({ "models": [
            { "name": "models/gemini-2.5-flash", "displayName": "Gemini 2.5 Flash",
              "supportedGenerationMethods": ["generateContent", "countTokens"] },
            { "name": "models/text-embedding-004", "supportedGenerationMethods": ["embedContent"] },
            { "name": "models/gemini-x" },
            { "displayName": "no name" }
        ]});
        assert_eq!(
            parse_list(&body),
            [
                Model::new("gemini-2.5-flash", "Gemini 2.5 Flash"),
                Model::new("gemini-x", "gemini-x")
            ]
        );
        assert!(parse_list(&json!({})).is_empty());
    }

    #[test]
    fn the_known_list_starts_with_auto_and_has_the_originals_ids() {
        let ids: Vec<String> = known().into_iter().map(|m| m.id).collect();
        assert_eq!(ids[0], "auto");
        assert_eq!(ids.len(), 8);
        assert!(ids.contains(&"gemini-3.1-pro-preview-customtools".to_string()));
        assert!(ids.contains(&"gemini-2.0-flash-lite".to_string()));
    }

    #[test]
    fn settings_name_the_model_nested_or_flat() {
        assert_eq!(
            settings_model(r#"{"model":{"name":"gemini-2.5-pro"}}"#).as_deref(),
            Some("gemini-2.5-pro")
        );
        assert_eq!(
            settings_model("{\n// mine\n\"model\": \"gemini-2.5-flash\"\n}").as_deref(),
            Some("gemini-2.5-flash")
        );
        assert_eq!(settings_model(r#"{"model":{"name":" "}}"#), None);
        assert_eq!(settings_model(r#"{"ui":{}}"#), None);
    }

    fn config(env: &[(&str, &str)]) -> CliConfig {
        CliConfig {
            command: "gemini".into(),
            cwd: None,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            model: None,
            extra_args: Vec::new(),
            instructions_file: None,
            timeout: None,
            grace: Duration::from_secs(1),
        }
    }

    #[test]
    fn the_variable_wins_over_the_homes_settings() {
        let home = std::env::temp_dir().join(format!("gemini-detect-{}", std::process::id()));
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        std::fs::write(
            home.join(".gemini/settings.json"),
            r#"{"model":{"name":"gemini-2.5-pro"}}"#,
        )
        .unwrap();
        let h = home.to_str().unwrap();
        let found = detect(&config(&[("HOME", h)])).unwrap();
        assert_eq!(found.model, "gemini-2.5-pro");
        assert_eq!(found.provider, "google");
        assert!(found.source.ends_with(".gemini/settings.json"));
        let found = detect(&config(&[
            ("HOME", h),
            ("GEMINI_MODEL", "gemini-2.0-flash"),
        ]))
        .unwrap();
        assert_eq!(
            (found.model.as_str(), found.source.as_str()),
            ("gemini-2.0-flash", "env:GEMINI_MODEL")
        );
        std::fs::remove_dir_all(&home).unwrap();
    }
}
