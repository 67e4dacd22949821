package temporal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// The metadata of an encrypted payload: its encoding, which key sealed it
// (a short hash of the key, never the key), and the workflow it is sealed
// for (its id, which the seal authenticates: docs/temporal.md, What
// Temporal keeps).
const (
	encodingEncrypted = "binary/flow-aes-gcm"
	metaKeyID         = "flow-key-id"
	metaBound         = "flow-workflow"
)

// Key is the key ring that encrypts a run's payloads on Temporal
// (docs/temporal.md, What Temporal keeps): the key that seals, given
// base64-encoded in temporal.key (FLOW_TEMPORAL_KEY), and the older keys
// that still open what they sealed (temporal.old_keys). Each key is 32
// bytes. The zero Key encrypts nothing and opens nothing sealed.
type Key struct {
	seal cipher.AEAD
	id   string
	// open are the keys that open payloads, by id: seal's and the old
	// (a pointer keeps Key comparable, as the SDK compares converters).
	open *openKeys
}

type openKeys map[string]cipher.AEAD

// opener is the key of id that opens, or nil.
func (k Key) opener(id string) cipher.AEAD {
	if k.open == nil {
		return nil
	}
	return (*k.open)[id]
}

// ParseKey reads a key as configured; "" is no key.
func ParseKey(s string) (Key, error) { return ParseKeys(s, nil) }

// ParseKeys reads the key that seals and the old keys that still open
// (each as ParseKey reads one; empty ones are skipped). Old keys need a
// key: a process that opens sealed payloads seals what it writes.
func ParseKeys(key string, old []string) (Key, error) {
	var k Key
	if strings.TrimSpace(key) == "" {
		if slices.ContainsFunc(old, func(s string) bool { return strings.TrimSpace(s) != "" }) {
			return Key{}, fmt.Errorf("temporal.old_keys is set without temporal.key: set the key that seals (docs/temporal.md, Rotating the key)")
		}
		return k, nil
	}
	aead, id, err := parseOne("temporal.key", key)
	if err != nil {
		return Key{}, err
	}
	k.seal, k.id, k.open = aead, id, &openKeys{id: aead}
	for _, s := range old {
		if strings.TrimSpace(s) == "" {
			continue
		}
		aead, id, err := parseOne("temporal.old_keys", s)
		if err != nil {
			return Key{}, err
		}
		(*k.open)[id] = aead
	}
	return k, nil
}

func parseOne(what, s string) (cipher.AEAD, string, error) {
	s = strings.TrimSpace(s)
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw) != 32 {
		return nil, "", fmt.Errorf("%s must be 32 random bytes in base64 (e.g. `openssl rand -base64 32`), not %d characters", what, len(s))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, "", err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(raw)
	return aead, hex.EncodeToString(sum[:6]), nil
}

// Set says whether the key encrypts.
func (k Key) Set() bool { return k.seal != nil }

// ID names the key that seals without revealing it.
func (k Key) ID() string { return k.id }

// ids names every key that opens, the sealing one first.
func (k Key) ids() string {
	if !k.Set() {
		return "no temporal.key"
	}
	var old []string
	for id := range *k.open {
		if id != k.id {
			old = append(old, id)
		}
	}
	slices.Sort(old)
	if len(old) == 0 {
		return "key " + k.id
	}
	return "key " + k.id + " and old keys " + strings.Join(old, ", ")
}

// codec is the PayloadCodec of a key ring. bound is the workflow the
// payloads are sealed for and opened in: the id the SDK's serialization
// context gives, empty where it gives none.
type codec struct {
	k     Key
	bound string
	known bool // the SDK gave a workflow id
}

var (
	_ converter.PayloadCodec                         = codec{}
	_ converter.PayloadCodecWithSerializationContext = codec{}
)

// WithSerializationContext binds the codec to the workflow whose payloads
// it seals and opens.
func (c codec) WithSerializationContext(sc converter.SerializationContext) converter.PayloadCodec {
	if id := workflowOfContext(sc); id != "" {
		c.bound, c.known = id, true
	}
	return c
}

