package temporal

import (
	commonpb "go.temporal.io/api/common/v1"

	"github.com/flowrun/flow/internal/secret"
)

// plainPayloads are the payloads a process without temporal.key sends to
// the server, which keeps them in its history in clear: every string that
// has the shape of a secret (secret.Scan: a token of a well-known
// provider, a URL's password, a high-entropy KEY=value) is masked, as the
// run directory masks the secrets flow knows (docs/temporal.md). The
// masking is a function of the payload alone, so a replay encodes the same.
func plainPayloads(in []*commonpb.Payload) []*commonpb.Payload {
	out := make([]*commonpb.Payload, len(in))
	for i, p := range in {
		masked := secret.MaskShapes(p.GetData())
		if len(masked) == len(p.GetData()) && string(masked) == string(p.GetData()) {
			out[i] = p
			continue
		}
		out[i] = &commonpb.Payload{Metadata: p.GetMetadata(), Data: masked}
	}
	return out
}
