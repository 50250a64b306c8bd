package main

import (
	"runtime"
	"strings"
	"testing"
)

// TestVersionAndHelp checks --version, help for a command, and help for a
// command that does not exist: one error line and exit 1, not the usage and
// success.
func TestVersionAndHelp(t *testing.T) {
	out, errOut, code := skb(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "skb ") || !strings.HasSuffix(out, " "+runtime.Version()+"\n") || errOut != "" {
		t.Errorf("skb --version: exit %d, stdout %q, stderr %q; want \"skb VERSION %s\"", code, out, errOut, runtime.Version())
	}
	out, errOut, code = skb(t, "help", "lab", "up")
	if code != 0 || !strings.Contains(out, "Usage:\n  skb lab up") || errOut != "" {
		t.Errorf("skb help lab up: exit %d, stdout %q, stderr %q; want lab up's help", code, out, errOut)
	}
	for _, args := range [][]string{{"help", "bogus"}, {"help", "sink", "extra"}} {
		out, errOut, code = skb(t, args...)
		want := `skb: help: no command "` + strings.Join(args[1:], " ") + "\": `skb help` lists them\n"
		if code != 1 || out != "" || errOut != want {
			t.Errorf("skb %v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, errOut, want)
		}
	}
}

// TestTruncatedWarningPlural checks the sink's truncation warning in the
// singular and the plural.
func TestTruncatedWarningPlural(t *testing.T) {
	for n, want := range map[uint64]string{
		1: "skb: sink: warning: 1 packet was longer than the device's receive buffers and was dropped (rx_truncated)",
		3: "skb: sink: warning: 3 packets were longer than the device's receive buffers and were dropped (rx_truncated)",
	} {
		if got := truncatedWarning(n); got != want {
			t.Errorf("truncatedWarning(%d) = %q, want %q", n, got, want)
		}
	}
}
