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

// before is what TestMain found: whether the thread had rseq registered
// before Reexec, and whether this image is the one Reexec started.
var before struct {
	registered, reexecuted bool
	tunables               string
	tunablesSet            bool
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "" {
		_, before.reexecuted = os.LookupEnv(Saved)
		before.registered, _ = Registered()
		if err := Reexec(); err != nil {
			fmt.Fprintln(os.Stderr, "rseq: reexec:", err)
			os.Exit(2)
		}
		before.tunables, before.tunablesSet = os.LookupEnv("GLIBC_TUNABLES")
	}
	os.Exit(m.Run())
}

// glibcRegisters reports whether a fresh image of the test binary, with
// GLIBC_TUNABLES as the caller has it, starts with rseq registered, and
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
	return childVia(t, nil, mode, extra)
}

// childVia is child with the test binary run by the program in via (its
// argv before the binary's path), as `ld.so PROGRAM` runs it. It starts the
// process with os.StartProcess, which passes the environment as given,
// duplicates included (os/exec would drop all but the last).
func childVia(t *testing.T, via []string, mode string, extra []string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append(slices.Clone(via), exe, "-test.run=^TestChild$", "-test.count=1")
	env := append(setEnv(slices.Clone(os.Environ()), childEnv, mode), extra...)
	env = slices.DeleteFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "GLIBC_TUNABLES=") && !slices.Contains(extra, kv)
	})
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
	fmt.Printf("registered=%v tunables=%q comm=%s\n", reg, os.Getenv("GLIBC_TUNABLES"), bytes.TrimSpace(comm))
}

// TestReexec checks the whole round on the test binary itself: TestMain's
// Reexec started a new image without the registration, which put the
// environment back as it was.
func TestReexec(t *testing.T) {
	glibcRegisters(t)
	if v, ok := os.LookupEnv("GLIBC_TUNABLES"); ok && strings.Contains(v, tunableName) {
		t.Skipf("GLIBC_TUNABLES sets %s already: %q", tunableName, v)
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
	if strings.Contains(before.tunables, Tunable) {
		t.Errorf("GLIBC_TUNABLES = %q after Reexec: want the caller's own", before.tunables)
	}
}

// TestChildrenKeepGlibcDefault checks that a program the new image starts
// gets the caller's environment, and so glibc's registration.
func TestChildrenKeepGlibcDefault(t *testing.T) {
	glibcRegisters(t)
	if got := child(t, "probe", nil); !strings.HasPrefix(got, "registered=true") {
		t.Errorf("child = %s; want registered", got)
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
		{nil, `registered=false tunables="" comm=` + c},
		{[]string{"GLIBC_TUNABLES="}, `registered=false tunables="" comm=` + c},
		{[]string{"GLIBC_TUNABLES=glibc.malloc.check=0"}, `registered=false tunables="glibc.malloc.check=0" comm=` + c},
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
	if want := `registered=true tunables="glibc.pthread.rseq=1" comm=` + c; got != want {
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
	if got := childVia(t, []string{loader}, "reexec", nil); !strings.HasPrefix(got, "registered=true ") {
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
