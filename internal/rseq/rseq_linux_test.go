package rseq

import (
	"fmt"
	"os"
	"os/exec"
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
	cmd := exec.Command("/proc/self/exe", "-test.run=^TestChild$", "-test.count=1")
	cmd.Env = append(setEnv(slices.Clone(os.Environ()), childEnv, mode), extra...)
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
		return strings.HasPrefix(kv, "GLIBC_TUNABLES=") && !slices.Contains(extra, kv)
	})
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", mode, err, out)
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
	fmt.Printf("registered=%v tunables=%q\n", reg, os.Getenv("GLIBC_TUNABLES"))
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

// TestReexecInChild checks Reexec in a fresh image, with GLIBC_TUNABLES
// unset, empty and holding another tunable: the registration is off and
// the variable as it was.
func TestReexecInChild(t *testing.T) {
	glibcRegisters(t)
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, `registered=false tunables=""`},
		{[]string{"GLIBC_TUNABLES="}, `registered=false tunables=""`},
		{[]string{"GLIBC_TUNABLES=glibc.malloc.check=0"}, `registered=false tunables="glibc.malloc.check=0"`},
	} {
		if got := child(t, "reexec", tc.env); got != tc.want {
			t.Errorf("env %q: child = %s; want %s", tc.env, got, tc.want)
		}
	}
}

// TestUserChoiceKept checks that a GLIBC_TUNABLES that sets the tunable
// already keeps Reexec from starting again: glibc.pthread.rseq=1 keeps the
// registration.
func TestUserChoiceKept(t *testing.T) {
	glibcRegisters(t)
	got := child(t, "reexec", []string{"GLIBC_TUNABLES=glibc.pthread.rseq=1"})
	if got != `registered=true tunables="glibc.pthread.rseq=1"` {
		t.Errorf("child = %s; want registered, tunables kept", got)
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
