package temporal

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

func testKey(t *testing.T, seed string, old ...string) Key {
	t.Helper()
	enc := func(s string) string {
		return base64.StdEncoding.EncodeToString([]byte((s + strings.Repeat("!", 32))[:32]))
	}
	var olds []string
	for _, o := range old {
		olds = append(olds, enc(o))
	}
	k, err := ParseKeys(enc(seed), olds)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// in is k's data converter for workflow id's payloads, as the SDK binds it.
func in(k Key, id string) converter.DataConverter {
	return converter.WithDataConverterSerializationContext(DataConverter(k), converter.WorkflowSerializationContext{Namespace: "default", WorkflowID: id})
}

func TestCodecSealsPayloadsAndRefusesAnotherKey(t *testing.T) {
	k1, k2 := testKey(t, "0123456789abcdef"), testKey(t, "fedcba9876543210")
	p, err := in(k1, "run-1").ToPayload(map[string]string{"prompt": "the secret words"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.String(), "secret words") || string(p.Metadata[converter.MetadataEncoding]) != encodingEncrypted {
		t.Fatalf("the payload is not sealed: %v", p)
	}
	var back map[string]string
	if err := in(k1, "run-1").FromPayload(p, &back); err != nil || back["prompt"] != "the secret words" {
		t.Fatalf("the key's own payload: %v, %v", back, err)
	}
	for _, k := range []Key{k2, {}} {
		err := in(k, "run-1").FromPayload(p, &back)
		if err == nil || !strings.Contains(err.Error(), k1.ID()) || !unreadable(err) {
			t.Errorf("a payload of key %s read with key %q: %v, want an unreadable payload naming the key", k1.ID(), k.ID(), err)
		}
	}
	if _, err := ParseKey("short"); err == nil {
		t.Error("a key that is not 32 bytes of base64 was taken")
	}
	if _, err := ParseKeys("", []string{base64.StdEncoding.EncodeToString(make([]byte, 32))}); err == nil {
		t.Error("old keys without a key were taken")
	}
}

// With a key, a payload that is not sealed is refused: anyone who can
// write to the namespace could have written it (an answer to an ask, a
// run's input). Without one, clear payloads read as they are.
func TestCodecRefusesUnsealedPayloadsWithAKey(t *testing.T) {
	k := testKey(t, "0123456789abcdef")
	clear, _ := DataConverter(Key{}).ToPayload(AnswerSignal{Visit: "deploy", Value: "yes", By: "mallory-no-key"})
	raw := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("json/plain")}, Data: []byte(`{"visit":"deploy","value":"yes"}`)}
	for _, p := range []*commonpb.Payload{clear, raw} {
		for _, dc := range []converter.DataConverter{DataConverter(k), in(k, "run-1")} {
			var s AnswerSignal
			err := dc.FromPayload(p, &s)
			var pe *PayloadError
			if !errors.As(err, &pe) || pe.Unreadable || !strings.Contains(err.Error(), "not sealed") {
				t.Errorf("an unsealed payload read with a key: %+v, %v; want it refused", s, err)
			}
		}
	}
	var s AnswerSignal
	if err := DataConverter(Key{}).FromPayload(clear, &s); err != nil || s.By != "mallory-no-key" {
		t.Errorf("a clear payload read without a key: %+v, %v", s, err)
	}
}

