package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skbdev/skb/lab"
	"github.com/skbdev/skb/lab/labtest"
)

// skbBin builds the skb command once per test binary.
var skbBin string

func buildSkb(t *testing.T) string {
	t.Helper()
	if skbBin != "" {
		return skbBin
	}
	dir, err := os.MkdirTemp("", "skbcli")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "skb")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("go build: %v\n%s", err, out)
	}
	skbBin = bin
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if skbBin != "" {
		os.RemoveAll(filepath.Dir(skbBin))
	}
	os.Exit(code)
}

// skb runs the built command and returns stdout, stderr and the exit code.
func skb(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(buildSkb(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("skb %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

func mustSkb(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := skb(t, args...)
	if code != 0 {
		t.Fatalf("skb %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

func netnsNames(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func labGone(t *testing.T, name string) {
	t.Helper()
	for _, ns := range []string{name + "A", name + "B"} {
		if _, err := os.Stat("/run/netns/" + ns); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("namespace %s left behind", ns)
		}
	}
	if _, err := lab.Open(name); !errors.Is(err, lab.ErrNotFound) {
		t.Errorf("lab %s still recorded: %v", name, err)
	}
}

func testLabName(prefix string) string { return fmt.Sprintf("%s%d", prefix, os.Getpid()%100000) }

func TestLabUpExecDown(t *testing.T) {
	labtest.RequireRoot(t)
	name := testLabName("skbc")
	t.Cleanup(func() { lab.Remove(name) })

	var j labJSON
	out := mustSkb(t, "lab", "up", "--name", name, "--mtu", "9000", "--json")
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("up --json: %v\n%s", err, out)
	}
	if j.Name != name || j.A.Namespace != name+"A" || j.B.Ifname != name+"B0" || j.A.Addr != "198.18.0.1" ||
		j.B.Addr != "198.18.0.2" || j.A.Prefix != "198.18.0.0/24" || j.A.MTU != 9000 || j.B.MAC != lab.MACB.String() || j.A.Ifindex == 0 {
		t.Errorf("up --json = %+v", j)
	}
	if ns := netnsNames(t); !strings.Contains(ns, name+"A") || !strings.Contains(ns, name+"B") {
		t.Fatalf("ip netns list after up: %s", ns)
	}
	want := "skb: lab up: lab " + name + " already exists (see `skb lab list`; remove it with `skb lab down --name " + name + "`)\n"
	if _, errOut, code := skb(t, "lab", "up", "--name", name); code != 1 || errOut != want {
		t.Errorf("second up: exit %d, %q; want 1, %q", code, errOut, want)
	}

	var infos []lab.Info
	if err := json.Unmarshal([]byte(mustSkb(t, "lab", "list", "--json")), &infos); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, i := range infos {
		found = found || (i.Name == name && i.Persist && !i.Stale())
	}
	if !found {
		t.Errorf("list lacks persistent %s: %+v", name, infos)
	}

	out = mustSkb(t, "lab", "exec", "a", "--name", name, "--", "cat", "/sys/class/net/"+name+"A0/address")
	if strings.TrimSpace(out) != lab.MACA.String() {
		t.Errorf("exec a cat address = %q", out)
	}
	out = mustSkb(t, "lab", "exec", "b", "--name", name, "--", "ip", "-o", "-4", "addr", "show", "dev", name+"B0")
	if !strings.Contains(out, "198.18.0.2/24") {
		t.Errorf("exec b ip addr = %q", out)
	}
	if _, _, code := skb(t, "lab", "exec", "b", "--name", name, "--", "sh", "-c", "exit 3"); code != 3 {
		t.Errorf("exec of a command exiting 3 exited %d", code)
	}
	// GRO is off by default on veth: no NAPI to thread.
	if _, errOut, code := skb(t, "lab", "threaded", "on", "--name", name); code == 0 || !strings.Contains(errOut, "NAPI") {
		t.Errorf("threaded on without GRO: exit %d, %s", code, errOut)
	}

	// A namespace removed by hand: list and exec say the lab is broken,
	// and down removes the rest.
	if err := exec.Command("ip", "netns", "del", name+"A").Run(); err != nil {
		t.Fatal(err)
	}
	if out := mustSkb(t, "lab", "list"); !strings.Contains(out, "broken: "+name+"A is gone") {
		t.Errorf("list of a broken lab:\n%s", out)
	}
	if _, errOut, code := skb(t, "lab", "exec", "a", "--name", name, "--", "true"); code != 1 || !strings.Contains(errOut, "the lab is broken: remove it with `skb lab down --name "+name+"`") {
		t.Errorf("exec in a broken lab: exit %d, %q", code, errOut)
	}

	out = mustSkb(t, "lab", "down", "--name", name)
	if !strings.Contains(out, "removed lab "+name) {
		t.Errorf("down: %q", out)
	}
	labGone(t, name)
	if _, errOut, code := skb(t, "lab", "down", "--name", name); code == 0 || !strings.Contains(errOut, "no lab named") {
		t.Errorf("down twice: exit %d, %s", code, errOut)
	}
	// A name no lab can have is said to be one, not a lab to make.
	for _, bad := range []string{"abcdefghijklmn", "x/../y", "-x"} {
		for _, args := range [][]string{{"lab", "down", "--name", bad}, {"lab", "exec", "a", "--name", bad, "--", "true"}} {
			if _, errOut, code := skb(t, args...); code != 1 || !strings.Contains(errOut, "not starting with '-'") || strings.Contains(errOut, "lab up") {
				t.Errorf("%q: exit %d, %q; want the name's rule", args, code, errOut)
			}
		}
	}
}

func TestLabThreaded(t *testing.T) {
	labtest.RequireRoot(t)
	labtest.RequireTool(t, "ethtool", "ethtool")
	name := testLabName("skbd")
	t.Cleanup(func() { lab.Remove(name) })
	out := mustSkb(t, "lab", "up", "--name", name, "--threaded", "--tso", "off")
	if !strings.Contains(out, name+"A0") || !strings.Contains(out, "198.18.0.2/24") {
		t.Errorf("up output:\n%s", out)
	}
	l, err := lab.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if on, err := l.B.Threaded(); err != nil || !on {
		t.Errorf("after up --threaded: %v, %v", on, err)
	}
	if f, err := l.A.Features(); err != nil || f.TSO {
		t.Errorf("after --tso off: %+v, %v", f, err)
	}
	for _, w := range []string{"off", "off", "on", "on"} { // twice: a no-op the second time
		if out := mustSkb(t, "lab", "threaded", w, "--name", name); !strings.HasSuffix(strings.TrimSpace(out), ": "+w) {
			t.Errorf("threaded %s: %q", w, out)
		}
		if on, err := l.B.Threaded(); err != nil || on != (w == "on") {
			t.Errorf("threaded %s read back %v, %v", w, on, err)
		}
	}
	if out := mustSkb(t, "lab", "threaded", "on", "--cpu", "0", "--name", name); !strings.Contains(out, "pinned to CPU 0") {
		t.Errorf("threaded on --cpu 0: %q", out)
	}
	mustSkb(t, "lab", "down", "--name", name)
	labGone(t, name)
}

// TestLabThreadedNoNAPI checks threaded on a lab whose veth has no NAPI
// (GRO off), where the kernel refuses every write to its threaded file:
// off, which it is, succeeds, twice, and on fails with the reason.
func TestLabThreadedNoNAPI(t *testing.T) {
	labtest.RequireRoot(t)
	name := testLabName("skbn")
	t.Cleanup(func() { lab.Remove(name) })
	mustSkb(t, "lab", "up", "--name", name)
	for range 2 {
		if out := mustSkb(t, "lab", "threaded", "off", "--name", name); !strings.HasSuffix(strings.TrimSpace(out), ": off") {
			t.Errorf("threaded off: %q", out)
		}
	}
	if _, errOut, code := skb(t, "lab", "threaded", "on", "--name", name); code == 0 || !strings.Contains(errOut, "has no NAPI") {
		t.Errorf("threaded on without NAPI: exit %d, %q", code, errOut)
	}
	if _, errOut, code := skb(t, "lab", "threaded", "off", "--name", name+"x"); code == 0 || !strings.Contains(errOut, "no lab named") {
		t.Errorf("threaded off of a missing lab: exit %d, %q", code, errOut)
	}
	mustSkb(t, "lab", "down", "--name", name)
	labGone(t, name)
}

// TestLabThreadedKept checks threaded off on a veth whose NAPI went away
// while threaded (its AF_XDP receiver closed): the kernel keeps the flag
// and refuses the write, and the command says why.
func TestLabThreadedKept(t *testing.T) {
	labtest.RequireRoot(t)
	name := testLabName("skbk")
	t.Cleanup(func() { lab.Remove(name) })
	mustSkb(t, "lab", "up", "--name", name)
	// An AF_XDP sink on B gives the veth NAPI while it runs.
	sink := exec.Command(buildSkb(t), "lab", "exec", "b", "--name", name, "--",
		buildSkb(t), "sink", "--dev", "afxdp:"+name+"B0", "--listen", "198.18.0.2:9000", "--duration", "30s")
	var serr bytes.Buffer
	sink.Stderr = &serr
	if err := sink.Start(); err != nil {
		t.Fatal(err)
	}
	defer sink.Process.Kill()
	// Until the sink has its device open (however long a loaded machine
	// takes to start it), then the sink is stopped.
	on := false
	for deadline := time.Now().Add(10 * time.Second); !on && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, _, code := skb(t, "lab", "threaded", "on", "--name", name)
		on = code == 0
	}
	sink.Process.Signal(syscall.SIGINT)
	waitExit(t, sink, 10*time.Second)
	if code := sink.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("sink: exit %d, want 130 (SIGINT): %s", code, serr.String())
	}
	if !on {
		t.Fatal("threaded on never succeeded while the AF_XDP sink ran")
	}
	if _, errOut, code := skb(t, "lab", "threaded", "off", "--name", name); code == 0 || !strings.Contains(errOut, "keeps threaded NAPI on until it has NAPI again") {
		t.Errorf("threaded off after the receiver closed: exit %d, %q", code, errOut)
	}
	mustSkb(t, "lab", "down", "--name", name)
	labGone(t, name)
}

func TestLabExecTemp(t *testing.T) {
	labtest.RequireRoot(t)
	name := testLabName("skbg")
	t.Cleanup(func() { lab.Remove(name) })
	out := mustSkb(t, "lab", "exec", "--temp", "--name", name, "--mtu", "2000", "a", "--", "ip", "-o", "-4", "link", "show")
	if !strings.Contains(out, "mtu 2000") || !strings.Contains(out, name+"A0") {
		t.Errorf("exec --temp --mtu 2000: %q", out)
	}
	labGone(t, name)

	// Without --name the lab gets a generated name; once skb has exited, a lab
	// it left would be stale. A record directory of its own keeps other
	// tests' labs out of the list.
	t.Setenv(lab.RecordDirEnv, t.TempDir())
	out = mustSkb(t, "lab", "exec", "--temp", "b", "--", "ip", "-o", "-4", "addr", "show")
	if !strings.Contains(out, "198.18.0.2/24") {
		t.Errorf("exec --temp b: %q", out)
	}
	// The command's environment names the lab, its side's interface and
	// the addresses, the generated name too.
	out = mustSkb(t, "lab", "exec", "--temp", "b", "--", "sh", "-c", `echo "$SKB_LAB $SKB_LAB_IFNAME $SKB_LAB_ADDR $SKB_LAB_PEER_ADDR"; ip -o link show "$SKB_LAB_IFNAME"`)
	f := strings.Fields(out)
	if len(f) < 4 || f[0] == "" || f[1] != f[0]+"B0" || f[2] != "198.18.0.2" || f[3] != "198.18.0.1" || !strings.Contains(out, ": "+f[1]+"@") {
		t.Errorf("exec --temp b's environment and its interface: %q", out)
	}
	out = mustSkb(t, "lab", "exec", "--temp", "--ipv6", "a", "--", "sh", "-c", `echo "$SKB_LAB_ADDR6 $SKB_LAB_PEER_ADDR6"`)
	if want := lab.Addr6A.String() + " " + lab.Addr6B.String() + "\n"; out != want {
		t.Errorf("exec --temp --ipv6 a: %q, want %q", out, want)
	}
	infos, err := lab.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 0 {
		t.Errorf("labs left after exec --temp: %+v", infos)
	}
}

// TestLabExecSignal sends SIGTERM to `skb lab exec --temp` while its command
// runs: the command gets the signal and the temporary lab is removed.
func TestLabExecSignal(t *testing.T) {
	labtest.RequireRoot(t)
	name := testLabName("skbe")
	t.Cleanup(func() { lab.Remove(name) })
	cmd := exec.Command(buildSkb(t), "lab", "exec", "--temp", "--name", name, "b", "--", "sleep", "20")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Wait until sleep runs inside B.
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _ := exec.Command("ip", "netns", "pids", name+"B").Output()
		if len(bytes.TrimSpace(out)) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep never ran in %sB; stderr: %s", name, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	waitExit(t, cmd, 10*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit code %d, want %d; stderr: %s", code, 128+int(syscall.SIGTERM), stderr.String())
	}
	labGone(t, name)
}

// TestLabUpSignal sends SIGTERM to `skb lab up` at delays across its run
// (about 50 ms, lab.New's part in its middle): each either finished first
// (exit 0, the lab up) or was stopped, 143, with no lab or namespace left
// and at most one line on stderr, "stopped by SIGTERM" when the signal
// came while the lab was being made.
func TestLabUpSignal(t *testing.T) {
	labtest.RequireRoot(t)
	name := testLabName("skbs")
	t.Cleanup(func() { lab.Remove(name) })
	bin := buildSkb(t)
	for i := range 16 {
		cmd := exec.Command(bin, "lab", "up", "--name", name)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i) * 5 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGTERM)
		waitExit(t, cmd, 10*time.Second)
		code := cmd.ProcessState.ExitCode()
		if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		switch {
		case code == 0:
			mustSkb(t, "lab", "down", "--name", name)
		case code != 128+int(syscall.SIGTERM) || len(lines) > 1 || lines[0] != "" && lines[0] != "skb: lab up: stopped by SIGTERM: no lab "+name+" made":
			t.Errorf("after %d ms: exit %d, stderr %q", i*5, code, stderr.String())
		default:
			labGone(t, name)
		}
	}
}

