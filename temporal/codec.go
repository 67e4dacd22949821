package temporal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// The metadata of an encrypted payload: its encoding, and which key sealed
// it (a short hash of the key, never the key).
const (
	encodingEncrypted = "binary/flow-aes-gcm"
	metaKeyID         = "flow-key-id"
)

// Key is the key that encrypts a run's payloads on Temporal
// (docs/temporal.md, What Temporal keeps): 32 bytes, given base64-encoded
// in temporal.key (FLOW_TEMPORAL_KEY). The zero Key encrypts nothing.
type Key struct {
	aead cipher.AEAD
	id   string
}

// ParseKey reads a key as configured; "" is no key.
func ParseKey(s string) (Key, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Key{}, nil
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw) != 32 {
		return Key{}, fmt.Errorf("temporal.key must be 32 random bytes in base64 (e.g. `openssl rand -base64 32`), not %d characters", len(s))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return Key{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Key{}, err
	}
	sum := sha256.Sum256(raw)
	return Key{aead: aead, id: hex.EncodeToString(sum[:6])}, nil
}

// Set says whether the key encrypts.
func (k Key) Set() bool { return k.aead != nil }

// ID names the key without revealing it.
func (k Key) ID() string { return k.id }

// DataConverter is the data converter of flow's clients and workers: the
// SDK's default JSON, each payload sealed with k (AES-GCM, a fresh nonce
// each) when k is set. A payload sealed with another key, or met without
// one, is an error naming both keys' ids: a client and its workers must
// share the key. Payloads written without a key decode as they are.
func DataConverter(k Key) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codec{k})
}

// FailureConverter keeps failures' messages and stack traces in the
// encoded attributes, so that history holds no flow text in clear there
// either.
func FailureConverter(k Key) converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter: DataConverter(k), EncodeCommonAttributes: k.Set()})
}

// codec is the PayloadCodec of a key.
type codec struct{ k Key }

var _ converter.PayloadCodec = codec{}

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
		nonce := make([]byte, c.k.aead.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return nil, err
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encodingEncrypted), metaKeyID: []byte(c.k.id)},
			Data:     c.k.aead.Seal(nonce, nonce, plain, nil),
		}
	}
	return out, nil
}

func (c codec) Decode(in []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(in))
	for i, p := range in {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != encodingEncrypted {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[metaKeyID])
		if !c.k.Set() {
			return nil, fmt.Errorf("a payload is encrypted with key %s and this process has no temporal.key (FLOW_TEMPORAL_KEY)", id)
		}
		if id != c.k.id {
			return nil, fmt.Errorf("a payload is encrypted with key %s and this process has key %s: clients and workers must share temporal.key", id, c.k.id)
		}
		n := c.k.aead.NonceSize()
		if len(p.Data) < n {
			return nil, fmt.Errorf("an encrypted payload of key %s is cut short", id)
		}
		plain, err := c.k.aead.Open(nil, p.Data[:n], p.Data[n:], nil)
		if err != nil {
			return nil, fmt.Errorf("an encrypted payload of key %s does not open: %w", id, err)
		}
		var q commonpb.Payload
		if err := q.Unmarshal(plain); err != nil {
			return nil, fmt.Errorf("an encrypted payload of key %s holds no payload: %w", id, err)
		}
		out[i] = &q
	}
	return out, nil
}
