package labtest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/skbdev/skb/lab"
)

// fakeTB records Skip and Fatal instead of acting on the real test.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skip(args ...any) {
	f.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls fn with a fake in a goroutine of its own, as Goexit needs.
func run(t *testing.T, fn func(tb testing.TB)) *fakeTB {
	f := &fakeTB{TB: t}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fn(f)
	}()
	wg.Wait()
	return f
}

func TestRequireToolSkipsOrFails(t *testing.T) {
	const prog = "skb-no-such-program"
	t.Setenv("CI", "")
	f := run(t, func(tb testing.TB) { RequireTool(tb, prog, "skb-pkg") })
	if f.failed != "" || !strings.Contains(f.skipped, prog) || !strings.Contains(f.skipped, "Debian package skb-pkg") {
		t.Errorf("without CI: skipped %q, failed %q", f.skipped, f.failed)
	}
	t.Setenv("CI", "true")
	f = run(t, func(tb testing.TB) { RequireTool(tb, prog, "skb-pkg") })
	if f.skipped != "" || !strings.Contains(f.failed, prog) || !strings.Contains(f.failed, "CI=true") {
		t.Errorf("with CI=true: skipped %q, failed %q", f.skipped, f.failed)
	}
	f = run(t, func(tb testing.TB) { RequireTool(tb, "sh", "dash") })
	if f.skipped != "" || f.failed != "" {
		t.Errorf("sh is there: skipped %q, failed %q", f.skipped, f.failed)
	}
}

func TestRequireRoot(t *testing.T) {
	t.Setenv("CI", "")
	f := run(t, RequireRoot)
	err := lab.Privileged()
	switch {
	case err == nil && (f.skipped != "" || f.failed != ""):
		t.Errorf("privileged, but skipped %q, failed %q", f.skipped, f.failed)
	case err != nil && !strings.Contains(f.skipped, "need root"):
		t.Errorf("unprivileged (%v), but skipped %q, failed %q", err, f.skipped, f.failed)
	}
}

func TestNew(t *testing.T) {
	var name string
	t.Run("lab", func(t *testing.T) {
		l := New(t, lab.Options{})
		name = l.Name
		if err := l.A.Do(func() error { return nil }); err != nil {
			t.Fatal(err)
		}
	})
	if name == "" {
		return // skipped
	}
	if _, err := lab.Open(name); err == nil {
		t.Errorf("lab %s still there after its test ended", name)
	}
}