// TestLabExecKillsChildren sends SIGTERM to `skb lab exec` in a persistent
// lab whose command, a shell, ignores it: once the wait is over, the shell
// is killed with its command, which would otherwise run on in the lab.
func TestLabExecKillsChildren(t *testing.T) {
	labtest.RequireRoot(t)
	name := testLabName("skbk")
	t.Cleanup(func() { lab.Remove(name) })
	mustSkb(t, "lab", "up", "--name", name)
	cmd := exec.Command(buildSkb(t), "lab", "exec", "--name", name, "b", "--", "sh", "-c", `trap "" TERM INT; sleep 30; true`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pids := func() string {
		out, _ := exec.Command("ip", "netns", "pids", name+"B").Output()
		return strings.TrimSpace(string(out))
	}
	for deadline := time.Now().Add(5 * time.Second); len(strings.Fields(pids())) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sh and sleep never ran in %sB (pids %q); stderr: %s", name, pids(), stderr.String())
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	waitExit(t, cmd, labKillAfter+5*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGKILL) || !strings.Contains(stderr.String(), "sh did not end within 5s of the signal: killed") {
		t.Errorf("exit code %d, want %d (the shell killed, and said so); stderr: %s", code, 128+int(syscall.SIGKILL), stderr.String())
	}
	// Killed; their exit may take a moment more.
	for deadline := time.Now().Add(5 * time.Second); pids() != ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("processes left in %sB 5 s after skb exited: %s", name, pids())
			break
		}
	}
}