// workflowOfContext is the workflow id of a serialization context: a
// workflow's payloads (its input and result, signals, queries, memo) and
// its activities' (their input, result, heartbeats, failures).
func workflowOfContext(sc converter.SerializationContext) string {
	switch sc := sc.(type) {
	case converter.WorkflowSerializationContext:
		return sc.WorkflowID
	case converter.ActivitySerializationContext:
		return sc.WorkflowID
	}
	return ""
}

// associated is what a payload's seal authenticates besides its content:
// the workflow it is sealed for, or nothing for one sealed unbound.
func associated(bound string) []byte {
	if bound == "" {
		return nil
	}
	return []byte("flow/workflow\x00" + bound)
}

func (c codec) Encode(in []*commonpb.Payload) ([]*commonpb.Payload, error) {
	if !c.k.Set() {
		return plainPayloads(in), nil
	}
	out := make([]*commonpb.Payload, len(in))
	for i, p := range in {
		plain, err := p.Marshal()
		if err != nil {
			return nil, err
		}
		nonce := make([]byte, c.k.seal.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return nil, err
		}
		meta := map[string][]byte{converter.MetadataEncoding: []byte(encodingEncrypted), metaKeyID: []byte(c.k.id)}
		if c.bound != "" {
			meta[metaBound] = []byte(c.bound)
		}
		out[i] = &commonpb.Payload{Metadata: meta, Data: c.k.seal.Seal(nonce, nonce, plain, associated(c.bound))}
	}
	return out, nil
}

func (c codec) Decode(in []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(in))
	for i, p := range in {
		q, err := c.open(p)
		if err != nil {
			return nil, err
		}
		out[i] = q
	}
	return out, nil
}

// open opens one payload, or says why it will not:
//   - with a key, a payload that is not sealed is refused (anyone who
//     can write to the namespace could have written it);
//   - a payload sealed with a key this process lacks is unreadable here
//     (PayloadError.Unreadable): a worker then fails the task, which
//     another worker with the key takes;
//   - a payload sealed for another workflow, or altered, is refused.
func (c codec) open(p *commonpb.Payload) (*commonpb.Payload, error) {
	md := p.GetMetadata()
	if string(md[converter.MetadataEncoding]) != encodingEncrypted {
		if c.k.Set() {
			return nil, refused("a payload of encoding %q is not sealed with temporal.key, which this process has (%s): "+
				"it was not written by a flow client or worker that shares the key", md[converter.MetadataEncoding], c.k.ids())
		}
		return p, nil
	}
	id, bound := string(md[metaKeyID]), string(md[metaBound])
	aead := c.k.opener(id)
	if aead == nil {
		return nil, &PayloadError{Unreadable: true, Msg: fmt.Sprintf("a payload is sealed with key %s, "+unreadableMark+" (it has %s): "+
			"give it that key, as temporal.key or in temporal.old_keys (docs/temporal.md)", id, c.k.ids())}
	}
	if c.known && !opensIn(bound, c.bound) {
		what := "sealed for no workflow"
		if bound != "" {
			what = "sealed for workflow " + bound
		}
		return nil, refused("a payload %s is met in workflow %s: payloads do not move between runs", what, c.bound)
	}
	n := aead.NonceSize()
	if len(p.Data) < n {
		return nil, refused("a payload sealed with key %s is cut short", id)
	}
	plain, err := aead.Open(nil, p.Data[:n], p.Data[n:], associated(bound))
	if err != nil {
		return nil, refused("a payload sealed with key %s for workflow %q does not open: it was altered", id, bound)
	}
	var q commonpb.Payload
	if err := q.Unmarshal(plain); err != nil {
		return nil, refused("a payload sealed with key %s holds no payload: %v", id, err)
	}
	return &q, nil
}

// opensIn says whether a payload sealed for workflow bound opens in
// workflow id: the same workflow, or a run a Temporal Schedule fired,
// whose id is the schedule action's (what the schedule's input is sealed
// for, once for every fire) followed by "-" and the fire's time.
func opensIn(bound, id string) bool {
	if bound == "" {
		return false
	}
	if bound == id {
		return true
	}
	rest, ok := strings.CutPrefix(id, bound+"-")
	if !ok {
		return false
	}
	_, err := time.Parse(time.RFC3339, rest)
	return err == nil
}
