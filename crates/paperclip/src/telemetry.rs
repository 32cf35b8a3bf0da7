//! Logs to stderr and, when an OTLP endpoint is configured, traces to an
//! OpenTelemetry collector over OTLP/HTTP (protobuf).
//!
//! Off by default: without an endpoint no exporter, no span processor and
//! no OpenTelemetry layer exist, and the spans the server and runtime open
//! (one per HTTP request, one per run with its phases) are disabled at their
//! callsites by the `warn` log filter. With one, only `paperclip_*` spans are
//! exported (no log events, which could quote input), in batches from a task
//! on the tokio runtime, and [`Telemetry::shutdown`] flushes the last batch.

use std::time::Duration;

use anyhow::{bail, Context};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// Where traces go and as what service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Otlp {
    /// The full URL spans are POSTed to (`…/v1/traces`).
    pub traces_url: String,
    pub service_name: String,
}

/// What the OTLP settings were given as, before resolving.
#[derive(Debug, Default)]
pub struct OtlpSources {
    /// `--otlp-endpoint`: a collector's base URL.
    pub flag: Option<String>,
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: the full traces URL.
    pub traces_env: Option<String>,
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`: a base URL.
    pub base_env: Option<String>,
    /// `otlp_endpoint` in the TOML file: a base URL.
    pub file: Option<String>,
    /// `--otel-service-name` / `OTEL_SERVICE_NAME`, else the file's.
    pub service_name: Option<String>,
    /// `OTEL_SDK_DISABLED`.
    pub sdk_disabled: Option<String>,
}

impl OtlpSources {
    /// The standard variables from the environment; the flag and the file
    /// are filled in by the caller.
    pub fn from_env() -> OtlpSources {
        let env = |name: &str| std::env::var(name).ok();
        OtlpSources {
            traces_env: env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            base_env: env("OTEL_EXPORTER_OTLP_ENDPOINT"),
            sdk_disabled: env("OTEL_SDK_DISABLED"),
            ..OtlpSources::default()
        }
    }
}

/// The service name of exported spans unless one is set.
pub const DEFAULT_SERVICE_NAME: &str = "paperclip";

/// The flag wins, then the standard variables (the traces-only one first,
/// used as given; the general one is a base URL, as OTel's spec has it),
/// then the TOML file. An empty value counts as unset; `OTEL_SDK_DISABLED=true`
/// turns it all off.
pub fn resolve(sources: OtlpSources) -> anyhow::Result<Option<Otlp>> {
    let set = |v: Option<String>| v.map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    if set(sources.sdk_disabled).is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let traces = |base: String, source: &str| -> anyhow::Result<String> {
        check_url(&base, source)?;
        Ok(format!("{}/v1/traces", base.trim_end_matches('/')))
    };
    let traces_url = if let Some(base) = set(sources.flag) {
        traces(base, "--otlp-endpoint")?
    } else if let Some(url) = set(sources.traces_env) {
        check_url(&url, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")?;
        url
    } else if let Some(base) = set(sources.base_env) {
        traces(base, "OTEL_EXPORTER_OTLP_ENDPOINT")?
    } else if let Some(base) = set(sources.file) {
        traces(base, "otlp_endpoint in the config file")?
    } else {
        return Ok(None);
    };
    let service_name =
        set(sources.service_name).unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_string());
    Ok(Some(Otlp {
        traces_url,
        service_name,
    }))
}

fn check_url(url: &str, source: &str) -> anyhow::Result<()> {
    let parsed = reqwest::Url::parse(url);
    if !parsed.is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host()) {
        bail!("{source} must be an http:// or https:// URL (OTLP over HTTP, e.g. http://127.0.0.1:4318)");
    }
    Ok(())
}

/// The exporter's half of the process: flushed at shutdown.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

/// How long shutdown waits for the last spans to reach the collector.
const FLUSH_BOUND: Duration = Duration::from_secs(5);

/// One export's bound (OTel's default for `OTEL_EXPORTER_OTLP_TIMEOUT`).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Installs the global subscriber: the log (`PAPERCLIP_LOG`, default
/// `warn`) and, with `otlp`, the span exporter. Call it on the runtime: the
/// batch task is spawned on it.
pub fn init(otlp: Option<&Otlp>) -> anyhow::Result<Option<Telemetry>> {
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(
            tracing_subscriber::EnvFilter::try_from_env("PAPERCLIP_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        );
    let Some(otlp) = otlp else {
        tracing_subscriber::registry().with(log).init();
        return Ok(None);
    };
    let provider = provider(otlp)?;
    let spans = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("paperclip"))
        .with_location(false)
        .with_threads(false)
        .with_level(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        .with_filter(ours());
    tracing_subscriber::registry().with(log).with(spans).init();
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    Ok(Some(Telemetry { provider }))
}

/// Only our spans: not log events (they may quote input and are logged
/// already), nor the spans of the libraries under us.
fn ours<S>() -> impl tracing_subscriber::layer::Filter<S> {
    tracing_subscriber::filter::filter_fn(|meta| {
        meta.is_span()
            && *meta.level() <= tracing::Level::INFO
            && meta.target().starts_with("paperclip_")
    })
    .with_max_level_hint(tracing::level_filters::LevelFilter::INFO)
}

fn provider(otlp: &Otlp) -> anyhow::Result<SdkTracerProvider> {
    use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
    let client = reqwest::Client::builder()
        .timeout(EXPORT_TIMEOUT)
        .build()
        .context("building the OTLP HTTP client")?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_http_client(Reqwest(client))
        .with_endpoint(otlp.traces_url.clone())
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .context("setting up the OTLP trace exporter")?;
    let batch =
        opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor::builder(
            exporter,
            opentelemetry_sdk::runtime::Tokio,
        )
        .build();
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(otlp.service_name.clone())
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(batch)
        .with_resource(resource)
        .build())
}

impl Telemetry {
    /// Sends the spans still buffered and stops the exporter, within a bound
    /// (a collector that does not answer does not hold the exit).
    pub async fn shutdown(self) {
        // The processor's shutdown blocks until its task on this runtime
        // has exported, so it waits on a blocking thread.
        let provider = self.provider;
        let done = tokio::task::spawn_blocking(move || provider.shutdown());
        match tokio::time::timeout(FLUSH_BOUND, done).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(err))) => tracing::warn!(error = %err, "flushing traces at shutdown"),
            Ok(Err(err)) => tracing::warn!(error = %err, "flushing traces at shutdown"),
            Err(_) => tracing::warn!(
                "traces not flushed {} s after shutdown; the last ones are lost",
                FLUSH_BOUND.as_secs()
            ),
        }
    }
}

/// The exporter's HTTP client: the workspace's reqwest (rustls), so the
/// tree keeps one reqwest.
#[derive(Debug)]
struct Reqwest(reqwest::Client);

/// A collector's answer is a small status message; more is not read.
const MAX_ANSWER_BYTES: usize = 1 << 20;

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for Reqwest {
    async fn send_bytes(
        &self,
        request: opentelemetry_http::Request<opentelemetry_http::Bytes>,
    ) -> Result<
        opentelemetry_http::Response<opentelemetry_http::Bytes>,
        opentelemetry_http::HttpError,
    > {
        let mut response = self.0.execute(reqwest::Request::try_from(request)?).await?;
        let mut answer = opentelemetry_http::Response::builder().status(response.status());
        if let Some(headers) = answer.headers_mut() {
            *headers = std::mem::take(response.headers_mut());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok(answer.body(body.into())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn off_unless_an_endpoint_is_set() {
        assert_eq!(resolve(OtlpSources::default()).unwrap(), None);
        let blank = OtlpSources {
            base_env: some(" "),
            service_name: some("svc"),
            ..OtlpSources::default()
        };
        assert_eq!(resolve(blank).unwrap(), None);
    }

    #[test]
    fn flag_then_traces_variable_then_base_variable_then_file() {
        let all = || OtlpSources {
            flag: some("http://flag:4318/"),
            traces_env: some("http://traces:4318/custom/path"),
            base_env: some("http://base:4318"),
            file: some("https://file"),
            ..OtlpSources::default()
        };
        let url = |s: OtlpSources| resolve(s).unwrap().unwrap().traces_url;
        assert_eq!(url(all()), "http://flag:4318/v1/traces");
        let no_flag = OtlpSources {
            flag: None,
            ..all()
        };
        assert_eq!(url(no_flag), "http://traces:4318/custom/path");
        let base = OtlpSources {
            flag: None,
            traces_env: some(""),
            ..all()
        };
        assert_eq!(url(base), "http://base:4318/v1/traces");
        let file = OtlpSources {
            file: some("https://file/otel/"),
            ..OtlpSources::default()
        };
        assert_eq!(url(file), "https://file/otel/v1/traces");
    }

    #[test]
    fn service_name_defaults_to_paperclip() {
        let base = || OtlpSources {
            base_env: some("http://127.0.0.1:4318"),
            ..OtlpSources::default()
        };
        assert_eq!(resolve(base()).unwrap().unwrap().service_name, "paperclip");
        let named = OtlpSources {
            service_name: some("board-eu"),
            ..base()
        };
        assert_eq!(resolve(named).unwrap().unwrap().service_name, "board-eu");
    }

    #[test]
    fn sdk_disabled_wins_and_bad_urls_are_refused() {
        let disabled = OtlpSources {
            flag: some("http://127.0.0.1:4318"),
            sdk_disabled: some("TRUE"),
            ..OtlpSources::default()
        };
        assert_eq!(resolve(disabled).unwrap(), None);
        for bad in ["127.0.0.1:4318", "grpc://collector:4317", "http://"] {
            let err = resolve(OtlpSources {
                base_env: some(bad),
                ..OtlpSources::default()
            })
            .unwrap_err()
            .to_string();
            assert!(err.contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "{bad}: {err}");
        }
    }
}