// waitGone waits up to d for process pid to be gone, or a zombie not yet
// reaped by its new parent; it returns its last /proc/PID/stat and
// whether it went.
func waitGone(pid int, d time.Duration) (string, bool) {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return "", true
		}
		if time.Now().After(deadline) {
			return string(stat), false
		}
	}
}

// waitExit waits up to d for the started cmd to exit, and fails the test
// when it does not.
func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%v did not exit within %v", cmd.Args, d)
	}
}

// TestLabExecTempChildren checks that nothing of CMD's outlives a
// temporary lab: children that a signal to CMD alone would miss (a shell's
// foreground command), and background ones left when CMD exits.
func TestLabExecTempChildren(t *testing.T) {
	labtest.RequireRoot(t)
	for _, tc := range []struct {
		name   string
		script string
		signal bool
		code   int
	}{
		{"signalled", "sleep 29; true", true, 128 + int(syscall.SIGTERM)},
		{"background", "sleep 29 & sleep 0.5; echo started", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := testLabName("skbc")
			t.Cleanup(func() { lab.Remove(name) })
			cmd := exec.Command(buildSkb(t), "lab", "exec", "--temp", "--name", name, "b", "--", "sh", "-c", tc.script)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			// Wait until sh and its sleep run inside B.
			var pids []int
			for deadline := time.Now().Add(5 * time.Second); len(pids) < 2; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("sh and sleep never ran in %sB (%v); stderr: %s", name, pids, stderr.String())
				}
				out, _ := exec.Command("ip", "netns", "pids", name+"B").Output()
				pids = pids[:0]
				for _, f := range strings.Fields(string(out)) {
					if pid, err := strconv.Atoi(f); err == nil {
						pids = append(pids, pid)
					}
				}
			}
			if tc.signal {
				cmd.Process.Signal(syscall.SIGTERM)
			}
			waitExit(t, cmd, 15*time.Second)
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			for _, pid := range pids {
				if stat, gone := waitGone(pid, 5*time.Second); !gone {
					t.Errorf("pid %d, started inside the lab, still runs 5 s after skb exited: %s", pid, stat)
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			labGone(t, name)
		})
	}
}

func TestLabBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"lab", "up", "--gro", "maybe"},
		{"lab", "up", "--mtu", "big"},
		{"lab", "up", "--name", "no/good"},
		{"lab", "up", "extra"},
		{"lab", "exec", "c", "--", "true"},
		{"lab", "exec", "a"},
		{"lab", "exec", "a", "b", "--", "true"},
		{"lab", "exec", "a", "--mtu", "9000", "--", "true"},
		{"lab", "down", "--name", "x", "--all"},
		{"lab", "threaded", "maybe"},
		{"lab", "threaded"},
		{"lab", "threaded", "off", "--cpu", "0"},
		{"lab", "threaded", "on", "--name", ""},
		{"lab", "threaded", "on", "--cpu", "4096"},
		{"lab", "up", "--bogus"},
		{"lab", "up", "--name", ""},
		{"lab", "up", "--queues", "0"},
		{"lab", "up", "--queues", "-1"},
		{"lab", "up", "--queues", "100000"},
		{"lab", "exec", "--temp", "--queues", "4097", "a", "--", "true"},
		{"lab", "exec", "a", "--name", "", "--", "true"},
		{"lab", "exec", "--temp", "--name", "", "a", "--", "true"},
		{"lab", "exec", "--temp", "--queues", "0", "a", "--", "true"},
		{"lab", "exec", "--temp", "--mtu", "10", "a", "--", "true"}, // refused by lab.New
		{"lab", "bogus"},
	} {
		t.Run(strings.Join(args[1:], "_"), func(t *testing.T) {
			out, errOut, code := skb(t, args...)
			lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
			if code == 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "skb: ") || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q: want a non-zero exit and one line", code, out, errOut)
			}
			// The line names the command given, not the library's
			// operation behind it ("lab: new").
			if cmd := "skb: lab " + args[1]; args[1] != "bogus" && !strings.HasPrefix(lines[0], cmd) && !strings.HasSuffix(lines[0], `for "skb lab `+args[1]+`"`) {
				t.Errorf("stderr %q: want it to start %q", errOut, cmd)
			}
		})
	}
	// Without a subcommand: the help, and a zero exit.
	if out, errOut, code := skb(t, "lab"); code != 0 || !strings.Contains(out, "Available Commands:") || errOut != "" {
		t.Errorf("skb lab: exit %d, stdout %q, stderr %q: want its help", code, out, errOut)
	}
}

