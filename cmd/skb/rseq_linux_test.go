package main

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skbdev/skb/internal/rseq"
)

// TestToolDropsRseq checks that the tool, linked against a glibc that
// registers rseq (as this test binary is, built the same way), starts
// again without the registration: the image that runs has glibc's tunable
// in the environment it was executed with.
func TestToolDropsRseq(t *testing.T) {
	if v := os.Getenv("GLIBC_TUNABLES"); strings.Contains(v, "glibc.pthread.rseq") {
		t.Skipf("GLIBC_TUNABLES sets the rseq tunable already: %q", v)
	}
	if reg, err := rseq.Registered(); err != nil || !reg {
		t.Skipf("this test binary has no rseq registered (%v, %v): built without cgo, or glibc older than 2.35", reg, err)
	}
	cmd := exec.Command(buildSkb(t), "sink", "--listen", "127.0.0.1:0", "--duration", "5s")
	// Without GLIBC_TUNABLES: glibc rewrites a value of several tunables
	// in place (NULs for its colons), which /proc/PID/environ shows.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GLIBC_TUNABLES=") })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	environ := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ"
	var env string
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(environ)
		if err != nil {
			t.Fatal(err)
		}
		if env = string(b); strings.Contains(env, rseq.Saved+"=") {
			break
		}
	}
	vars := strings.Split(env, "\x00")
	if !slices.Contains(vars, "GLIBC_TUNABLES="+rseq.Tunable) || !slices.Contains(vars, rseq.Saved+"=-") {
		t.Errorf("the running tool was not executed with GLIBC_TUNABLES=%s; environment:\n%s", rseq.Tunable, strings.ReplaceAll(env, "\x00", "\n"))
	}
}
