//! `adapterType: "http"`: wake an agent that lives behind an HTTP endpoint.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use crate::config::{describe, truncate, Fields, KnownKeys, UPSTREAM_AGNOSTIC_KEYS};
use crate::{
    Adapter, BoxFuture, Capabilities, ConfigError, ErrorCode, Invocation, Outcome, OutcomeStatus,
    RunLimits, RunSink, Stream,
};

/// Responses are read up to this size; agents answer with small JSON.
const MAX_RESPONSE: usize = 1024 * 1024;
const RESULT_TEXT_LIMIT: usize = 4096;
const ERROR_BODY_CHARS: usize = 200;

pub struct HttpAdapter {
    client: reqwest::Client,
}

impl Default for HttpAdapter {
    fn default() -> Self {
        let client = reqwest::Client::builder()
            .user_agent(concat!("paperclip/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("building the HTTP client (TLS backend)");
        HttpAdapter { client }
    }
}

impl HttpAdapter {
    /// Uses a caller-built client (proxies, custom roots, ...).
    pub fn with_client(client: reqwest::Client) -> Self {
        HttpAdapter { client }
    }
}

/// Parsed `adapterConfig` of an HTTP agent.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpConfig {
    pub url: Url,
    pub method: Method,
    pub headers: HeaderMap,
    /// `None` means no timeout (`timeoutMs: 0`).
    pub timeout: Option<Duration>,
    pub payload_template: Option<Value>,
    /// A 202 hands the run off to the callback route instead of finishing it.
    pub async_callback: bool,
    /// How long a handed-off run waits for its callback (`callbackTimeoutSec`,
    /// default one hour), after which it is timed out.
    pub callback_timeout: Duration,
    /// Send the run's `PAPERCLIP_API_KEY` as a bearer token.
    pub forward_auth: bool,
}

const DEFAULT_CALLBACK_SECS: f64 = 3600.0;
/// A week: the run token's own ceiling.
const MAX_CALLBACK_SECS: f64 = 7.0 * 24.0 * 3600.0;

impl HttpConfig {
    /// Upstream's HTTP keys (`url`, `method`, `headers`, `timeoutMs`,
    /// `payloadTemplate`) and ours for a callback; the keys upstream keeps
    /// across a change of type are accepted unused: a request has no
    /// process (`env`, `cwd`, `timeoutSec`, `graceSec`) and no prompt
    /// (`promptTemplate`, `bootstrapPromptTemplate`, `instructionsFilePath`;
    /// `payloadTemplate` is the body), nor skills (`paperclipSkillSync`).
    pub fn known_keys() -> KnownKeys {
        KnownKeys::new(
            &[
                "url",
                "method",
                "headers",
                "timeoutMs",
                "payloadTemplate",
                "async",
                "callbackTimeoutSec",
                "forwardAuth",
            ],
            UPSTREAM_AGNOSTIC_KEYS,
        )
    }

