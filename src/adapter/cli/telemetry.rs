//! `accord serve --otlp-endpoint` (feature `otel`): the request, search
//! and redeem spans ([`crate::adapter::http::otel`]) exported in batches
//! over OTLP/HTTP (protobuf) to an OpenTelemetry collector.
//!
//! Configured as OpenTelemetry SDKs are: `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (the flag's environment variable; traces go to `/v1/traces` under it)
//! or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL, which wins),
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`,
//! `OTEL_SERVICE_NAME` (default `accord`) and `OTEL_RESOURCE_ATTRIBUTES`.
//! With neither endpoint set nothing is exported.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::registry::Registry;

use super::BoxError;

/// Where traces go.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OtelFlags {
    /// Export OpenTelemetry traces over OTLP/HTTP to this collector
    /// (`http://collector:4318`; traces go to `/v1/traces` under it).
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,
}

/// The tracer provider of the flags and the environment, when traces are
/// to be exported; it is also the process's global propagator of W3C
/// trace context, so requests continue their callers' traces.
pub(super) fn provider(flags: &OtelFlags) -> Result<Option<SdkTracerProvider>, BoxError> {
    let per_signal = std::env::var_os("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some();
    let base = flags.otlp_endpoint.as_deref().filter(|e| !e.is_empty());
    if base.is_none() && !per_signal {
        return Ok(None);
    }
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
    if let (Some(base), false) = (base, per_signal) {
        exporter = exporter.with_endpoint(format!("{}/v1/traces", base.trim_end_matches('/')));
    }
    let exporter = exporter
        .build()
        .map_err(|e| format!("OpenTelemetry exporter: {e}"))?;
    let mut resource = opentelemetry_sdk::Resource::builder().with_attribute(
        opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
    );
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("accord");
    }
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    Ok(Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build(),
    ))
}

/// The layer that exports through `provider`.
pub(super) fn layer(
    provider: &SdkTracerProvider,
) -> Box<dyn tracing_subscriber::Layer<Registry> + Send + Sync> {
    Box::new(crate::adapter::http::otel::layer(provider.tracer("accord")))
}
