package temporal

import (
	"context"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// PayloadError says why a payload was not opened. Its message names keys
// by their ids and workflows by their ids, nothing of the payload, so it
// travels in clear (FailureConverter) and is what flow show says.
type PayloadError struct {
	Msg string
	// Unreadable: the payload is sealed with a key this process lacks,
	// so another process with the key may read it; a worker fails the
	// task rather than the run. Otherwise the payload is refused.
	Unreadable bool
}

func (e *PayloadError) Error() string { return payloadMark + e.Msg }

// payloadMark starts every PayloadError's message, and unreadableMark is
// in the unreadable ones': a failure's message is what crosses processes
// (a panic's, an activity's), so it is how they are told apart there.
const (
	payloadMark    = "flow payload: "
	unreadableMark = "which this process cannot open"
)

func refused(format string, args ...any) error {
	return &PayloadError{Msg: "refused: " + fmt.Sprintf(format, args...)}
}

// unreadable says whether err, or the failure it came from in another
// process, is a payload sealed with a key that process lacks.
func unreadable(err error) bool {
	var pe *PayloadError
	if errors.As(err, &pe) {
		return pe.Unreadable
	}
	return err != nil && strings.Contains(err.Error(), payloadMark) && strings.Contains(err.Error(), unreadableMark)
}

// DataConverter is the data converter of flow's clients and workers: the
// SDK's default JSON, each payload sealed with k (AES-GCM, a fresh nonce
// each) when k is set, for the workflow the SDK says it belongs to. With
// a key, a payload that is not sealed is refused; a payload sealed with a
// key this process lacks is an error naming the key ids. In a worker's
// workflow code, that error is a panic: the workflow task fails and is
// retried (by a worker that has the key) instead of failing the run.
func DataConverter(k Key) converter.DataConverter {
	return dataConverter{k: k, DataConverter: converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codec{k: k})}
}

// dataConverter is DataConverter's, with the serialization context the
// SDK gives (the workflow the payloads belong to) and whether it converts
// for workflow code.
type dataConverter struct {
	converter.DataConverter
	k        Key
	workflow bool
}

var (
	_ converter.ContextAware                          = dataConverter{}
	_ converter.DataConverterWithSerializationContext = dataConverter{}
)

func (d dataConverter) WithSerializationContext(sc converter.SerializationContext) converter.DataConverter {
	d.DataConverter = converter.WithDataConverterSerializationContext(d.DataConverter, sc)
	return d
}

func (d dataConverter) WithWorkflowContext(converter.WorkflowContext) converter.DataConverter {
	d.workflow = true
	return d
}

func (d dataConverter) WithContext(context.Context) converter.DataConverter { return d }

func (d dataConverter) FromPayload(p *commonpb.Payload, v any) error {
	return d.check(d.DataConverter.FromPayload(p, v))
}

func (d dataConverter) FromPayloads(ps *commonpb.Payloads, vs ...any) error {
	return d.check(d.DataConverter.FromPayloads(ps, vs...))
}

// check panics, in workflow code, on a payload this worker cannot open:
// the SDK fails the workflow task (docs/temporal.md), which is retried.
func (d dataConverter) check(err error) error {
	if d.workflow && unreadable(err) {
		panic(err)
	}
	return err
}

// FailureConverter keeps failures' messages and stack traces in the
// encoded attributes, sealed for their workflow, so that history holds no
// flow text in clear there either. A failure that is a PayloadError (or
// carries one's message, a worker's panic) stays in clear: it names only
// keys' and workflows' ids, and every process must be able to say it.
func FailureConverter(k Key) converter.FailureConverter {
	return failureConverter{k: k, sealed: newFailureConverter(DataConverter(k), k.Set()), clear: newFailureConverter(DataConverter(k), false)}
}

func newFailureConverter(dc converter.DataConverter, encode bool) converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc, EncodeCommonAttributes: encode})
}

type failureConverter struct {
	k             Key
	sealed, clear converter.FailureConverter
}

var _ converter.FailureConverterWithSerializationContext = failureConverter{}

func (f failureConverter) WithSerializationContext(sc converter.SerializationContext) converter.FailureConverter {
	dc := converter.WithDataConverterSerializationContext(DataConverter(f.k), sc)
	f.sealed, f.clear = newFailureConverter(dc, f.k.Set()), newFailureConverter(dc, false)
	return f
}

func (f failureConverter) ErrorToFailure(err error) *failurepb.Failure {
	if err != nil && strings.Contains(err.Error(), payloadMark) {
		return f.clear.ErrorToFailure(err)
	}
	return f.sealed.ErrorToFailure(err)
}

func (f failureConverter) FailureToError(fl *failurepb.Failure) error {
	return f.sealed.FailureToError(fl)
}
