package trace

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"

	"github.com/flowrun/flow/engine/record"
)

// The histograms' bucket boundaries the GenAI conventions advise.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

// meters are a run's GenAI client metrics, gen_ai.client.token.usage and
// gen_ai.client.operation.duration, one record per chat and invoke_agent
// span. A nil
// *meters records nothing: no metrics endpoint is set.
type meters struct {
	mp       *sdkmetric.MeterProvider
	tokens   genaiconv.ClientTokenUsage
	duration genaiconv.ClientOperationDuration
}

// newMeters exports the run's metrics over OTLP when the environment
// names where: OTEL_EXPORTER_OTLP_ENDPOINT, or its metrics-only form (a
// traces-only endpoint sends no metrics).
func newMeters(ctx context.Context, res *resource.Resource, client *http.Client) (*meters, error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") == "" {
		return nil, nil
	}
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithHTTPClient(client))
	if err != nil {
		return nil, fmt.Errorf("the OTLP metric exporter: %w", err)
	}
	// Sent once, when the run ends (shutdown): a run's figures are known
	// only then, from its journal.
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))))
	m := mp.Meter("github.com/flowrun/flow", metric.WithSchemaURL(semconv.SchemaURL))
	tokens, err := genaiconv.NewClientTokenUsage(m, metric.WithExplicitBucketBoundaries(tokenBuckets...))
	if err != nil {
		return nil, err
	}
	duration, err := genaiconv.NewClientOperationDuration(m, metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, err
	}
	return &meters{mp: mp, tokens: tokens, duration: duration}, nil
}

// record records one operation: its duration, with its failure kind as
// error.type when it failed, and — for a chat request with usage (u not
// nil) — its input tokens (cached ones included) and output tokens, as
// far as reported.
func (m *meters) record(op genaiconv.OperationNameAttr, model, provider string, u *record.Usage, d time.Duration, failed bool, kind string) {
	if m == nil {
		return
	}
	ctx := context.Background()
	prov := genaiconv.ProviderNameAttr(provider)
	var attrs []attribute.KeyValue
	if model != "" {
		attrs = append(attrs, m.tokens.AttrRequestModel(model))
	}
	if u == nil {
		u = &record.Usage{}
	}
	if in := inputTokens(u); in != nil {
		m.tokens.Record(ctx, *in, op, prov, genaiconv.TokenTypeInput, attrs...)
	}
	if u.Output != nil {
		m.tokens.Record(ctx, *u.Output, op, prov, genaiconv.TokenTypeOutput, attrs...)
	}
	if failed {
		attrs = append(attrs, errorType(kind))
	}
	m.duration.Record(ctx, d.Seconds(), op, prov, attrs...)
}

// shutdown sends what was recorded.
func (m *meters) shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	return m.mp.Shutdown(ctx)
}
