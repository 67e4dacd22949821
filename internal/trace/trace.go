// Package trace sends a run's OpenTelemetry traces, in the GenAI semantic
// conventions, to the OTLP endpoint the standard environment variables
// name (docs/tracing.md).
//
// The attribute names and values are the semantic conventions' own
// constants, of the one version imported here (its schema URL is the
// resource's and the tracer's).
//
// A run is one span, open while the run runs so that the agent processes
// can be handed its context in TRACEPARENT; its visits' spans are made
// when it ends, from the journal — the facts usage.json is totalled from —,
// so that the tokens the spans carry sum to the run's ledger exactly.
package trace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/rundir"
)

// Enabled reports whether the environment asks for traces: the standard
// OTEL_EXPORTER_OTLP_ENDPOINT, or its traces-only form, is set (and
// OTEL_SDK_DISABLED is not true).
func Enabled() bool {
	if os.Getenv("OTEL_SDK_DISABLED") == "true" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Run is a run being traced: its span is open until End.
type Run struct {
	tp   *sdktrace.TracerProvider
	tr   oteltrace.Tracer
	ctx  context.Context // holds the run's span: the visits' parent
	span oteltrace.Span
	flow string
	// providers are the gen_ai.provider.name of the run's agents, by
	// name (from the run's snapshot).
	providers map[string]provider
	// runFailure is the failure kind of the run's end fact, if it failed.
	runFailure string
	meters     *meters

	// secrets redacts what the run's spans and the exporter's errors say.
	secrets *secret.Redactor

	mu   sync.Mutex
	errs []error // what the exporter could not send, for End to say
}

// Start opens the run's span, `invoke_workflow {flow}`. The context it
// returns (Context) holds it: every process a run started with it starts
// (agents, `run:` commands) gets its TRACEPARENT (internal/proc), and a
// Temporal worker gets it through the workflow's headers. Only OTLP over
// HTTP with protobuf is sent: another OTEL_EXPORTER_OTLP_PROTOCOL is
// refused, and so is an endpoint that is not an http or https URL.
// secrets redacts the spans' messages and the exporter's errors, and every
// secret shape is masked in them too (secret.Scan).
func Start(ctx context.Context, flow string, secrets *secret.Redactor) (*Run, error) {
	for _, vs := range [][]string{
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"},
	} {
		for _, v := range vs {
			if p := os.Getenv(v); p != "" {
				if p != "http/protobuf" {
					return nil, fmt.Errorf("%s=%s: flow sends traces and metrics over http/protobuf only (docs/tracing.md)", v, p)
				}
				break
			}
		}
	}
	if err := checkEndpoints(); err != nil {
		return nil, err
	}
	client, err := exporterClient()
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithHTTPClient(client))
	if err != nil {
		return nil, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win.
	res, err := resource.New(ctx, resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName("flow")), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("the trace resource: %w", err)
	}
	r := &Run{secrets: secrets, flow: flow}
	if r.meters, err = newMeters(ctx, res, client); err != nil {
		return nil, err
	}
	// The SDK reports a failed export to its global handler, which would
	// log it in its own words: End says it as flow's warning instead.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.errs = append(r.errs, scrubbed{r.secrets.Scrub(err.Error())})
	}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	r.tp, r.tr = tp, tp.Tracer("github.com/flowrun/flow", oteltrace.WithSchemaURL(semconv.SchemaURL))
	r.ctx, r.span = r.tr.Start(ctx, "invoke_workflow "+flow, oteltrace.WithSpanKind(oteltrace.SpanKindInternal),
		oteltrace.WithAttributes(semconv.GenAIOperationNameInvokeWorkflow, semconv.GenAIWorkflowName(flow)))
	return r, nil
}

// Context is the context Start was given with the run's span in it: the
// run is started with it.
func (r *Run) Context() context.Context { return r.ctx }

// End makes the visits' spans from the run directory's journal, ends the
// run's span, and sends everything before it returns (at most 10 s). A
// run that could not start (dir "") ends its span as an error.
func (r *Run) End(runID, dir string, ok bool) error {
	var err error
	end := time.Now()
	if dir != "" {
		var facts []*record.Fact
		if facts, err = rundir.ReadJournal(dir); err == nil {
			r.providers = providers(dir)
			end = r.visits(facts, end)
		}
	}
	if runID != "" {
		r.span.SetAttributes(attribute.String("flow.run.id", runID))
	}
	if !ok {
		r.span.SetStatus(codes.Error, "the run did not succeed")
		r.span.SetAttributes(errorType(r.runFailure))
	}
	r.span.End(oteltrace.WithTimestamp(end))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err = errors.Join(err, r.tp.Shutdown(ctx), r.meters.shutdown(ctx)); err != nil {
		err = scrubbed{r.secrets.Scrub(err.Error())}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(append([]error{err}, r.errs...)...)
}