// A sealed payload is bound to its workflow: it does not open in
// another run, nor with its binding stripped or changed.
func TestCodecBindsPayloadsToTheirWorkflow(t *testing.T) {
	k := testKey(t, "0123456789abcdef")
	p, err := in(k, "run-a").ToPayload(AnswerSignal{Visit: "deploy", Value: "yes", By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Metadata[metaBound]) != "run-a" {
		t.Fatalf("the payload names no workflow: %v", p.Metadata)
	}
	var s AnswerSignal
	if err := in(k, "run-a").FromPayload(p, &s); err != nil || s.By != "alice" {
		t.Fatalf("in its own workflow: %+v, %v", s, err)
	}
	stripped := &commonpb.Payload{Metadata: map[string][]byte{}, Data: p.Data}
	moved := &commonpb.Payload{Metadata: map[string][]byte{}, Data: p.Data}
	for k, v := range p.Metadata {
		stripped.Metadata[k], moved.Metadata[k] = v, v
	}
	delete(stripped.Metadata, metaBound)
	moved.Metadata[metaBound] = []byte("run-b")
	for name, c := range map[string]struct {
		p  *commonpb.Payload
		dc converter.DataConverter
	}{
		"in another workflow":       {p, in(k, "run-b")},
		"stripped of its workflow":  {stripped, in(k, "run-b")},
		"relabelled for another":    {moved, in(k, "run-b")},
		"stripped, read unbound":    {stripped, DataConverter(k)},
		"relabelled, read unbound":  {moved, DataConverter(k)},
		"in a workflow it prefixes": {p, in(k, "run-a-evil")},
	} {
		var s AnswerSignal
		err := c.dc.FromPayload(c.p, &s)
		var pe *PayloadError
		if !errors.As(err, &pe) || pe.Unreadable {
			t.Errorf("%s: %+v, %v; want it refused", name, s, err)
		}
	}
	// A schedule's action is sealed once, for the schedule's workflow id,
	// and every fire runs as that id and the fire's time.
	sched, _ := in(k, "flow-ab12-nightly").ToPayload("input")
	var v string
	if err := in(k, "flow-ab12-nightly-2026-12-03T04:00:00Z").FromPayload(sched, &v); err != nil || v != "input" {
		t.Errorf("a schedule's input in a fire of it: %q, %v", v, err)
	}
	if err := in(k, "flow-ab12-nightly-x").FromPayload(sched, &v); err == nil {
		t.Error("a schedule's input opened in a workflow that is not a fire of it")
	}
	// Payloads sealed where the SDK says no workflow are bound to none:
	// they open only where it says none either.
	free, _ := DataConverter(k).ToPayload("free")
	if err := DataConverter(k).FromPayload(free, &v); err != nil || v != "free" {
		t.Errorf("an unbound payload read unbound: %q, %v", v, err)
	}
	if err := in(k, "run-a").FromPayload(free, &v); err == nil {
		t.Error("an unbound payload opened in a workflow")
	}
}

// Rotation: a key ring seals with its key and opens with its old ones
// too; a process with only the new key cannot read the old payloads.
func TestCodecOpensOldKeysAndSealsWithTheNew(t *testing.T) {
	oldKey := testKey(t, "the old key")
	rotated := testKey(t, "the new key", "the old key")
	newOnly := testKey(t, "the new key")
	p, _ := in(oldKey, "run").ToPayload("before")
	var v string
	if err := in(rotated, "run").FromPayload(p, &v); err != nil || v != "before" {
		t.Fatalf("an old key's payload with the old key in the ring: %q, %v", v, err)
	}
	q, _ := in(rotated, "run").ToPayload("after")
	if id := string(q.Metadata[metaKeyID]); id != newOnly.ID() || id == oldKey.ID() {
		t.Errorf("sealed with key %s, want the new key %s", id, newOnly.ID())
	}
	if err := in(newOnly, "run").FromPayload(p, &v); !unreadable(err) || !strings.Contains(err.Error(), oldKey.ID()) {
		t.Errorf("an old key's payload without it: %v, want unreadable naming %s", err, oldKey.ID())
	}
	if err := in(oldKey, "run").FromPayload(q, &v); !unreadable(err) {
		t.Errorf("a new key's payload with only the old key: %v, want unreadable", err)
	}
}

// In workflow code, a payload this worker cannot open fails the workflow
// task (a panic the SDK turns into a task failure, retried), never the
// run; a refused one is an error, as anywhere.
func TestWorkflowCodeCannotOpenPanicsForATaskFailure(t *testing.T) {
	k1, k2 := testKey(t, "one"), testKey(t, "two")
	p, _ := in(k1, "run").ToPayload("x")
	clear, _ := DataConverter(Key{}).ToPayload("x")
	wf := in(k2, "run").(converter.ContextAware).WithWorkflowContext(nil)
	var v string
	func() {
		defer func() {
			if r := recover(); r == nil || !unreadable(r.(error)) {
				t.Errorf("recovered %v, want the unreadable payload", r)
			}
		}()
		_ = wf.FromPayload(p, &v)
	}()
	wfKeyed := in(k1, "run").(converter.ContextAware).WithWorkflowContext(nil)
	if err := wfKeyed.FromPayload(clear, &v); err == nil || unreadable(err) {
		t.Errorf("a clear payload in keyed workflow code: %v, want it refused", err)
	}
	// The SDK binds after it tells the converter it is workflow code, and
	// the other way round: both stay.
	bound := converter.WithDataConverterSerializationContext(wfKeyed, converter.WorkflowSerializationContext{WorkflowID: "other"})
	if err := bound.FromPayload(p, &v); err == nil || unreadable(err) {
		t.Errorf("a payload of another workflow in workflow code: %v, want it refused", err)
	}
}

// A PayloadError travels in clear even where failures are sealed: the
// client, a worker with another key, flow show must all be able to say it.
func TestPayloadFailuresStayInClear(t *testing.T) {
	k := testKey(t, "one")
	fc := FailureConverter(k)
	pe := &PayloadError{Unreadable: true, Msg: "a payload is sealed with key abc, " + unreadableMark}
	f := fc.ErrorToFailure(errors.Join(errors.New("unable to decode"), pe))
	if !strings.Contains(f.GetMessage(), unreadableMark) || f.GetEncodedAttributes() != nil {
		t.Errorf("a payload failure: %q (encoded %v), want its message in clear", f.GetMessage(), f.GetEncodedAttributes() != nil)
	}
	back := FailureConverter(Key{}).FailureToError(f)
	if !unreadable(back) {
		t.Errorf("read back without the key: %v, want it unreadable", back)
	}
	g := fc.ErrorToFailure(errors.New("the secret words"))
	if strings.Contains(g.String(), "secret words") {
		t.Errorf("another failure is in clear: %v", g)
	}
}
