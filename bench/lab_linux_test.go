package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/skbdev/skb/lab/labtest"
)

// TestRunLab runs the lab experiments briefly in a lab Run makes, checks
// the shape of their rows, and that the lab is gone afterwards. It needs
// root: it skips without (and fails when CI=true).
func TestRunLab(t *testing.T) {
	labtest.RequireRoot(t)
	labtest.RequireTool(t, "ip", "iproute2")
	only := []string{"afpacket", "afxdp-tx", "afxdp"}
	rep, err := Run(context.Background(), Options{Duration: 200 * time.Millisecond, Runs: 1, Only: only, Lab: true})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rep, only)
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if stem := fmt.Sprintf("skb%d_", os.Getpid()); strings.Contains(string(out), stem) {
		t.Errorf("a lab of this process is left:\n%s", out)
	}
}

// TestRunLabCancelled cancels a lab run in its first experiment and checks
// that the lab is removed all the same.
func TestRunLabCancelled(t *testing.T) {
	labtest.RequireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, Options{Duration: 5 * time.Second, Runs: 1, Only: []string{"afpacket"}, Lab: true})
	if err == nil {
		t.Fatal("a run cancelled after 300 ms of 10 s returned no error")
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	if stem := fmt.Sprintf("skb%d_", os.Getpid()); strings.Contains(string(out), stem) {
		t.Errorf("a lab of this process is left:\n%s", out)
	}
}
