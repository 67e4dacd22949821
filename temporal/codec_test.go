package temporal

import (
	"encoding/base64"
	"strings"
	"testing"

	"go.temporal.io/sdk/converter"
)

func TestCodecSealsPayloadsAndRefusesAnotherKey(t *testing.T) {
	k1, err := ParseKey(base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := ParseKey(base64.StdEncoding.EncodeToString([]byte("fedcba9876543210fedcba9876543210")))
	p, err := DataConverter(k1).ToPayload(map[string]string{"prompt": "the secret words"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.String(), "secret words") || string(p.Metadata[converter.MetadataEncoding]) != encodingEncrypted {
		t.Fatalf("the payload is not sealed: %v", p)
	}
	var back map[string]string
	if err := DataConverter(k1).FromPayload(p, &back); err != nil || back["prompt"] != "the secret words" {
		t.Fatalf("the key's own payload: %v, %v", back, err)
	}
	for _, k := range []Key{k2, {}} {
		if err := DataConverter(k).FromPayload(p, &back); err == nil || !strings.Contains(err.Error(), k1.ID()) {
			t.Errorf("a payload of key %s read with key %q: %v, want an error naming the key", k1.ID(), k.ID(), err)
		}
	}
	// Payloads written without a key (histories of earlier releases) read.
	clear, _ := DataConverter(Key{}).ToPayload("plain")
	var s string
	if err := DataConverter(k1).FromPayload(clear, &s); err != nil || s != "plain" {
		t.Errorf("a clear payload read with a key: %q, %v", s, err)
	}
	if _, err := ParseKey("short"); err == nil {
		t.Error("a key that is not 32 bytes of base64 was taken")
	}
}
