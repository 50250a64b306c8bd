package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/skbdev/skb/lab"
	"github.com/spf13/cobra"
)

// labDefaultName is the lab that up, down, exec and threaded act on without --name.
const labDefaultName = "skb"

// labKillAfter is how long `lab exec` waits for the command to exit after
// passing it a signal before it kills it and removes a temporary lab.
const labKillAfter = 5 * time.Second

func init() {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Two hosts on one machine: network namespaces A (198.18.0.1) and B (198.18.0.2) joined by veth",
		Long: `lab makes, uses and removes a two-host testbed: network namespaces <name>A and
<name>B joined by the veth pair <name>A0 <-> <name>B0, with 198.18.0.1/24 and
198.18.0.2/24 (RFC 2544 benchmarking range), fixed MACs and permanent neighbour
entries. The default name is "` + labDefaultName + `". It needs root (or CAP_SYS_ADMIN and
CAP_NET_ADMIN), iproute2's ip for exec, and ethtool for --gro, --tso, --txcsum
and --threaded.`,
	}
	// Runnable, so that an unknown subcommand is an error (cobra shows
	// a command without Run its help, and exits 0, whatever follows it).
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unknown command %q for %q: want one of up, down, exec, threaded, list", args[0], cmd.CommandPath())
		}
		return cmd.Help()
	}
	cmd.AddCommand(labUpCmd(), labDownCmd(), labExecCmd(), labThreadedCmd(), labListCmd())
	rootCmd.AddCommand(cmd)
}

// labToggleFlag adapts a lab.Toggle to a flag that shows no default.
type labToggleFlag struct{ t *lab.Toggle }

func (f labToggleFlag) String() string {
	if f.t == nil || *f.t == lab.Default {
		return ""
	}
	return f.t.String()
}
func (f labToggleFlag) Set(s string) error {
	t, err := lab.ParseToggle(s)
	if err != nil || t == lab.Default {
		return fmt.Errorf("want on or off, not %q", s)
	}
	*f.t = t
	return nil
}
func (f labToggleFlag) Type() string { return "on|off" }

// labOptionFlags are the flags that shape a new lab, for up and exec --temp.
var labOptionFlags = []string{"mtu", "gro", "tso", "txcsum", "threaded", "queues", "ipv6"}

// checkLabFlags refuses what the lab flags of up and exec --temp cannot
// mean: an empty --name, which would get a generated name, and --queues
// outside 1 to lab.MaxQueues, which the kernel would refuse with a bare
// "invalid argument" once the namespaces exist.
func checkLabFlags(cmd *cobra.Command, o *lab.Options) error {
	if cmd.Flags().Changed("name") && o.Name == "" {
		return fmt.Errorf("--name \"\": want 1 to %d characters from [A-Za-z0-9_-]", lab.MaxNameLen)
	}
	if cmd.Flags().Changed("queues") && (o.Queues < 1 || o.Queues > lab.MaxQueues) {
		return fmt.Errorf("--queues %d: want 1 to %d (the kernel's limit on a device's queues)", o.Queues, lab.MaxQueues)
	}
	return nil
}

func addLabOptionFlags(cmd *cobra.Command, o *lab.Options) {
	fs := cmd.Flags()
	fs.IntVar(&o.MTU, "mtu", 0, "MTU of both veth ends in bytes (default: the kernel's, 1500)")
	fs.Var(labToggleFlag{&o.GRO}, "gro", "generic receive offload on both veth ends (needs ethtool)")
	fs.Var(labToggleFlag{&o.TSO}, "tso", "TCP segmentation offload on both veth ends (needs ethtool)")
	fs.Var(labToggleFlag{&o.TxChecksum}, "txcsum", "transmit checksumming on both veth ends (needs ethtool)")
	fs.BoolVar(&o.Threaded, "threaded", false, "threaded NAPI on side B's veth; turns GRO on there unless --gro off")
	fs.IntVar(&o.Queues, "queues", 0, fmt.Sprintf("receive and transmit queues of each veth end, 1 to %d (default 1)", lab.MaxQueues))
	fs.BoolVar(&o.IPv6, "ipv6", false, "keep IPv6 and add 2001:2::1/64 and 2001:2::2/64")
}

