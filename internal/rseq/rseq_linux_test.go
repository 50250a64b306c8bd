package rseq

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	// Linked in for its cgo resolver: with cgo on, the test binary is then
	// linked against glibc, as the skb tool is, and glibc registers rseq.
	_ "net"
)

// childEnv names the mode of a test binary started by a test: it then runs
// TestChild alone, and TestMain leaves Reexec to it.
const childEnv = "RSEQ_TEST_CHILD"

// before is what TestMain found: whether rseq was registered before
// Reexec, whether this image is the one Reexec started, GLIBC_TUNABLES as
// the caller of `go test` set it (orig, origSet), and as Reexec left it.
var before struct {
	registered, reexecuted bool
	orig                   string
	origSet                bool
	tunables               string
	tunablesSet            bool
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "" {
		if v, ok := os.LookupEnv(Saved); ok {
			before.reexecuted = true
			if rest, ok := strings.CutPrefix(v, "+"); ok {
				before.orig, before.origSet = rest, true
			}
		} else {
			before.orig, before.origSet = os.LookupEnv("GLIBC_TUNABLES")
		}
		before.registered, _ = Registered()
		if err := Reexec(); err != nil {
			fmt.Fprintln(os.Stderr, "rseq: reexec:", err)
			os.Exit(2)
		}
		before.tunables, before.tunablesSet = os.LookupEnv("GLIBC_TUNABLES")
	}
	os.Exit(m.Run())
}

// glibcRegisters reports whether a fresh image of the test binary, without
// GLIBC_TUNABLES, starts with rseq registered, and
// skips the test when not (a static binary, an older glibc, no rseq(2)).
func glibcRegisters(t *testing.T) {
	t.Helper()
	if out := child(t, "probe", nil); !strings.HasPrefix(out, "registered=true ") {
		t.Skipf("a fresh image has no rseq registered (%s): built without cgo, or glibc older than 2.35", out)
	}
}

// child runs TestChild in a new image of the test binary with mode, the
// test's environment without GLIBC_TUNABLES, and extra, and returns its
// one line of output.
func child(t *testing.T, mode string, extra []string) string {
	t.Helper()
	return childVia(t, nil, mode, append(withoutTunables(), extra...))
}

// withoutTunables returns the test's environment without GLIBC_TUNABLES.
func withoutTunables() []string {
	return slices.DeleteFunc(slices.Clone(os.Environ()), func(kv string) bool {
		return strings.HasPrefix(kv, "GLIBC_TUNABLES=")
	})
}

// childVia runs TestChild in a new image of the test binary with mode
// and the environment env (duplicates kept: os.StartProcess passes it as
// given, where os/exec would drop all but the last), through the program
// in via (its argv before the binary's path, as `ld.so PROGRAM` runs it),
// and returns the child's one line of output.
func childVia(t *testing.T, via []string, mode string, env []string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append(slices.Clone(via), exe, "-test.run=^TestChild$", "-test.count=1")
	// The race detector's exit sleep (1 s) would slow every child.
	env = append(slices.Clone(env), childEnv+"="+mode, "GORACE=atexit_sleep_ms=0")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := os.StartProcess(argv[0], argv, &os.ProcAttr{Env: env, Files: []*os.File{nil, w, w}})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	st, err := p.Wait()
	if err != nil || !st.Success() {
		t.Fatalf("child %s: %v %v\n%s", mode, st, err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "registered=") {
			return l
		}
	}
	t.Fatalf("child %s printed no result:\n%s", mode, out)
	return ""
}

// TestChild is the body of a child image: it probes, after Reexec when
// asked to, and prints what it found.
func TestChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("runs only as a child of another test")
	}
	if mode == "reexec" {
		if err := Reexec(); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := Registered()
	if err != nil {
		t.Fatal(err)
	}
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	v, set := os.LookupEnv("GLIBC_TUNABLES")
	fmt.Printf("registered=%v tunables=%q set=%v comm=%s\n", reg, v, set, bytes.TrimSpace(comm))
}

// TestReexec checks the whole round on the test binary itself: TestMain's
// Reexec started a new image without the registration, which put the
// environment back as it was.
func TestReexec(t *testing.T) {
	glibcRegisters(t)
	if before.origSet && setsTunable(before.orig) {
		t.Skipf("GLIBC_TUNABLES sets %s already: %q", tunableName, before.orig)
	}
	if !before.reexecuted {
		t.Fatalf("TestMain found rseq registered=%v and did not run again", before.registered)
	}
	if before.registered {
		t.Errorf("the new image still has rseq registered")
	}
	if reg, err := Registered(); err != nil || reg {
		t.Errorf("Registered after Reexec = %v, %v; want false", reg, err)
	}
	if _, ok := os.LookupEnv(Saved); ok {
		t.Errorf("%s is still set", Saved)
	}
	if before.tunables != before.orig || before.tunablesSet != before.origSet {
		t.Errorf("GLIBC_TUNABLES = %q (set %v) after Reexec: want the caller's own, %q (set %v)",
			before.tunables, before.tunablesSet, before.orig, before.origSet)
	}
}