    pub fn parse(config: &Value) -> Result<HttpConfig, Vec<ConfigError>> {
        let mut f = Fields::new(config)?;
        let url = f
            .required_string("url")
            .and_then(|raw| match Url::parse(&raw) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => Some(u),
                Ok(_) => {
                    f.error(&["url"], "must be an http or https URL");
                    None
                }
                Err(e) => {
                    f.error(&["url"], format!("invalid URL: {e}"));
                    None
                }
            });
        let method = f.string("method").map_or(Some(Method::POST), |m| {
            let parsed = Method::from_bytes(m.to_ascii_uppercase().as_bytes()).ok();
            if parsed.is_none() {
                f.error(&["method"], "must be an HTTP method such as POST or GET");
            }
            parsed
        });
        let mut headers = HeaderMap::new();
        for (name, value) in f.string_map("headers") {
            match (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&value),
            ) {
                (Ok(n), Ok(v)) => {
                    headers.insert(n, v);
                }
                (Err(_), _) => f.error(&["headers", &name], "invalid header name"),
                (_, Err(_)) => f.error(&["headers", &name], "invalid header value"),
            }
        }
        f.refuse_confinement();
        let timeout_ms = f.non_negative("timeoutMs", 30_000.0);
        let payload_template = f.get("payloadTemplate").cloned();
        let async_callback = f.bool("async", false);
        let callback_secs = f.non_negative("callbackTimeoutSec", DEFAULT_CALLBACK_SECS);
        if callback_secs == 0.0 || callback_secs > MAX_CALLBACK_SECS {
            f.error(
                &["callbackTimeoutSec"],
                format!("must be between 1 and {MAX_CALLBACK_SECS} seconds: a callback that never comes must not hold the run forever"),
            );
        }
        let forward_auth = f.bool("forwardAuth", false);
        let (Some(url), Some(method)) = (url, method) else {
            return Err(f.finish(()).expect_err("url/method errors were recorded"));
        };
        f.finish(HttpConfig {
            url,
            method,
            headers,
            timeout: (timeout_ms > 0.0).then(|| Duration::from_secs_f64(timeout_ms / 1000.0)),
            payload_template,
            async_callback,
            callback_timeout: Duration::from_secs_f64(callback_secs.clamp(1.0, MAX_CALLBACK_SECS)),
            forward_auth,
        })
    }
}

impl Adapter for HttpAdapter {
    fn kind(&self) -> &'static str {
        "http"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            cancellable: true,
            async_callback: true,
            sessions: false,
            needs_prompt: false,
        }
    }

    fn validate_config(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        HttpConfig::parse(config).map(|_| ())
    }

    fn known_keys(&self) -> KnownKeys {
        HttpConfig::known_keys()
    }

    fn config_schema(&self, models: &[crate::models::Model]) -> Value {
        crate::models::schema(&self.known_keys(), &["url"], models)
    }

    fn limits(&self, config: &Value) -> RunLimits {
        HttpConfig::parse(config)
            .map(|c| RunLimits {
                timeout: c.timeout,
                grace: Duration::ZERO,
                callback: c.async_callback.then_some(c.callback_timeout),
            })
            .unwrap_or_default()
    }

    fn invoke<'a>(
        &'a self,
        invocation: Invocation,
        sink: Arc<dyn RunSink>,
    ) -> BoxFuture<'a, Outcome> {
        crate::config::note_ignored(&self.known_keys(), "http", &invocation.config, &*sink);
        Box::pin(self.run(invocation, sink))
    }

    fn test_environment<'a>(
        &'a self,
        config: &'a Value,
        _default_cwd: &'a std::path::Path,
    ) -> BoxFuture<'a, crate::environment::Report> {
        Box::pin(crate::environment::http(config))
    }
}

