package codex

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/steps/transcript"
	"github.com/flowrun/flow/steps/usage"
)

// threadUsage is a thread's usage as Codex reports it in turn.completed:
// the sum over every request of the thread so far, a resumed thread's
// earlier turns included.
type threadUsage struct {
	Input      *int64 `json:"input_tokens"`
	Cached     *int64 `json:"cached_input_tokens"`
	CacheWrite *int64 `json:"cache_write_input_tokens"`
	Output     *int64 `json:"output_tokens"`
}

// minus is what u adds to before, field by field.
func (u threadUsage) minus(before threadUsage) threadUsage {
	sub := func(a, b *int64) *int64 {
		if a == nil || b == nil {
			return a
		}
		return ptr(max(*a-*b, 0))
	}
	return threadUsage{Input: sub(u.Input, before.Input), Cached: sub(u.Cached, before.Cached),
		CacheWrite: sub(u.CacheWrite, before.CacheWrite), Output: sub(u.Output, before.Output)}
}

// plus is u and what a turn spent (flow's usage: input without the
// cached tokens), as Codex would count the thread after it.
func (u threadUsage) plus(spent record.Usage) threadUsage {
	add := func(a *int64, b ...*int64) *int64 {
		var n int64
		if a != nil {
			n = *a
		}
		for _, p := range b {
			if p != nil {
				n += *p
			}
		}
		return &n
	}
	return threadUsage{Input: add(u.Input, spent.Input, spent.CacheRead, spent.CacheWrite), Cached: add(u.Cached, spent.CacheRead),
		CacheWrite: add(u.CacheWrite, spent.CacheWrite), Output: add(u.Output, spent.Output)}
}

// threadsFile is where the driver keeps, in the scope's home, each
// thread's usage as Codex last reported it, so that the next turn of the
// thread records only what it adds.
func threadsFile(home, agent string) string {
	return filepath.Join(home, transcript.FileName(agent)+".codex-usage.json")
}

// threadBefore is thread's usage as the last turn of it recorded, zero for
// a new thread or one whose figures are lost (then the turn records the
// thread's whole usage, which is more than it spent, never less).
func threadBefore(home, agent, thread string) threadUsage {
	if thread == "" {
		return threadUsage{}
	}
	b, err := os.ReadFile(threadsFile(home, agent))
	if err != nil {
		return threadUsage{}
	}
	var all map[string]threadUsage
	_ = json.Unmarshal(b, &all) // a damaged file is a lost one
	u := all[thread]
	for _, p := range []*int64{u.Input, u.Cached, u.CacheWrite, u.Output} {
		if p != nil && (*p < 0 || *p > usage.MaxFigure) {
			return threadUsage{} // a figure no provider bills is a lost one too: more, never less
		}
	}
	return u
}

// saveThread records thread's usage after this turn.
func saveThread(home, agent, thread string, u threadUsage) error {
	if thread == "" {
		return nil
	}
	path := threadsFile(home, agent)
	all := map[string]threadUsage{}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &all)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	all[thread] = u
	b, err := json.Marshal(all)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
