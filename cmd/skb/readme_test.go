package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skbdev/skb/lab"
	"github.com/skbdev/skb/lab/labtest"
)

// readmeLab returns the command lines of the README's lab section.
func readmeLab(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "### The lab (root)\n")
	if !ok {
		t.Fatal("README.md has no lab section")
	}
	var lines []string
	for _, l := range strings.Split(sec, "\n") {
		if cmd, ok := strings.CutPrefix(l, "    "); ok {
			lines = append(lines, cmd)
		} else if len(lines) > 0 && l != "" {
			break
		}
	}
	return lines
}

// TestReadmeLab runs the README's lab sequence as a shell script, with skb
// on PATH as the README says to put it: a lab of its own name, the two
// generators bounded to a second at 20000 packets per second each, and
// bench left out. The sink must still run when it is told to stop after
// both generators, and have counted what they sent.
func TestReadmeLab(t *testing.T) {
	labtest.RequireRoot(t)
	labtest.RequireTool(t, "bash", "bash")
	name := testLabName("skbr")
	t.Cleanup(func() {
		if out, _ := exec.Command("ip", "netns", "pids", name+"B").Output(); len(out) > 0 {
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		lab.Remove(name)
	})
	var script []string
	for _, l := range readmeLab(t) {
		if strings.HasPrefix(l, "sudo ") || strings.Contains(l, " bench") {
			continue
		}
		for _, r := range [][2]string{
			{"skb lab up", "skb lab up --name " + name},
			{"skb lab exec a", "skb lab exec a --name " + name},
			{"skb lab exec b", "skb lab exec b --name " + name},
			{"skb lab down", "skb lab down --name " + name},
			{"skbA0", name + "A0"},
			{"skbB0", name + "B0"},
		} {
			l = strings.ReplaceAll(l, r[0], r[1])
		}
		// The README's pauses, made to fit a loaded machine: until the
		// sink holds its port (9000, 2328 in /proc/net/udp) in B, and
		// for the last frames to reach it before the kill.
		if strings.HasPrefix(l, "sleep 1 ") {
			l = "for i in $(seq 500); do ip netns exec " + name + "B grep -q ':2328 ' /proc/net/udp && break; sleep 0.02; done"
		}
		if strings.HasPrefix(l, "kill %1") {
			l = "sleep 0.5; " + l
		}
		if strings.Contains(l, "skb pktgen ") {
			cmd, comment, _ := strings.Cut(l, " #")
			l = cmd + " -t 1s -r 20000"
			if comment != "" {
				l += " #" + comment
			}
		}
		script = append(script, l)
	}
	if len(script) < 5 {
		t.Fatalf("README lab section: %q", script)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-c", strings.Join(script, "\n"))
	c.Env = append(os.Environ(), "PATH="+filepath.Dir(buildSkb(t))+":"+os.Getenv("PATH"))
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		t.Fatalf("%v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, strings.Join(script, "\n"), out.String(), errOut.String())
	}
	var sent uint64
	for _, m := range regexp.MustCompile(`(?m)^sent (\d+) packets`).FindAllStringSubmatch(out.String(), -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		sent += n
	}
	m := regexp.MustCompile(`(?m)^received (\d+) packets, .*; \d+ lost, \d+ reordered, \d+ duplicates, (\d+) kernel drops`).FindStringSubmatch(out.String())
	if m == nil || strings.Count(out.String(), "\nsent ") < 1 || !strings.Contains(errOut.String(), "skb: sink: stopped by SIGTERM") {
		t.Fatalf("want two pktgen results and the result of a sink stopped by kill\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	got, _ := strconv.ParseUint(m[1], 10, 64)
	drops, _ := strconv.ParseUint(m[2], 10, 64)
	if strings.Count(out.String(), "sent ") != 2 || sent == 0 || got+drops != sent {
		t.Errorf("sent %d, the sink received %d and saw %d kernel drops\nstdout:\n%s\nstderr:\n%s", sent, got, drops, out.String(), errOut.String())
	}
	labGone(t, name)
}
