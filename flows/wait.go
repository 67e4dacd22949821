package flows

import (
	"encoding/json"
	"time"

	"github.com/flowrun/flow/schema"
)

// WaitNode is a wait node: the run goes on after For, at Until, or when
// Event comes (docs/waits.md). Exactly one of For, Until and Event is set.
type WaitNode struct {
	For   time.Duration
	Until *Template // an RFC 3339 time, as written or as its ${{ }} give it
	Event string
	// Timeout bounds an event's wait (0: none); Default is its output when
	// the timeout passes, and without HasDefault the visit fails `timeout`.
	Timeout    time.Duration
	Default    any
	HasDefault bool
	// OutputSchema is the JSON Schema of the event's data, from output:
	// (nil: any JSON).
	OutputSchema []byte
}

func (*WaitNode) Kind() schema.Kind { return schema.KindWait }

// AsWait returns n's wait fields, or nil when n is of another kind.
func (n *Node) AsWait() *WaitNode { s, _ := n.Spec.(*WaitNode); return s }

// waitNode compiles a wait: a time's output is when the wait ended (RFC
// 3339, a string); an event's is its data, of the output: type.
func (c *checker) waitNode(n *Node, ds *schema.WaitSpec, sc *scope) {
	wn := &WaitNode{For: ds.For.Value, Event: ds.Event.Value, Timeout: ds.Timeout.Value, Default: ds.Default, HasDefault: ds.HasDefault}
	n.Spec, n.Output = wn, schema.StringType
	if ds.Until.Set() {
		wn.Until = c.template(ds.Until, sc)
	}
	if ds.Event.Set() {
		n.Output = schema.AnyType
		if ds.Output != nil {
			n.Output = ds.Output
			//workflowcheck:ignore encoding/json sorts map keys; the checker reaches the GC's start through reflect
			wn.OutputSchema, _ = json.Marshal(ds.Output.JSONSchema())
		}
	}
}

// waitOutput is a wait's output type from its document alone.
func waitOutput(ds *schema.WaitSpec) *schema.Type {
	switch {
	case !ds.Event.Set():
		return schema.StringType
	case ds.Output != nil:
		return ds.Output
	}
	return schema.AnyType
}