func labUpCmd() *cobra.Command {
	var o lab.Options
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "up [--name N] [--mtu N] [--gro on|off] [--tso on|off] [--txcsum on|off] [--threaded] [--queues N] [--ipv6] [--json]",
		Short: "Make a lab that stays until `skb lab down`, and print its names and addresses",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkLabFlags(cmd, &o); err != nil {
				return fmt.Errorf("lab up: %w", err)
			}
			o.Persist = true
			// A signal while the lab is being made waits for lab.New,
			// which then leaves no half-made lab, and removes the lab.
			// One after that is absorbed (the handler stays until skb
			// exits): the lab is made, and is printed, and stays.
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
			l, err := lab.New(o)
			select {
			case sig := <-sigs:
				if err == nil {
					l.Release()
					if rerr := lab.Remove(o.Name); rerr != nil {
						return fmt.Errorf("lab up: %v: remove the lab made meanwhile: %w", sig, rerr)
					}
				}
				n := sig.(syscall.Signal)
				return &exitError{code: 128 + int(n), err: fmt.Errorf("lab up: stopped by %s: no lab %s made", signalName(n), o.Name)}
			default:
			}
			if errors.Is(err, lab.ErrExist) {
				return fmt.Errorf("lab up: lab %s already exists (see `skb lab list`; remove it with `skb lab down --name %s`)", o.Name, o.Name)
			}
			if err != nil {
				// The library's operation is lab.New; the command's
				// is lab up.
				return fmt.Errorf("lab up: %s", strings.TrimPrefix(err.Error(), "lab: new: "))
			}
			defer l.Release()
			if asJSON {
				return labPrintJSON(cmd.OutOrStdout(), l)
			}
			labPrint(cmd.OutOrStdout(), l)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Name, "name", labDefaultName, "lab name: namespaces NAME+A and NAME+B, veth NAME+A0 and NAME+B0")
	addLabOptionFlags(cmd, &o)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the lab as one JSON object")
	return cmd
}

type labHostJSON struct {
	Namespace string `json:"namespace"`
	Ifname    string `json:"ifname"`
	Ifindex   int    `json:"ifindex"`
	MAC       string `json:"mac"`
	MTU       int    `json:"mtu"`
	Addr      string `json:"addr"`
	Prefix    string `json:"prefix"`
	Addr6     string `json:"addr6,omitempty"`
	Prefix6   string `json:"prefix6,omitempty"`
}

type labJSON struct {
	Name    string      `json:"name"`
	Options lab.Options `json:"options"`
	A       labHostJSON `json:"a"`
	B       labHostJSON `json:"b"`
}

func labHostOf(h *lab.Host) labHostJSON {
	j := labHostJSON{Namespace: h.NSName, Ifname: h.Ifname, Ifindex: h.Ifindex, MAC: h.MAC.String(),
		MTU: h.MTU, Addr: h.Addr.String(), Prefix: h.Prefix.String()}
	if h.Addr6.IsValid() {
		j.Addr6, j.Prefix6 = h.Addr6.String(), h.Prefix6.String()
	}
	return j
}

func labPrintJSON(w io.Writer, l *lab.Lab) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(labJSON{Name: l.Name, Options: l.Options, A: labHostOf(&l.A), B: labHostOf(&l.B)})
}

