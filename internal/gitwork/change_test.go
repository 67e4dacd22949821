package gitwork

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestChangeAppliesInAnotherRepository: what commits changed (a file
// changed, one added, a binary one, one removed) is made again in a
// repository that never held them, all of it; a change that no longer
// applies changes nothing. Two repositories of the same files have the
// same tree, whatever their commits.
func TestChangeAppliesInAnotherRepository(t *testing.T) {
	ctx := context.Background()
	src := newRepo(t)
	dst := newRepo(t)
	r, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := r.Head(ctx)
	write(t, src, "f", "a\nB\nc\n")
	write(t, src, "new.md", "new\n")
	if err := os.WriteFile(filepath.Join(src, "bin"), []byte{0, 1, 2, 255}, 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, src, "git", "add", "-A")
	sh(t, src, "git", "-c", "user.name=u", "-c", "user.email=u@example.invalid", "commit", "-q", "-m", "change")
	head, _ := r.Head(ctx)
	patch, err := Change(ctx, src, base, head)
	if err != nil || patch == "" {
		t.Fatalf("Change: %q %v", patch, err)
	}
	d, err := Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	t1, _ := r.Tree(ctx, base)
	t2, _ := d.Tree(ctx, "HEAD")
	if t1 == "" || t1 != t2 {
		t.Errorf("the same files have trees %q and %q", t1, t2)
	}
	if err := Apply(ctx, dst, patch); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "f")); string(b) != "a\nB\nc\n" {
		t.Errorf("f: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "bin")); string(b) != "\x00\x01\x02\xff" {
		t.Errorf("bin: %q", b)
	}
	// Applied again, it no longer applies: nothing changes.
	write(t, dst, "f", "a\nB\nc\n")
	os.Remove(filepath.Join(dst, "new.md"))
	if err := Apply(ctx, dst, patch); err == nil {
		t.Fatal("a change applied twice")
	}
	if _, err := os.Stat(filepath.Join(dst, "new.md")); err == nil {
		t.Error("a change that did not apply made some of its files")
	}
}
