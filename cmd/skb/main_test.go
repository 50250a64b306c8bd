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
