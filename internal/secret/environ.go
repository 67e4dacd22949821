package secret

import (
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

// FromEnviron returns the values of the variables in environ ("NAME=value"
// entries, as os.Environ gives them) whose names say they hold a secret.
func FromEnviron(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok && IsSecretName(name) && len(value) >= MinLen {
			out = append(out, value)
		}
	}
	return out
}
