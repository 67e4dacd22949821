package gitwork

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowrun/flow/internal/proc"
)

// ContentTree is the identity of dir's content: the git tree of every
// file in it, untracked ones included and ignored ones and .flow left out,
// written through an index of its own so that the repository's own index
// is untouched. It is "" outside a git repository (a visit key's part for
// a run node that says reuse: true; docs/reuse-and-tests.md).
func ContentTree(ctx context.Context, dir string) string {
	if checkGit(ctx) != nil {
		return ""
	}
	tmp, err := os.MkdirTemp("", "flow-tree-")
	if err != nil {
		return ""
	}
	defer os.RemoveAll(tmp)
	git := func(args ...string) (string, error) {
		var out bytes.Buffer
		p := proc.Command(ctx, "flow-git", gitPath, append([]string{"-C", dir}, args...)...)
		p.Cmd.Env = append(environ(nil), "GIT_INDEX_FILE="+filepath.Join(tmp, "index"))
		p.Cmd.Stdout = &out
		err := p.Run()
		return strings.TrimSpace(out.String()), err
	}
	if _, err := git("add", "-A", "--", ".", ":(exclude).flow"); err != nil {
		return ""
	}
	if tree, err := git("write-tree"); err == nil && tree != "" {
		return "git-tree " + tree
	}
	return ""
}