func labPrint(w io.Writer, l *lab.Lab) {
	fmt.Fprintf(w, "lab %s: stays until `skb lab down --name %s`\n", l.Name, l.Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "side\tnamespace\tinterface\tifindex\tmac\tmtu\taddress")
	for _, s := range []struct {
		side string
		h    *lab.Host
	}{{"a", &l.A}, {"b", &l.B}} {
		h := s.h
		addr := fmt.Sprintf("%v/%d", h.Addr, h.Prefix.Bits())
		if h.Addr6.IsValid() {
			addr += fmt.Sprintf(" %v/%d", h.Addr6, h.Prefix6.Bits())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%v\t%d\t%s\n", s.side, h.NSName, h.Ifname, h.Ifindex, h.MAC, h.MTU, addr)
	}
	tw.Flush()
	fmt.Fprintf(w, "run a command in a side: skb lab exec a --name %s -- CMD (or ip netns exec %s CMD)\n", l.Name, l.A.NSName)
}

func labDownCmd() *cobra.Command {
	var name string
	var all, force bool
	cmd := &cobra.Command{
		Use:   "down [--name N | --all] [--force]",
		Short: "Remove a lab; --all removes every lab made by `up` and every one whose process is gone",
		Long: `down removes the lab --name names (default "skb"): its namespaces, its veth
pair and its record.

--all removes every lab recorded on this machine (in ` + lab.RecordDir + `, or the
directory $` + lab.RecordDirEnv + ` names), whoever made it: the labs of skb lab up,
including those other users or sessions made and may still be using, and
every lab whose process is gone. It keeps only the labs of processes still
running (a bench or a test), and says so. To remove your own lab alone, give
--name.

A lab with processes running inside its namespaces (skb lab exec, ip netns
exec) is kept, and down names them and exits 1 (with --all, after removing
the others): removing it would leave them running in a namespace that has lost
its veth. --force removes it anyway.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if all && cmd.Flags().Changed("name") {
				return errors.New("lab down: give --name or --all, not both")
			}
			busy := func(n string) error {
				pids, err := lab.Procs(n)
				pids = slices.DeleteFunc(pids, func(p int) bool { return p == os.Getpid() })
				if err != nil || len(pids) == 0 || force {
					return err
				}
				return fmt.Errorf("lab down: lab %s has %d %s running inside (%s); stop %s first, or give --force",
					n, len(pids), plural(len(pids), "process", "processes"), procNames(pids), pronoun(len(pids)))
			}
			if !all {
				if !lab.ValidName(name) {
					return fmt.Errorf("lab down: %w", badLabName(name))
				}
				if err := busy(name); err != nil {
					if errors.Is(err, lab.ErrNotFound) {
						return fmt.Errorf("lab down: no lab named %q (see `skb lab list`)", name)
					}
					return err
				}
				inside, _ := lab.Procs(name) // with --force: what keeps running
				inside = slices.DeleteFunc(inside, func(p int) bool { return p == os.Getpid() })
				if err := lab.Remove(name); err != nil {
					if errors.Is(err, lab.ErrNotFound) {
						return fmt.Errorf("lab down: no lab named %q (see `skb lab list`)", name)
					}
					return err
				}
				fmt.Fprintf(out, "removed lab %s\n", name)
				if len(inside) > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "skb: lab down: warning: %d %s inside %s still %s, in namespaces without their veth (%s)\n",
						len(inside), plural(len(inside), "process", "processes"), name, plural(len(inside), "runs", "run"), procNames(inside))
				}
				return nil
			}
			infos, err := lab.List()
			if err != nil {
				return err
			}
			var errs []error
			var kept []string
			for _, i := range infos {
				if !i.Persist && i.Alive {
					fmt.Fprintf(out, "kept lab %s: in use by pid %d (remove it with --name %s)\n", i.Name, i.PID, i.Name)
					continue
				}
				if err := busy(i.Name); err != nil {
					if !errors.Is(err, lab.ErrNotFound) {
						fmt.Fprintf(out, "kept lab %s: %v\n", i.Name, strings.TrimPrefix(err.Error(), "lab down: "))
						kept = append(kept, i.Name)
					}
					continue
				}
				if err := lab.Remove(i.Name); err != nil && !errors.Is(err, lab.ErrNotFound) {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(out, "removed lab %s\n", i.Name)
			}
			if len(kept) > 0 {
				errs = append(errs, fmt.Errorf("lab down: kept %s with processes inside (%s); give --force to remove %s",
					plural(len(kept), "a lab", "labs"), strings.Join(kept, ", "), pronoun(len(kept))))
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().StringVar(&name, "name", labDefaultName, "the lab to remove")
	cmd.Flags().BoolVar(&all, "all", false, "remove every lab made by skb lab up on this machine, by any user or session, and every one whose process is gone")
	cmd.Flags().BoolVar(&force, "force", false, "remove a lab even with processes running inside it")
	return cmd
}

func labListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the recorded labs and whether each is persistent (with how many processes run inside), in use or stale",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			infos, err := lab.List()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if infos == nil {
					infos = []lab.Info{}
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(infos)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "name\tstate\tpid\tnamespaces\tcreated")
			for _, i := range infos {
				state := "in use"
				switch {
				case i.Persist:
					state = "persistent"
					if pids, _ := lab.Procs(i.Name); len(pids) > 0 {
						// What lab down would refuse for.
						state = fmt.Sprintf("persistent, %d %s inside", len(pids), plural(len(pids), "process", "processes"))
					}
				case !i.Alive:
					state = "stale"
				}
				for _, ns := range []string{i.NSA, i.NSB} {
					if _, err := os.Stat("/run/netns/" + ns); errors.Is(err, fs.ErrNotExist) {
						state += ", broken: " + ns + " is gone (skb lab down)"
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s %s\t%s\n", i.Name, state, i.PID, i.NSA, i.NSB, i.Created.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func labThreadedCmd() *cobra.Command {
	var name string
	cpu := -1
	cmd := &cobra.Command{
		Use:   "threaded on|off [--cpu N] [--name N]",
		Short: "Turn threaded NAPI on side B's veth on or off, and pin its kernel thread with --cpu",
		Long: `threaded turns threaded NAPI on or off on side B's veth, which has NAPI only
while GRO is on (lab up --threaded turns it on) or an XDP program is attached
(an AF_XDP receiver is bound); otherwise the kernel refuses the change.
Turning it on when it is on, or off when it is off, changes nothing and
succeeds. --cpu N pins the NAPI kernel thread(s) to CPU N, the receiver's,
so that the scheduler never runs them on the sender's CPU. The pin belongs
to the thread: when the kernel makes a new one (threaded off and on again,
or the last XDP program detached and another attached), run threaded on
--cpu N again.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("lab threaded: want on or off, not %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := lab.ParseToggle(args[0])
			if err != nil || t == lab.Default {
				return fmt.Errorf("lab threaded: want on or off, not %q", args[0])
			}
			if cpu >= 0 && t != lab.On {
				return errors.New("lab threaded: --cpu pins the NAPI thread that \"on\" starts; \"off\" has none")
			}
			if cpu < -1 || cpu >= runtime.NumCPU() {
				return fmt.Errorf("lab threaded: --cpu %d: this machine has CPUs 0 to %d", cpu, runtime.NumCPU()-1)
			}
			l, err := lab.Open(name)
			if err != nil {
				return fmt.Errorf("lab threaded: %w", labOpenErr(name, err))
			}
			defer l.Release()
			// Only a change is written: the kernel refuses any write,
			// also of the state it is in, while the veth has no NAPI
			// (GRO off and no XDP program). A veth whose NAPI went away
			// while threaded (its AF_XDP receiver closed) keeps the flag
			// and refuses "off" too: say so.
			on, err := l.B.Threaded()
			if err != nil {
				return err
			}
			if on != (t == lab.On) {
				if err := l.SetThreaded(t == lab.On); err != nil {
					if on && errors.Is(err, lab.ErrNoNAPI) {
						return fmt.Errorf("lab threaded: %s keeps threaded NAPI on until it has NAPI again (GRO on, or an XDP program attached), when off can be written: %w", l.B.Ifname, err)
					}
					return err
				}
				if on, err = l.B.Threaded(); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "threaded NAPI on %s in %s: %v\n", l.B.Ifname, l.B.NSName, lab.ToggleOf(on))
			if cpu >= 0 {
				n, err := l.PinNAPI(cpu)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d NAPI thread(s) of %s pinned to CPU %d\n", n, l.B.Ifname, cpu)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", labDefaultName, "the lab")
	cmd.Flags().IntVar(&cpu, "cpu", -1, "pin the NAPI kernel thread(s) to this CPU (the receiver's, so that it never runs on the sender's)")
	return cmd
}

func labOpenErr(name string, err error) error {
	if !lab.ValidName(name) {
		return badLabName(name)
	}
	if errors.Is(err, lab.ErrNotFound) {
		return fmt.Errorf("no lab named %q: make one with `skb lab up --name %s`", name, name)
	}
	if errors.Is(err, fs.ErrNotExist) {
		// A namespace of the lab was removed by hand.
		return fmt.Errorf("%w: the lab is broken: remove it with `skb lab down --name %s`, then make it again", err, name)
	}
	return err
}

// badLabName is the error of a --name no lab can have.
func badLabName(name string) error {
	return fmt.Errorf("--name %q: want 1 to %d characters from [A-Za-z0-9_-], not starting with '-'", name, lab.MaxNameLen)
}

func labExecCmd() *cobra.Command {
	var o lab.Options
	var temp bool
	cmd := &cobra.Command{
		Use:   "exec a|b [--name N | --temp [lab flags]] -- CMD [ARGS...]",
		Short: "Run a command inside side A's or B's namespace of a lab, or of a temporary one with --temp",
		Long: `exec runs CMD inside the namespace of side a or b (through ip netns exec) and
exits with its status: 128+N when signal N ended it, 127 when CMD is not found
in PATH and 126 when it cannot be run, as a shell does. CMD is looked up in
skb's PATH (so skb itself must be on it for "lab exec a -- skb ..."). CMD's
environment names the lab: SKB_LAB (its name), SKB_LAB_IFNAME (the side's
veth end), SKB_LAB_ADDR and SKB_LAB_PEER_ADDR (the side's address and the
other side's; with --ipv6 also SKB_LAB_ADDR6 and SKB_LAB_PEER_ADDR6), as in: skb lab exec a --temp -- sh -c 'skb pktgen --dev
afpacket:$SKB_LAB_IFNAME --dst $SKB_LAB_PEER_ADDR:9000 -t 1s'. With
--temp it makes a lab first (taking the lab flags of up) and removes it when CMD
ends, also when skb gets SIGINT, SIGTERM or SIGHUP: the signal is passed to CMD
(in a --temp lab, to every process inside it, CMD's children too), which gets
` + labKillAfter.String() + ` to exit before it is killed, with its children. What CMD leaves running in a --temp lab
is ended (SIGTERM, then SIGKILL a second later) before the lab is removed. If
skb itself is killed (SIGKILL), CMD gets SIGKILL too, rather than running on
without its lab; CMD's own children are not killed (they run on, reparented to
init), and a --temp lab stays, listed as stale, until skb lab down --name NAME
(which refuses while processes run inside it: kill them first).`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case len(args) == 0 || dash == 0:
				return errors.New("lab exec: want a side, a or b, before --")
			case !slices.Contains([]string{"a", "b", "A", "B"}, args[0]):
				return fmt.Errorf("lab exec: side must be a or b, not %q", args[0])
			case dash > 1:
				return fmt.Errorf("lab exec: unexpected %q before --", args[1])
			case len(args) < 2:
				return errors.New("lab exec: want a command after --")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkLabFlags(cmd, &o); err != nil {
				return fmt.Errorf("lab exec: %w", err)
			}
			if !temp {
				for _, f := range labOptionFlags {
					if cmd.Flags().Changed(f) {
						return fmt.Errorf("lab exec: --%s needs --temp (an existing lab keeps its options)", f)
					}
				}
			}
			// With --temp and no --name, New generates a name, so that
			// temporary labs never collide.
			if !temp && o.Name == "" {
				o.Name = labDefaultName
			}
			code, err := labExec(strings.ToLower(args[0]), o, temp, args[1:])
			if errors.Is(err, lab.ErrExist) {
				return fmt.Errorf("lab exec: lab %s already exists (see `skb lab list`)", o.Name)
			}
			if err != nil {
				return err
			}
			if code != 0 {
				os.Exit(code)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Name, "name", "", "the lab (default \""+labDefaultName+"\"; with --temp, the temporary lab's name, generated if not given)")
	cmd.Flags().BoolVar(&temp, "temp", false, "make a temporary lab for the command and remove it afterwards")
	addLabOptionFlags(cmd, &o)
	return cmd
}

// labExec runs argv in side's namespace and returns its exit code: the
// command's own, or 128+signal when a signal ended it. A command that is not
// in PATH, or cannot be run, is an exitError of 127 or 126, as from a shell.
// The command is started with a parent-death signal, SIGKILL: if skb dies,
// the kernel kills it.
func labExec(side string, o lab.Options, temp bool, argv []string) (code int, err error) {
	if _, err := exec.LookPath(argv[0]); err != nil {
		code := 127
		if errors.Is(err, fs.ErrPermission) {
			code = 126
		}
		var ee *exec.Error
		var pe *fs.PathError
		if errors.As(err, &ee) {
			err = ee.Err
		}
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return code, &exitError{code: code, err: fmt.Errorf("lab exec: %s: %w", argv[0], err)}
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	var l *lab.Lab
	if temp {
		if l, err = lab.New(o); err != nil {
			// The library's operation is lab.New; the command's is lab
			// exec (main prefixes "skb: ").
			return 1, fmt.Errorf("lab exec: %s", strings.TrimPrefix(err.Error(), "lab: new: "))
		}
		defer func() {
			if cerr := l.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	} else {
		if l, err = lab.Open(o.Name); err != nil {
			return 1, fmt.Errorf("lab exec: %w", labOpenErr(o.Name, err))
		}
		defer l.Release()
	}
	select {
	case s := <-sigs: // arrived while the lab was being made
		return 128 + int(s.(syscall.Signal)), nil
	default:
	}
	h := &l.A
	if side == "b" {
		h = &l.B
	}
	peer := &l.B
	if h == &l.B {
		peer = &l.A
	}
	c := h.Cmd(argv[0], argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Env = append(os.Environ(), "SKB_LAB="+l.Name, "SKB_LAB_IFNAME="+h.Ifname,
		"SKB_LAB_ADDR="+h.Addr.String(), "SKB_LAB_PEER_ADDR="+peer.Addr.String())
	if h.Addr6.IsValid() {
		c.Env = append(c.Env, "SKB_LAB_ADDR6="+h.Addr6.String(), "SKB_LAB_PEER_ADDR6="+peer.Addr6.String())
	}
	// The kernel sends the parent-death signal when the thread that forked
	// the child exits, not the process (prctl(2), PR_SET_PDEATHSIG): this
	// goroutine keeps its thread until the command has exited.
	setPdeathsig(c)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.Start(); err != nil {
		return 1, fmt.Errorf("lab exec: start %s in %s: %w", argv[0], h.NSName, err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	// In a temporary lab everything inside is CMD's (its children too),
	// and goes with the lab: a signal reaches them all, and what is left
	// when CMD ends is ended before the lab is removed.
	signalInside := func(s syscall.Signal) {
		if temp {
			signalLabProcs(l.Name, s)
		}
	}
	if temp {
		defer endLabProcs(l.Name)
	}
	var kill *time.Timer
	var killed atomic.Bool
	killDone := make(chan struct{})
	for {
		select {
		case s := <-sigs:
			c.Process.Signal(s)
			signalInside(s.(syscall.Signal))
			if kill == nil {
				kill = time.AfterFunc(labKillAfter, func() {
					defer close(killDone)
					killed.Store(true)
					// CMD's children too: a shell that ignores the
					// signal leaves its command running.
					killTree(c.Process)
					signalInside(syscall.SIGKILL)
				})
			}
		case werr := <-done:
			// A kill under way ends before skb does: CMD dies first,
			// and its descendants are killed after that.
			if kill != nil && !kill.Stop() {
				<-killDone
			}
			var ee *exec.ExitError
			if werr != nil && !errors.As(werr, &ee) {
				return 1, fmt.Errorf("lab exec: %s: %w", strings.Join(argv, " "), werr)
			}
			if killed.Load() {
				fmt.Fprintf(os.Stderr, "skb: lab exec: %s did not end within %v of the signal: killed\n", argv[0], labKillAfter)
			}
			ws, _ := c.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				return 128 + int(ws.Signal()), nil
			}
			return c.ProcessState.ExitCode(), nil
		}
	}
}

// signalLabProcs sends s to every process inside the recorded lab name,
// but skb itself (whose threads may be inside).
func signalLabProcs(name string, s syscall.Signal) {
	pids, _ := lab.Procs(name)
	for _, pid := range pids {
		if pid == os.Getpid() {
			continue
		}
		if p, err := os.FindProcess(pid); err == nil {
			p.Signal(s)
		}
	}
}

// endLabProcs ends the processes left inside the temporary lab name once
// its command has exited: SIGTERM, then SIGKILL to those still there after
// a second, waiting up to a second more for them to be gone, so that the
// lab is removed with nothing running inside.
func endLabProcs(name string) {
	left := func() bool {
		pids, _ := lab.Procs(name)
		return len(pids) > 1 || len(pids) == 1 && pids[0] != os.Getpid()
	}
	if !left() {
		return
	}
	signalLabProcs(name, syscall.SIGTERM)
	for _, s := range []syscall.Signal{syscall.SIGKILL, 0} {
		for deadline := time.Now().Add(time.Second); left() && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		if s == 0 || !left() {
			return
		}
		signalLabProcs(name, s)
	}
}

// procNames describes the processes pids as "pid 12 (skb), pid 40 (sh)",
// with their command names from /proc (proc(5)), the first five only.
func procNames(pids []int) string {
	var parts []string
	for i, pid := range pids {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(pids)-5))
			break
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			parts = append(parts, fmt.Sprintf("pid %d", pid))
			continue
		}
		parts = append(parts, fmt.Sprintf("pid %d (%s)", pid, strings.TrimSpace(string(comm))))
	}
	return strings.Join(parts, ", ")
}

// pronoun is "it" for one, "them" for more.
func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
