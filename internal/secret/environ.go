package secret

import (
	"net/url"
	"slices"
	"strings"
)

// secretWords are the words of a variable's name that say it holds a
// secret, as in OPENAI_API_KEY, ANTHROPIC_AUTH_TOKEN,
// AWS_SECRET_ACCESS_KEY or PGPASSWORD's PG_PASSWORD.
var secretWords = []string{"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIALS"}

// notValueWords end a name that holds where a secret is, not the secret:
// drivers.openai.api_key_env (FLOW_DRIVERS_OPENAI_API_KEY_ENV) names a
// variable; a key file or an id is not the key.
var notValueWords = []string{"ENV", "NAME", "FILE", "PATH", "DIR", "URL", "ID", "HELPER"}

// IsSecretName reports whether an environment variable's (or a
// configuration key's) name says that its value is a secret.
func IsSecretName(name string) bool {
	words := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool { return r == '_' || r == '.' || r == '-' })
	if len(words) == 0 || slices.Contains(notValueWords, words[len(words)-1]) {
		return false
	}
	for _, w := range words {
		if slices.Contains(secretWords, w) {
			return true
		}
	}
	return false
}

// Named is a value that may be a secret, with the name of the variable
// or configuration key that holds it: a warning about a value names the
// variable, never the value.
type Named struct{ Name, Value string }

// NamedFromEnviron returns the variables in environ ("NAME=value" entries,
// as os.Environ gives them) whose names say they hold a secret and whose
// values are not empty, safe to redact or not (Unsafe).
func NamedFromEnviron(environ []string) []Named {
	var out []Named
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok && value != "" && IsSecretName(name) {
			out = append(out, Named{Name: name, Value: value})
		}
		if ok && strings.HasPrefix(name, "OTEL_EXPORTER_OTLP_") && strings.HasSuffix(name, "HEADERS") {
			out = append(out, headerValues(name, value)...)
		}
	}
	return out
}

// FromEnviron returns the values of the variables in environ whose names
// say they hold a secret, leaving out those Unsafe refuses.
func FromEnviron(environ []string) []string {
	var out []string
	for _, n := range NamedFromEnviron(environ) {
		if Unsafe(n.Value) == "" {
			out = append(out, n.Value)
		}
	}
	return out
}

// headerValues are the values of the headers an OTLP exporter sends
// (OTEL_EXPORTER_OTLP_HEADERS="x-api-key=…,authorization=Bearer …", each
// value percent-encoded): an API key or a token, whatever the header's
// name (docs/tracing.md).
func headerValues(name, value string) []Named {
	var out []Named
	for _, pair := range strings.Split(value, ",") {
		k, v, ok := strings.Cut(pair, "=")
		v = strings.TrimSpace(v)
		if !ok || v == "" {
			continue
		}
		if dec, err := url.PathUnescape(v); err == nil {
			v = dec
		}
		n := name + " (" + strings.TrimSpace(k) + ")"
		out = append(out, Named{Name: n, Value: v})
		// "Bearer abc…": the credential alone is as secret as the whole.
		if _, cred, ok := strings.Cut(v, " "); ok && strings.TrimSpace(cred) != "" {
			out = append(out, Named{Name: n, Value: strings.TrimSpace(cred)})
		}
	}
	return out
}
