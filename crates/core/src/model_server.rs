//! Local model servers a company's agents can run on: Ollama (detected on
//! the server's machine, or added by URL) and OpenAI-compatible endpoints
//! (LM Studio, vLLM, llama.cpp's server) added by URL. A server's API key
//! is a company secret ([`crate::company_secret`]): it goes in once and is
//! never shown again; a server says only whether it has one.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::input::double_option;
use crate::limits::{text, Validate, Violation, NAME_MAX_CHARS, SECRET_VALUE_MAX_CHARS};

/// The longest base URL accepted.
pub const URL_MAX_CHARS: usize = 2_000;
/// The highest price accepted, in USD per million tokens (the dearest
/// hosted models cost well under a hundredth of it).
pub const PRICE_MAX_USD: f64 = 10_000.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModelServerKind {
    /// Lists its models at `/api/tags`; chat at `/v1/chat/completions`.
    Ollama,
    /// Lists its models at `/v1/models` (LM Studio, vLLM, llama.cpp).
    OpenaiCompatible,
}

impl ModelServerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelServerKind::Ollama => "ollama",
            ModelServerKind::OpenaiCompatible => "openai_compatible",
        }
    }
}

impl crate::stored::Stored for ModelServerKind {
    const WHAT: &'static str = "model server kind";
    const ALL: &'static [ModelServerKind] =
        &[ModelServerKind::Ollama, ModelServerKind::OpenaiCompatible];
    fn as_str(self) -> &'static str {
        ModelServerKind::as_str(self)
    }
}

/// What a run is charged per million tokens; zero unless the board set it.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Price {
    pub input_per_million_usd: f64,
    pub output_per_million_usd: f64,
}

impl Price {
    pub fn is_free(&self) -> bool {
        self.input_per_million_usd == 0.0 && self.output_per_million_usd == 0.0
    }

    /// Prices are kept as whole micro-dollars per million tokens, so the
    /// stored value is exact on both engines.
    pub fn to_micros(usd: f64) -> i64 {
        (usd * 1_000_000.0).round() as i64
    }

    pub fn from_micros(micros: i64) -> f64 {
        micros as f64 / 1_000_000.0
    }
}

/// A model server as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelServer {
    pub id: String,
    pub company_id: String,
    pub name: String,
    pub kind: ModelServerKind,
    /// Without a trailing slash or `/v1`.
    pub base_url: String,
    /// The provider name agents hired on it use (`ollama`, `lm-studio`):
    /// what their runs' cost events carry, so spend on it shows as local.
    pub provider_key: String,
    pub has_api_key: bool,
    /// The company secret holding the key, when there is one.
    pub api_key_secret_id: Option<String>,
    pub price: Price,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewModelServer {
    pub name: String,
    pub kind: Option<ModelServerKind>,
    pub base_url: String,
    /// Kept sealed as a company secret, never returned.
    pub api_key: Option<String>,
    pub price: Option<Price>,
}

impl std::fmt::Debug for NewModelServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewModelServer")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[REDACTED]"))
            .finish()
    }
}

#[derive(Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelServerPatch {
    pub name: Option<String>,
    pub base_url: Option<String>,
    /// A new key replaces the old one; null removes it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub api_key: Option<Option<String>>,
    pub price: Option<Price>,
}

impl Validate for NewModelServer {
    fn validate(&self) -> Result<(), Violation> {
        text("name", &self.name, NAME_MAX_CHARS)?;
        text("baseUrl", &self.base_url, URL_MAX_CHARS)?;
        if let Some(key) = &self.api_key {
            text("apiKey", key, SECRET_VALUE_MAX_CHARS)?;
        }
        Ok(())
    }
}

impl Validate for ModelServerPatch {
    fn validate(&self) -> Result<(), Violation> {
        if let Some(name) = &self.name {
            text("name", name, NAME_MAX_CHARS)?;
        }
        if let Some(url) = &self.base_url {
            text("baseUrl", url, URL_MAX_CHARS)?;
        }
        if let Some(Some(key)) = &self.api_key {
            text("apiKey", key, SECRET_VALUE_MAX_CHARS)?;
        }
        Ok(())
    }
}

/// A base URL as stored: `http(s)://host[:port][/path]`, without a trailing
/// slash or `/v1` (the paths are added per API). `Err` says what is wrong.
pub fn normalize_base_url(raw: &str) -> Result<String, &'static str> {
    let url = raw.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or("must start with http:// or https://")?;
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() || host.starts_with(':') {
        return Err("must name a host, e.g. http://127.0.0.1:1234");
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) || rest.contains(['?', '#', '@']) {
        return Err("must be a plain URL: no spaces, query, fragment or credentials");
    }
    if let Some((_, port)) = host.rsplit_once(':').filter(|_| !host.ends_with(']')) {
        if port.parse::<u16>().map_or(true, |p| p == 0) {
            return Err("has an invalid port");
        }
    }
    let url = url.strip_suffix("/v1").unwrap_or(url);
    Ok(url.to_string())
}

/// Checks a price: finite, not negative, at most [`PRICE_MAX_USD`].
pub fn check_price(price: &Price) -> Result<(), (&'static str, &'static str)> {
    for (field, v) in [
        ("inputPerMillionUsd", price.input_per_million_usd),
        ("outputPerMillionUsd", price.output_per_million_usd),
    ] {
        if !v.is_finite() || !(0.0..=PRICE_MAX_USD).contains(&v) {
            return Err((
                field,
                "must be a number from 0 to 10000 (USD per million tokens)",
            ));
        }
    }
    Ok(())
}

/// The provider name for a server's name: lower case letters, digits and
/// dashes (`LM Studio` → `lm-studio`); `local` when nothing is left.
pub fn provider_key(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "local".into()
    } else {
        out
    }
}

/// Provider names that are local whatever the company added: what a
/// hand-written `PAPERCLIP_PI_PROVIDERS` (upstream's only path) most often
/// names, and the detected Ollama.
pub const KNOWN_LOCAL_PROVIDERS: &[&str] = &[
    "ollama",
    "lmstudio",
    "lm-studio",
    "llamacpp",
    "llama-cpp",
    "vllm",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_plain_http_and_lose_their_v1() {
        assert_eq!(
            normalize_base_url(" http://127.0.0.1:1234/v1/ ").unwrap(),
            "http://127.0.0.1:1234"
        );
        assert_eq!(
            normalize_base_url("https://gpu.lan/llm").unwrap(),
            "https://gpu.lan/llm"
        );
        assert!(normalize_base_url("ftp://x").is_err());
        assert!(normalize_base_url("localhost:11434").is_err());
        assert!(normalize_base_url("http://").is_err());
        assert!(normalize_base_url("http://a:99999").is_err());
        assert!(normalize_base_url("http://user:pw@host").is_err());
        assert!(normalize_base_url("http://host/?q=1").is_err());
    }

    #[test]
    fn provider_keys_are_slugs_and_prices_are_bounded() {
        assert_eq!(provider_key("LM Studio"), "lm-studio");
        assert_eq!(provider_key("  vLLM (GPU box) "), "vllm-gpu-box");
        assert_eq!(provider_key("!!!"), "local");
        assert!(check_price(&Price::default()).is_ok());
        let bad = Price {
            input_per_million_usd: -1.0,
            output_per_million_usd: 0.0,
        };
        assert_eq!(check_price(&bad).unwrap_err().0, "inputPerMillionUsd");
        assert_eq!(Price::to_micros(0.15), 150_000);
        assert_eq!(Price::from_micros(150_000), 0.15);
    }
}
