package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// TagEnv is the environment variable that carries the process tags.
// A flow started by a step of another flow keeps the outer tag and adds its
// own, separated by a space, so ending the outer run reaches nested runs too.
const TagEnv = "FLOW_PROC_TAG"

// seq numbers the commands of this process; with the pid it makes every tag
// unique on the machine even when two flow processes share a run id.
var seq atomic.Uint64

func newTag(runID string) string {
	return cleanRunID(runID) + "/" + strconv.Itoa(os.Getpid()) + "." + strconv.FormatUint(seq.Add(1), 10)
}

// cleanRunID keeps a run id usable as a tag prefix: no separators of tags,
// no slash that would make one run's id a prefix of another's tags.
func cleanRunID(runID string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\n', '\r', 0, '/':
			return '_'
		}
		return r
	}, runID)
}

// withTag returns env (os.Environ() when nil) with tag added to TagEnv,
// without touching the caller's slice.
func withTag(env []string, tag string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	value := tag
	for _, kv := range env {
		if old, found := strings.CutPrefix(kv, TagEnv+"="); found {
			// os/exec keeps the last of duplicate entries; so do we.
			value = strings.TrimSpace(old + " " + tag)
			continue
		}
		out = append(out, kv)
	}
	return append(out, TagEnv+"="+value)
}

// A matcher says whether one tag (a token of TagEnv's value) is wanted.
type matcher func(tag []byte) bool

func exactTag(tag string) matcher {
	return func(t []byte) bool { return string(t) == tag }
}

func runTags(runID string) matcher {
	prefix := cleanRunID(runID) + "/"
	return func(t []byte) bool { return bytes.HasPrefix(t, []byte(prefix)) }
}

var tagKey = []byte(TagEnv + "=")

// tagged reports whether the NUL-separated environment env carries a tag
// that match wants.
func tagged(env []byte, match matcher) bool {
	for len(env) > 0 {
		var kv []byte
		kv, env, _ = bytes.Cut(env, []byte{0})
		value, found := bytes.CutPrefix(kv, tagKey)
		if !found {
			continue
		}
		for _, t := range bytes.Fields(value) {
			if match(t) {
				return true
			}
		}
	}
	return false
}