impl HttpAdapter {
    async fn run(&self, inv: Invocation, sink: Arc<dyn RunSink>) -> Outcome {
        let cfg = match HttpConfig::parse(&inv.config) {
            Ok(cfg) => cfg,
            Err(errors) => return Outcome::failed(ErrorCode::HttpError, describe(&errors)),
        };
        if inv.cancel.is_cancelled() {
            return Outcome::ended(
                OutcomeStatus::Cancelled,
                ErrorCode::Cancelled,
                "cancelled before start",
            );
        }

        let mut req = self
            .client
            .request(cfg.method.clone(), cfg.url.clone())
            .headers(cfg.headers.clone())
            .header("X-Paperclip-Run-Id", &inv.run_id);
        if cfg.forward_auth {
            if let Some(key) = inv.env.get("PAPERCLIP_API_KEY") {
                req = req.bearer_auth(key);
            }
        }
        if !matches!(cfg.method, Method::GET | Method::HEAD) {
            req = req.json(&body(&cfg, &inv));
        }

        let request_line = format!("{} {}", cfg.method, loggable_url(&cfg.url));
        sink.event(
            "adapter.invoke",
            "info",
            &request_line,
            json!({"method": cfg.method.as_str(), "url": loggable_url(&cfg.url)}),
        );
        sink.log(Stream::System, &format!("{request_line}\n"));

        let started = Instant::now();
        let exchange = async {
            let mut resp = req.send().await?;
            let status = resp.status();
            let mut body = Vec::new();
            while let Some(chunk) = resp.chunk().await? {
                let room = MAX_RESPONSE - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if body.len() >= MAX_RESPONSE {
                    break;
                }
            }
            Ok::<_, reqwest::Error>((status, body))
        };
        let deadline = cfg.timeout.map(|t| started + t);
        let result = tokio::select! {
            r = exchange => r,
            _ = sleep_until(deadline) => {
                let ms = cfg.timeout.unwrap_or_default().as_millis();
                sink.log(Stream::System, &format!("request timed out after {ms} ms\n"));
                return Outcome::ended(OutcomeStatus::TimedOut, ErrorCode::Timeout, format!("timed out after {ms} ms"));
            }
            _ = inv.cancel.cancelled() => {
                sink.log(Stream::System, "request cancelled\n");
                return Outcome::ended(OutcomeStatus::Cancelled, ErrorCode::Cancelled, "cancelled");
            }
        };
        let (status, bytes) = match result {
            Ok(r) => r,
            Err(e) => {
                let reason = error_chain(&e.without_url());
                sink.log(Stream::System, &format!("request failed: {reason}\n"));
                return Outcome::failed(ErrorCode::HttpError, format!("request failed: {reason}"));
            }
        };
        let elapsed = started.elapsed().as_millis();
        sink.log(Stream::System, &format!("HTTP {status} ({elapsed} ms)\n"));
        response_outcome(&cfg, status, &bytes)
    }
}