// TestLabQueues checks --queues against the kernel's range: outside it,
// one line that gives the range before anything is made, rather than the
// kernel's bare "invalid argument" once the namespaces exist; its top, a
// lab of 4096 queues per veth end, is made.
func TestLabQueues(t *testing.T) {
	for _, n := range []string{"0", "4097", "100000"} {
		name := testLabName("skbq")
		out, errOut, code := skb(t, "lab", "up", "--name", name, "--queues", n)
		want := "skb: lab up: --queues " + n + ": want 1 to 4096 (the kernel's limit on a device's queues)\n"
		if code != 1 || out != "" || errOut != want {
			t.Errorf("--queues %s: exit %d, stdout %q, stderr %q; want 1 and %q", n, code, out, errOut, want)
		}
		labGone(t, name)
	}
	labtest.RequireRoot(t)
	name := testLabName("skbq")
	t.Cleanup(func() { lab.Remove(name) })
	if _, errOut, code := skb(t, "lab", "exec", "--temp", "--name", name, "--queues", "4096", "a", "--", "true"); code != 0 {
		t.Errorf("--queues 4096: exit %d, stderr %q", code, errOut)
	}
	labGone(t, name)
}

// TestLabDownAll checks that down --all removes persistent labs and keeps the
// labs of running processes. It records its labs in a directory of its own,
// so that down --all sees no lab of anyone else.
func TestLabDownAll(t *testing.T) {
	labtest.RequireRoot(t)
	t.Setenv(lab.RecordDirEnv, t.TempDir())
	name := testLabName("skbf")
	t.Cleanup(func() { lab.Remove(name) })
	mustSkb(t, "lab", "up", "--name", name)
	live := labtest.New(t, lab.Options{})
	out := mustSkb(t, "lab", "down", "--all")
	if !strings.Contains(out, "removed lab "+name) || !strings.Contains(out, "kept lab "+live.Name+": in use by pid") {
		t.Errorf("down --all:\n%s", out)
	}
	labGone(t, name)
	if err := live.A.Do(func() error { return nil }); err != nil {
		t.Errorf("live lab after down --all: %v", err)
	}
	if _, err := os.Stat("/run/netns/" + live.A.NSName); err != nil {
		t.Errorf("live lab removed: %v", err)
	}
}