// TestChildrenKeepGlibcDefault checks that a program the new image starts
// gets the caller's environment, and so glibc's registration.
func TestChildrenKeepGlibcDefault(t *testing.T) {
	glibcRegisters(t)
	if before.origSet && setsTunable(before.orig) {
		t.Skipf("GLIBC_TUNABLES sets %s already: %q", tunableName, before.orig)
	}
	got := childVia(t, nil, "probe", os.Environ())
	want := fmt.Sprintf("registered=true tunables=%q set=%v comm=%s", before.orig, before.origSet, comm(t))
	if got != want {
		t.Errorf("child = %s; want %s", got, want)
	}
}

// comm is the test binary's process name, as a child of it has it.
func comm(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(exe)
	return name[:min(len(name), 15)] // TASK_COMM_LEN - 1
}

// TestReexecInChild checks Reexec in a fresh image, with GLIBC_TUNABLES
// unset, empty and holding another tunable: the registration is off, the
// variable as it was, and the process keeps its name.
func TestReexecInChild(t *testing.T) {
	glibcRegisters(t)
	c := comm(t)
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, `registered=false tunables="" set=false comm=` + c},
		{[]string{"GLIBC_TUNABLES="}, `registered=false tunables="" set=true comm=` + c},
		{[]string{"GLIBC_TUNABLES=glibc.malloc.check=0"}, `registered=false tunables="glibc.malloc.check=0" set=true comm=` + c},
		{[]string{Saved + "=bogus"}, `registered=false tunables="" set=false comm=` + c},
		// A well-formed marker Reexec did not set is not obeyed either.
		{[]string{Saved + "=-", "GLIBC_TUNABLES=glibc.malloc.check=0"}, `registered=false tunables="glibc.malloc.check=0" set=true comm=` + c},
	} {
		if got := child(t, "reexec", tc.env); got != tc.want {
			t.Errorf("env %q: child = %s; want %s", tc.env, got, tc.want)
		}
	}
}

// TestReexecLeftAlone checks the cases where Reexec must not start again:
// the user's own setting of the tunable, GLIBC_TUNABLES given twice (which
// of the two glibc reads is its own affair), and a program run through the
// dynamic loader, where the process's file is the loader.
func TestReexecLeftAlone(t *testing.T) {
	glibcRegisters(t)
	c := comm(t)
	got := child(t, "reexec", []string{"GLIBC_TUNABLES=glibc.pthread.rseq=1"})
	if want := `registered=true tunables="glibc.pthread.rseq=1" set=true comm=` + c; got != want {
		t.Errorf("user's tunable: child = %s; want %s", got, want)
	}
	got = child(t, "reexec", []string{"GLIBC_TUNABLES=glibc.malloc.check=0", "GLIBC_TUNABLES=glibc.malloc.check=0"})
	if !strings.HasPrefix(got, "registered=true ") {
		t.Errorf("GLIBC_TUNABLES twice: child = %s; want registered (not started again)", got)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var loader string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				t.Fatal(err)
			}
			loader = string(bytes.TrimRight(b, "\x00"))
		}
	}
	if loader == "" {
		t.Fatalf("%s has rseq registered but no PT_INTERP", exe)
	}
	if got := childVia(t, []string{loader}, "reexec", withoutTunables()); !strings.HasPrefix(got, "registered=true ") {
		t.Errorf("run as %s PROGRAM: child = %s; want registered (not started again)", loader, got)
	}
}

func TestSetEnv(t *testing.T) {
	env := []string{"A=1", "GLIBC_TUNABLES=x", "B=2", "GLIBC_TUNABLES=y"}
	got := setEnv(env, "GLIBC_TUNABLES", "z")
	want := []string{"A=1", "B=2", "GLIBC_TUNABLES=z"}
	if !slices.Equal(got, want) {
		t.Errorf("setEnv = %q; want %q", got, want)
	}
}

func TestCountEnv(t *testing.T) {
	env := []string{"A=1", "GLIBC_TUNABLES=x", "GLIBC_TUNABLES_X=1", "GLIBC_TUNABLES=y"}
	if n := countEnv(env, "GLIBC_TUNABLES"); n != 2 {
		t.Errorf("countEnv = %d; want 2", n)
	}
}

func TestSetsTunable(t *testing.T) {
	for v, want := range map[string]bool{
		"":                     false,
		"glibc.pthread.rseq=0": true,
		"glibc.malloc.check=0:glibc.pthread.rseq=1": true,
		"glibc.pthread.rseq":                        false,
		"x.glibc.pthread.rseq=0":                    false,
		"glibc.pthread.rseq_x=0":                    false,
	} {
		if got := setsTunable(v); got != want {
			t.Errorf("setsTunable(%q) = %v; want %v", v, got, want)
		}
	}
}