fn response_outcome(cfg: &HttpConfig, status: StatusCode, bytes: &[u8]) -> Outcome {
    if !status.is_success() {
        let text = String::from_utf8_lossy(bytes);
        let snippet: String = text.trim().chars().take(ERROR_BODY_CHARS).collect();
        let mut error = format!("HTTP {}", status.as_u16());
        if !snippet.is_empty() {
            error = format!("{error}: {snippet}");
        }
        return Outcome::failed(ErrorCode::HttpError, error);
    }
    let result = serde_json::from_slice(bytes).unwrap_or_else(|_| {
        let text = String::from_utf8_lossy(bytes);
        json!({"body": truncate(&text, RESULT_TEXT_LIMIT)})
    });
    let mut out = Outcome::succeeded();
    if cfg.async_callback && status == StatusCode::ACCEPTED {
        out.status = OutcomeStatus::Pending;
    }
    out.result = Some(result);
    out
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The URL without credentials, query or fragment, which often carry tokens.
fn loggable_url(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

/// reqwest's top-level message is generic ("error sending request"); the
/// cause (connection refused, DNS, TLS) is further down the chain.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// The request body: the rendered `payloadTemplate`, or a default envelope.
fn body(cfg: &HttpConfig, inv: &Invocation) -> Value {
    match &cfg.payload_template {
        Some(template) => render(template, &placeholders(inv)),
        None => json!({
            "runId": inv.run_id,
            "agentId": inv.agent_id,
            "companyId": inv.company_id,
            "context": inv.context,
        }),
    }
}

fn placeholders(inv: &Invocation) -> BTreeMap<String, Value> {
    let mut vars = BTreeMap::new();
    vars.insert("run.id".to_string(), json!(inv.run_id));
    vars.insert("agent.id".to_string(), json!(inv.agent_id));
    vars.insert("company.id".to_string(), json!(inv.company_id));
    vars.insert("context".to_string(), inv.context.clone());
    if let Value::Object(ctx) = &inv.context {
        for (k, v) in ctx {
            if v.is_string() || v.is_number() || v.is_boolean() {
                vars.insert(format!("context.{k}"), v.clone());
            }
        }
    }
    vars
}

/// Substitutes `{{name}}` in every string of `template`. A string that is
/// exactly one known placeholder takes the value's JSON type, so
/// `"{{context.count}}"` can produce a number. Unknown names are left as
/// written so a typo shows up in the receiver's logs rather than vanishing.
pub fn render(template: &Value, vars: &BTreeMap<String, Value>) -> Value {
    match template {
        Value::String(s) => render_string(s, vars),
        Value::Array(items) => Value::Array(items.iter().map(|v| render(v, vars)).collect()),
        Value::Object(map) => {
            let rendered: Map<String, Value> = map
                .iter()
                .map(|(k, v)| (substitute(k, vars), render(v, vars)))
                .collect();
            Value::Object(rendered)
        }
        other => other.clone(),
    }
}

fn render_string(s: &str, vars: &BTreeMap<String, Value>) -> Value {
    let whole = s
        .strip_prefix("{{")
        .and_then(|rest| rest.strip_suffix("}}"))
        .filter(|inner| !inner.contains("{{") && !inner.contains("}}"));
    if let Some(value) = whole.and_then(|name| vars.get(name.trim())) {
        return value.clone();
    }
    Value::String(substitute(s, vars))
}

fn substitute(s: &str, vars: &BTreeMap<String, Value>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start + 2..].find("}}") else {
            break;
        };
        let name = rest[start + 2..start + 2 + len].trim();
        out.push_str(&rest[..start]);
        match vars.get(name) {
            Some(Value::String(v)) => out.push_str(v),
            Some(v) => out.push_str(&v.to_string()),
            None => out.push_str(&rest[start..start + 4 + len]),
        }
        rest = &rest[start + 4 + len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_http_keys_are_known_and_others_named() {
        let good = json!({
            "url": "http://127.0.0.1:9/hook", "method": "POST", "headers": { "X-Any-Name": "v" },
            "timeoutMs": 1000, "payloadTemplate": { "id": "{{run.id}}" }, "async": true,
            "callbackTimeoutSec": 60, "forwardAuth": true,
            "env": { "A": "1" }, "cwd": "/tmp", "timeoutSec": 5, "promptTemplate": "x",
        });
        crate::config::assert_keys(&HttpAdapter::default(), good, "authHeader");
    }

    fn vars() -> BTreeMap<String, Value> {
        BTreeMap::from([
            ("run.id".to_string(), json!("r1")),
            ("context.n".to_string(), json!(3)),
        ])
    }

    #[test]
    fn whole_placeholder_keeps_type_and_inline_becomes_text() {
        let t = json!({"id": "{{ run.id }}", "n": "{{context.n}}", "s": "run {{run.id}} n={{context.n}}"});
        assert_eq!(
            render(&t, &vars()),
            json!({"id": "r1", "n": 3, "s": "run r1 n=3"})
        );
    }

    #[test]
    fn unknown_and_unclosed_placeholders_are_left_alone() {
        let t = json!(["{{nope}}", "a {{nope}} b", "{{run.id", "{{run.id}}{{"]);
        assert_eq!(
            render(&t, &vars()),
            json!(["{{nope}}", "a {{nope}} b", "{{run.id", "r1{{"])
        );
    }

    #[test]
    fn config_errors_carry_paths() {
        let errs = HttpConfig::parse(&json!({"url": "ftp://x", "headers": {"a": 1}, "async": "y"}))
            .unwrap_err();
        let paths: Vec<_> = errs.iter().map(|e| e.path.join(".")).collect();
        assert_eq!(paths, ["url", "headers.a", "async"]);
        assert!(HttpConfig::parse(&json!({"url": "https://x/y"})).is_ok());
        assert_eq!(HttpConfig::parse(&json!({})).unwrap_err()[0].path, ["url"]);
    }

    #[test]
    fn logged_url_drops_secrets() {
        let u = Url::parse("https://user:pw@h.example/p?token=s#f").unwrap();
        assert_eq!(loggable_url(&u), "https://h.example/p");
    }
}