// TestLabExecNotFound checks that a command lab exec cannot run is one
// "skb: " line and exit status 127 (not found) or 126 (not executable), as
// from a shell, before any lab is looked at.
func TestLabExecNotFound(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lab", "exec", "a", "--", "skb-no-such-command"}, 127, "skb: lab exec: skb-no-such-command: executable file not found in $PATH\n"},
		{[]string{"lab", "exec", "--temp", "b", "--", "skb-no-such-command", "x"}, 127, "skb: lab exec: skb-no-such-command: executable file not found in $PATH\n"},
		{[]string{"lab", "exec", "a", "--", "/nonexistent/cmd"}, 127, "skb: lab exec: /nonexistent/cmd: no such file or directory\n"},
		{[]string{"lab", "exec", "a", "--", notExec}, 126, "skb: lab exec: " + notExec + ": permission denied\n"},
	} {
		out, errOut, code := skb(t, tc.args...)
		if code != tc.code || errOut != tc.want || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
}

// TestLabExecParentDeath kills `skb lab exec --temp` with SIGKILL, which it
// cannot catch, while its command runs: the command must die with it (its
// parent-death signal) rather than run on without its lab.
func TestLabExecParentDeath(t *testing.T) {
	labtest.RequireRoot(t)
	name := testLabName("skbh")
	t.Cleanup(func() { lab.Remove(name) })
	cmd := exec.Command(buildSkb(t), "lab", "exec", "--temp", "--name", name, "a", "--", "sleep", "30")
	// A file, not a pipe: Wait would wait for sleep to close a pipe.
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	var pid int
	deadline := time.Now().Add(5 * time.Second)
	for pid == 0 {
		out, _ := exec.Command("ip", "netns", "pids", name+"A").Output()
		if f := strings.Fields(string(out)); len(f) == 1 {
			pid, _ = strconv.Atoi(f[0])
		}
		if time.Now().After(deadline) {
			msg, _ := os.ReadFile(stderr.Name())
			t.Fatalf("sleep never ran in %sA; stderr: %s", name, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	// Give skb's other threads time to be scheduled elsewhere: the signal
	// must follow the process, whichever thread runs when it dies.
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Kill()
	<-done
	for deadline = time.Now().Add(5 * time.Second); ; {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// Gone, or a zombie waiting for its new parent to reap it.
		if err != nil || strings.Contains(string(b), ") Z ") || !strings.Contains(string(b), "(sleep)") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep (pid %d) still runs 5s after skb lab exec was killed: %s", pid, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLabUsageLines checks that the usage line of every lab subcommand
// names each of its flags; exec's "[lab flags]" stands for those of up.
func TestLabUsageLines(t *testing.T) {
	var labCmd *cobra.Command
	for _, c := range rootCmd.Commands() {
		if c.Name() == "lab" {
			labCmd = c
		}
	}
	if labCmd == nil {
		t.Fatal("no lab command")
	}
	for _, c := range labCmd.Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || (c.Name() == "exec" && slices.Contains(labOptionFlags, f.Name)) {
				return
			}
			if !regexp.MustCompile(`\[--` + f.Name + `\b|[ |]--` + f.Name + `\b`).MatchString(c.Use) {
				t.Errorf("lab %s: usage line %q lacks --%s", c.Name(), c.Use, f.Name)
			}
		})
	}
}

// TestFlagUsages checks every flag's help: pflag takes a `quoted` word in
// it for the value's placeholder (so "--all up" once showed in help), and
// a boolean flag has none.
func TestFlagUsages(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: usage %q has a backquote, which pflag shows as the value's name", c.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(rootCmd)
	out := mustSkb(t, "lab", "down", "--help")
	if !regexp.MustCompile(`(?m)^\s+--all\s{2,}remove `).MatchString(out) {
		t.Errorf("lab down --help:\n%s", out)
	}
}

// TestLabDownBusy checks that lab down keeps a lab with a process running
// inside it, names the process and exits 1, and removes it with --force;
// down --all keeps it too.
func TestLabDownBusy(t *testing.T) {
	labtest.RequireRoot(t)
	t.Setenv(lab.RecordDirEnv, t.TempDir())
	name := testLabName("skbk")
	t.Cleanup(func() { lab.Remove(name) })
	mustSkb(t, "lab", "up", "--name", name)
	sleep := exec.Command("ip", "netns", "exec", name+"A", "sleep", "20")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids, err := lab.Procs(name)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(pids, sleep.Process.Pid) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lab.Procs(%s) = %v: sleep (pid %d) never seen inside", name, pids, sleep.Process.Pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out := mustSkb(t, "lab", "list"); !regexp.MustCompile(name + ` +persistent, 1 process inside `).MatchString(out) {
		t.Errorf("lab list with sleep inside:\n%s\nwant %s persistent, 1 process inside", out, name)
	}
	want := fmt.Sprintf("pid %d (sleep)", sleep.Process.Pid)
	if _, errOut, code := skb(t, "lab", "down", "--name", name); code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "--force") {
		t.Errorf("down with sleep inside: exit %d, %q; want 1 naming %s and --force", code, errOut, want)
	}
	if out, errOut, code := skb(t, "lab", "down", "--all"); code != 1 || !strings.Contains(out, "kept lab "+name+": ") ||
		!strings.Contains(errOut, "kept a lab with processes inside ("+name+")") {
		t.Errorf("down --all with sleep inside: exit %d, stdout %q, stderr %q; want 1, the lab kept and named", code, out, errOut)
	}
	if _, err := os.Stat("/run/netns/" + name + "A"); err != nil {
		t.Fatalf("busy lab removed: %v", err)
	}
	if out, errOut, code := skb(t, "lab", "down", "--name", name, "--force"); code != 0 || out != "removed lab "+name+"\n" ||
		!strings.Contains(errOut, "1 process inside "+name+" still runs") || !strings.Contains(errOut, want) {
		t.Errorf("down --force with sleep inside: exit %d, stdout %q, stderr %q; want the lab removed and the sleep named", code, out, errOut)
	}
	labGone(t, name)
}
