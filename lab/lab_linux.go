//go:build linux

package lab

import (
	"errors"
	"fmt"
	"github.com/skbdev/skb/internal/thread"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// checkOptions is Options.check; tests replace it to reach the kernel with
// options it refuses.
var checkOptions = (*Options).check

// New builds a lab: it records it in RecordDir, makes the namespaces
// Name+"A" and Name+"B" (as `ip netns add` does), creates the veth pair
// Name+"A0" <-> Name+"B0" with its ends directly inside them, sets MTU, offloads
// and threaded NAPI as opts says, adds 198.18.0.1/24 and 198.18.0.2/24, brings
// lo and the veth ends up, and adds permanent neighbour entries so that neither
// side sends ARP: the steps of `ip netns add`, `ip link add ... type veth peer
// ...`, `ip addr add` and `ip neigh replace ... nud permanent`, done with netlink.
// It returns only once packets flow both ways: A's transmit queues are
// active (the kernel activates them asynchronously, and drops packets
// silently until then) and, with IPv6, both addresses are local. B's
// operational state (IFF_RUNNING, "state UP" in ip link) may still read down
// for up to a second after that, which no packet path depends on. New takes
// a few milliseconds on an idle machine, more with offloads (ethtool runs
// twice per end).
//
// New needs root, or CAP_SYS_ADMIN and CAP_NET_ADMIN (and write access to
// /run); without them it returns an error naming what is missing and matching
// os.ErrPermission. Bad options return an error wrapping ErrInvalid before
// anything is made. On any later failure New removes what it made and returns
// the first error, wrapped. The caller owns the returned lab and must Close it
// (or Release it, to leave it in place); a lab of a process that exits without
// either is removed by the next Cleanup unless opts.Persist is set.
func New(opts Options) (*Lab, error) {
	if err := checkOptions(&opts); err != nil {
		return nil, err
	}
	if err := privileges(); err != nil {
		return nil, fmt.Errorf("lab: new: %w", err)
	}
	rec, err := claim(opts)
	if err != nil {
		return nil, err
	}
	l := newLab(rec)
	m := made{record: true}
	if err := l.build(&m); err != nil {
		l.closeHandles()
		if rerr := teardown(rec, m); rerr != nil {
			err = fmt.Errorf("%w (and removing what was made: %v)", err, rerr)
		}
		return nil, err
	}
	return l, nil
}

// Open attaches to the recorded lab called name, for example one made by
// `skb lab up` or by another process. The caller owns the returned lab:
// Close removes the lab, Release only lets go of it. Open returns an error
// wrapping ErrNotFound when no such lab is recorded.
func Open(name string) (*Lab, error) {
	rec, err := readRecord(name)
	if err != nil {
		return nil, fmt.Errorf("lab: open %s: %w", name, err)
	}
	l := newLab(rec)
	if err := l.attach(); err != nil {
		l.closeHandles()
		return nil, fmt.Errorf("lab: open %s: %w", name, err)
	}
	return l, nil
}

// Remove removes the recorded lab called name, whichever process made it and
// whether or not that process still runs: the veth pair, both namespaces and the
// record. Parts already gone are skipped. It returns an error wrapping
// ErrNotFound when no such lab is recorded.
func Remove(name string) error {
	rec, err := readRecord(name)
	if err != nil {
		return fmt.Errorf("lab: remove %s: %w", name, err)
	}
	return teardown(rec, madeAll)
}

// Procs returns the IDs of the processes running inside the recorded lab
// called name: those with a thread whose network namespace is one of its
// two, matched by device and inode number (/run/netns/NS against
// /proc/PID/task/TID/ns/net, see proc(5) and ip-netns(8)), in increasing
// order. Processes that exit or
// cannot be inspected while it looks are skipped. It returns an error
// wrapping ErrNotFound when no such lab is recorded.
func Procs(name string) ([]int, error) {
	rec, err := readRecord(name)
	if err != nil {
		return nil, fmt.Errorf("lab: procs %s: %w", name, err)
	}
	type id struct{ dev, ino uint64 }
	var nss []id
	for _, ns := range []string{rec.NSA, rec.NSB} {
		var st unix.Stat_t
		if unix.Stat(nsPath(ns), &st) == nil {
			nss = append(nss, id{st.Dev, st.Ino})
		}
	}
	if len(nss) == 0 {
		return nil, nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("lab: procs %s: %w", name, err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// Each thread has its namespace: a process counts when any of
		// its threads is inside (a Go program's locked thread may be).
		tasks, _ := os.ReadDir("/proc/" + e.Name() + "/task")
		for _, task := range tasks {
			var st unix.Stat_t
			if unix.Stat("/proc/"+e.Name()+"/task/"+task.Name()+"/ns/net", &st) == nil && slices.Contains(nss, id{st.Dev, st.Ino}) {
				pids = append(pids, pid)
				break
			}
		}
	}
	slices.Sort(pids)
	return pids, nil
}

// Close removes the lab: it deletes the veth pair, unmounts and removes both
// namespaces' names (a namespace itself lives on while a socket or process
// still uses it, without the veth), closes the handles and removes the record.
// Close is idempotent: later calls, and Close after Release, do nothing and
// return nil. When a part cannot be removed, Close returns the errors joined
// and keeps the record, so that Remove or Cleanup can try again. Close may run while Do runs on one of the lab's hosts: fn goes
// on in a namespace that has lost its veth and its name.
func (l *Lab) Close() error {
	var err error
	l.once.Do(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.closed = true
		err = teardown(l.rec, madeAll)
		l.closeHandlesLocked()
	})
	return err
}

// Release closes l's namespace handles and leaves the lab in place, to be
// used again with Open or removed with Remove. After Release, l's methods
// return errors matching net.ErrClosed and Close does nothing.
func (l *Lab) Release() error {
	l.once.Do(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.closed = true
		l.closeHandlesLocked()
	})
	return nil
}

// SetThreaded turns threaded NAPI on side B's veth on or off, as
// Host.SetThreaded does.
func (l *Lab) SetThreaded(on bool) error { return l.B.SetThreaded(on) }

// PinNAPI pins side B's NAPI kernel threads to cpu, as Host.PinNAPI does.
func (l *Lab) PinNAPI(cpu int) (int, error) { return l.B.PinNAPI(cpu) }

// SetOffloads sets GRO, TSO and transmit checksumming on both veth ends, as
// Host.SetOffloads does; Default leaves a feature as it is.
func (l *Lab) SetOffloads(gro, tso, txcsum Toggle) error {
	if err := l.A.SetOffloads(gro, tso, txcsum); err != nil {
		return err
	}
	return l.B.SetOffloads(gro, tso, txcsum)
}

// Do runs fn on an OS thread switched into h's network namespace, waits for
// it, and returns its error. Sockets fn opens stay in the namespace after it
// returns, and a program fn starts with os/exec runs in it. fn runs on a new
// goroutine locked to its thread; it must not start goroutines that expect the
// namespace (they run on other threads). A panic in fn is raised again in the
// caller; runtime.Goexit in fn (t.FailNow) ends the caller's goroutine too.
// If switching back fails, the thread is discarded rather than reused.
func (h *Host) Do(fn func() error) error {
	type result struct {
		err      error
		panicked bool
		value    any
		exited   bool // fn called runtime.Goexit
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		r := result{exited: true}
		restored := false
		defer func() {
			if restored {
				runtime.UnlockOSThread()
			}
			ch <- r
		}()
		orig, err := netns.Get()
		if err != nil {
			r = result{err: fmt.Errorf("lab: do in %s: get current namespace: %w", h.NSName, err)}
			restored = true
			return
		}
		defer orig.Close()
		if err := h.enter(); err != nil {
			r = result{err: err}
			restored = true
			return
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					r = result{panicked: true, value: p}
				}
			}()
			r.err = fn()
			r.exited = false
		}()
		restored = netns.Set(orig) == nil
	}()
	r := <-ch
	switch {
	case r.panicked:
		panic(r.value)
	case r.exited:
		runtime.Goexit()
	}
	return r.err
}

// enter switches the calling thread into h's namespace.
func (h *Host) enter() error {
	if h.lab == nil {
		return fmt.Errorf("lab: enter %s: %w", h.NSName, net.ErrClosed)
	}
	h.lab.mu.RLock()
	defer h.lab.mu.RUnlock()
	if h.lab.closed {
		return fmt.Errorf("lab: enter %s: %w", h.NSName, net.ErrClosed)
	}
	if err := netns.Set(h.NS); err != nil {
		return fmt.Errorf("lab: enter %s: setns: %w%s", h.NSName, err, need(err, "CAP_SYS_ADMIN"))
	}
	return nil
}

// Cmd returns a command that runs the program name with args inside h's
// namespace, through `ip netns exec` (iproute2's ip(8) must be in PATH): the
// program also sees a /sys of the namespace, and /etc/netns/<NSName>/ files
// if any, as ip-netns(8) describes. The caller sets its I/O and starts it as
// with exec.Command; if ip is not found, or the lab was closed or released,
// Start returns cmd.Err (matching net.ErrClosed in the second case).
func (h *Host) Cmd(name string, args ...string) *exec.Cmd {
	c := exec.Command("ip", append([]string{"netns", "exec", h.NSName, name}, args...)...)
	if h.lab == nil || h.lab.isClosed() {
		c.Err = fmt.Errorf("lab: cmd %s in %s: %w", name, h.NSName, net.ErrClosed)
	}
	return c
}

// isClosed reports whether Close or Release was called.
func (l *Lab) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed
}

// SetThreaded turns threaded NAPI on h's veth end on or off by writing
// /sys/class/net/<Ifname>/threaded inside h's namespace (see Threaded for how).
// veth runs NAPI only while GRO is on or an XDP program is attached; otherwise
// the kernel refuses and the error wraps ErrNoNAPI as well as the errno.
func (h *Host) SetThreaded(on bool) error {
	v := "0"
	if on {
		v = "1"
	}
	path := "/sys/class/net/" + h.Ifname + "/threaded"
	err := h.withSysfs(func() error { return os.WriteFile(path, []byte(v), 0) })
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EIO) {
			return fmt.Errorf("lab: set threaded %s on %s: %w (%w)", v, h.Ifname, err, ErrNoNAPI)
		}
		return fmt.Errorf("lab: set threaded %s on %s: %w", v, h.Ifname, err)
	}
	return nil
}

// PinNAPI pins the NAPI kernel threads of h's veth end, which exist while
// threaded NAPI is on, to cpu (sched_setaffinity(2)), and returns how many
// it pinned. The kernel names each "napi/<ifname>-<napi id>" (cut to 15
// bytes, the length of a task's comm); they are found by that name in
// /proc. Unpinned, the scheduler may run a NAPI thread on the sender's CPU
// rather than the receiver's, and a run's rate then halves. It returns an
// error when there is none (threaded NAPI off on h's end), when a name cut
// to 15 bytes cannot tell h's threads from those of the lab's other end
// and that end is threaded too, or when one cannot be pinned.
func (h *Host) PinNAPI(cpu int) (int, error) {
	// Threads are found by name, so first make sure this end has some: a
	// cut name could match the other end's.
	on, err := h.Threaded()
	if err != nil {
		return 0, fmt.Errorf("lab: pin NAPI of %s: %w", h.Ifname, err)
	}
	if !on {
		return 0, fmt.Errorf("lab: pin NAPI of %s: no NAPI thread (threaded NAPI is off)", h.Ifname)
	}
	want := "napi/" + h.Ifname + "-"
	if len(want) > 15 {
		want = want[:15]
		if o := h.peer(); o != nil && strings.HasPrefix("napi/"+o.Ifname+"-", want) {
			if oon, err := o.Threaded(); err == nil && oon {
				return 0, fmt.Errorf("lab: pin NAPI of %s: its NAPI threads' names, cut to %q, are also %s's, which is threaded too: turn it off to pin these", h.Ifname, want, o.Ifname)
			}
		}
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("lab: pin NAPI of %s: %w", h.Ifname, err)
	}
	var set unix.CPUSet
	set.Set(cpu)
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil || !strings.HasPrefix(strings.TrimSpace(string(comm)), want) {
			continue
		}
		if err := unix.SchedSetaffinity(pid, &set); err != nil {
			return n, fmt.Errorf("lab: pin NAPI thread %d of %s to CPU %d: %w", pid, h.Ifname, cpu, err)
		}
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("lab: pin NAPI of %s: no NAPI thread (threaded NAPI is off)", h.Ifname)
	}
	return n, nil
}

// peer returns the other end of h's lab, or nil for a Host outside one.
func (h *Host) peer() *Host {
	switch {
	case h.lab == nil:
		return nil
	case h == &h.lab.A:
		return &h.lab.B
	case h == &h.lab.B:
		return &h.lab.A
	}
	return nil
}

// XDPAttached reports whether an XDP program is attached to h's interface
// (the link's IFLA_XDP attributes, read over netlink in h's namespace): an
// AF_XDP receiver attaches its program as the last step of opening, once its
// socket is bound and its fill ring full. The error is netlink's, wrapped.
func (h *Host) XDPAttached() (bool, error) {
	var attached bool
	err := h.Do(func() error {
		l, err := netlink.LinkByName(h.Ifname)
		if err != nil {
			return err
		}
		x := l.Attrs().Xdp
		attached = x != nil && (x.Attached || x.ProgId != 0)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("lab: read the XDP attachment of %s: %w", h.Ifname, err)
	}
	return attached, nil
}

// Threaded reads back whether threaded NAPI is on for h's veth end. A sysfs
// file shows the network namespace of the sysfs mount, not of the reader, so
// Threaded (like SetThreaded) runs on a thread of its own that unshares its
// mount namespace, enters h's network namespace and mounts a fresh sysfs on
// /sys there, as `ip netns exec` does (ip-netns(8)); that thread is then
// discarded and no mount is seen outside it.
func (h *Host) Threaded() (bool, error) {
	var b []byte
	path := "/sys/class/net/" + h.Ifname + "/threaded"
	err := h.withSysfs(func() (err error) {
		b, err = os.ReadFile(path)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("lab: read threaded of %s: %w", h.Ifname, err)
	}
	s := strings.TrimSpace(string(b))
	return s != "" && s != "0", nil
}

// withSysfs runs fn on a discarded thread with a private mount namespace, inside
// h's network namespace, with a sysfs of that namespace mounted on /sys.
func (h *Host) withSysfs(fn func() error) error {
	var err error
	// thread.Run ends the thread with fn (never the process's main
	// thread, which the runtime cannot end): its mount and network
	// namespaces are changed.
	thread.Run(func() {
		err = func() error {
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return fmt.Errorf("unshare mount namespace: %w%s", err, need(err, "CAP_SYS_ADMIN"))
			}
			// Slave, so that the mount below does not propagate back out.
			if err := unix.Mount("", "/", "", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("make / a slave mount: %w", err)
			}
			if err := h.enter(); err != nil {
				return err
			}
			if err := unix.Mount(h.NSName, "/sys", "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
				return fmt.Errorf("mount sysfs of %s: %w", h.NSName, err)
			}
			return fn()
		}()
	})
	return err
}

// SetOffloads sets GRO, TSO and transmit checksumming on h's veth end with
// `ethtool -K <Ifname> gro on|off tso on|off tx on|off` run inside h's
// namespace, leaving a Default feature as it is, then reads the features back.
// It needs the ethtool program (Debian package ethtool) in PATH; without it
// the error wraps exec.ErrNotFound. A change the kernel did not make (TSO on
// while transmit checksumming is off) returns an error wrapping ErrOffload.
func (h *Host) SetOffloads(gro, tso, txcsum Toggle) error {
	args := []string{"-K", h.Ifname}
	want := map[string]Toggle{}
	for _, f := range []struct {
		word string
		t    Toggle
	}{{"gro", gro}, {"tso", tso}, {"tx", txcsum}} {
		switch f.t {
		case On, Off:
			args = append(args, f.word, f.t.String())
			want[f.word] = f.t
		case Default:
		default:
			return fmt.Errorf("lab: set offloads on %s: %w: toggle %v", h.Ifname, ErrInvalid, f.t)
		}
	}
	if len(want) == 0 {
		return nil
	}
	if _, err := h.ethtool(args...); err != nil {
		return fmt.Errorf("lab: set offloads on %s: %w", h.Ifname, err)
	}
	got, err := h.Features()
	if err != nil {
		return err
	}
	have := map[string]bool{"gro": got.GRO, "tso": got.TSO, "tx": got.TxChecksum}
	var bad []string
	for _, w := range []string{"gro", "tso", "tx"} {
		if t, ok := want[w]; ok && (t == On) != have[w] {
			bad = append(bad, fmt.Sprintf("%s %v requested, still %v", w, t, ToggleOf(have[w])))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("lab: set offloads on %s: %w: %s", h.Ifname, ErrOffload, strings.Join(bad, "; "))
	}
	return nil
}

// Features reads back the active offloads of h's veth end with `ethtool -k`
// run inside h's namespace. It needs ethtool in PATH, as SetOffloads does.
func (h *Host) Features() (Features, error) {
	out, err := h.ethtool("-k", h.Ifname)
	if err != nil {
		return Features{}, fmt.Errorf("lab: read offloads of %s: %w", h.Ifname, err)
	}
	f, err := parseEthtoolFeatures(out)
	if err != nil {
		return f, fmt.Errorf("lab: read offloads of %s: %w", h.Ifname, err)
	}
	return f, nil
}

// ethtool runs ethtool with args inside h's namespace and returns its output.
func (h *Host) ethtool(args ...string) (string, error) {
	path, err := exec.LookPath("ethtool")
	if err != nil {
		return "", fmt.Errorf("%w (install the ethtool package)", err)
	}
	var out []byte
	err = h.Do(func() error {
		var err error
		out, err = exec.Command(path, args...).CombinedOutput()
		return err
	})
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg != "" {
			return "", fmt.Errorf("ethtool %s: %w: %s", strings.Join(args, " "), err, msg)
		}
		return "", fmt.Errorf("ethtool %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// need returns a hint naming the privilege an operation lacked, for an error
// that matches os.ErrPermission, and "" for any other.
func need(err error, capability string) string {
	if errors.Is(err, os.ErrPermission) {
		return " (need root or " + capability + ")"
	}
	return ""
}

// privileges returns nil when the calling thread holds what New needs, and
// otherwise an error wrapping EPERM that names the missing capabilities.
func privileges() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	eff := uint64(data[0].Effective) | uint64(data[1].Effective)<<32
	var missing []string
	for _, c := range []struct {
		bit  int
		name string
	}{{unix.CAP_SYS_ADMIN, "CAP_SYS_ADMIN"}, {unix.CAP_NET_ADMIN, "CAP_NET_ADMIN"}} {
		if eff&(1<<c.bit) == 0 {
			missing = append(missing, c.name)
		}
	}
	if os.Geteuid() != 0 && eff&(1<<unix.CAP_DAC_OVERRIDE) == 0 {
		missing = append(missing, "CAP_DAC_OVERRIDE (to write /run/netns and "+recordDir()+")")
	}
	if len(missing) > 0 {
		list := missing[len(missing)-1]
		if len(missing) > 1 {
			list = strings.Join(missing[:len(missing)-1], ", ") + " and " + list
		}
		return fmt.Errorf("need root or %s: %w", list, unix.EPERM)
	}
	return nil
}

// Privileged returns nil when the calling process may make a lab: it runs as
// root or holds CAP_SYS_ADMIN (namespaces, mounts), CAP_NET_ADMIN (links,
// addresses, neighbours, offloads) and, when not root, CAP_DAC_OVERRIDE (to
// write /run). Otherwise it returns an error naming what is missing and
// matching os.ErrPermission. It reads the capabilities with capget(2).
func Privileged() error {
	if err := privileges(); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return nil
}

func newLab(rec record) *Lab {
	l := &Lab{Name: rec.Name, Options: rec.Options, rec: rec}
	l.Options.Name = rec.Name
	l.A = Host{NSName: rec.NSA, NS: netns.None(), Ifname: rec.IfA, Addr: AddrA, Prefix: Prefix, lab: l}
	l.B = Host{NSName: rec.NSB, NS: netns.None(), Ifname: rec.IfB, Addr: AddrB, Prefix: Prefix, lab: l}
	if rec.Options.IPv6 {
		l.A.Addr6, l.A.Prefix6 = Addr6A, Prefix6
		l.B.Addr6, l.B.Prefix6 = Addr6B, Prefix6
	}
	return l
}

// build makes everything after the record, noting in m what it made.
func (l *Lab) build(m *made) error {
	o := l.Options
	for _, h := range []*Host{&l.A, &l.B} {
		if err := makeNS(h.NSName); err != nil {
			return fmt.Errorf("lab: create namespace %s: %w%s", h.NSName, err, need(err, "CAP_SYS_ADMIN"))
		}
		if h == &l.A {
			m.nsA = true
		} else {
			m.nsB = true
		}
		ns, err := netns.GetFromName(h.NSName)
		if err != nil {
			return fmt.Errorf("lab: open namespace %s: %w", h.NSName, err)
		}
		h.NS = ns
		if !o.IPv6 {
			// New devices inherit "default": the veth never gets an IPv6 address.
			if err := h.sysctl("net/ipv6/conf/default/disable_ipv6", "1"); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("lab: disable ipv6 in %s: %w", h.NSName, err)
			}
		}
	}
	hA, err := netlink.NewHandleAt(l.A.NS, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("lab: netlink socket in %s: %w", l.A.NSName, err)
	}
	defer hA.Close()
	hB, err := netlink.NewHandleAt(l.B.NS, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("lab: netlink socket in %s: %w", l.B.NSName, err)
	}
	defer hB.Close()

	attrs := netlink.NewLinkAttrs()
	attrs.Name = l.A.Ifname
	attrs.HardwareAddr = MACA
	if o.Queues > 0 {
		attrs.NumTxQueues, attrs.NumRxQueues = o.Queues, o.Queues
	}
	veth := netlink.NewVeth(attrs)
	veth.PeerName = l.B.Ifname
	veth.PeerHardwareAddr = MACB
	veth.PeerNamespace = netlink.NsFd(l.B.NS)
	if err := hA.LinkAdd(veth); err != nil {
		return fmt.Errorf("lab: create veth %s (%s) <-> %s (%s): %w%s", l.A.Ifname, l.A.NSName, l.B.Ifname, l.B.NSName, err, need(err, "CAP_NET_ADMIN"))
	}
	m.link = true

	groB := o.GRO
	if o.Threaded && groB == Default {
		groB = On
	}
	for _, s := range []struct {
		h    *Host
		nl   *netlink.Handle
		peer *Host
		gro  Toggle
	}{{&l.A, hA, &l.B, o.GRO}, {&l.B, hB, &l.A, groB}} {
		h, nh := s.h, s.nl
		link, err := nh.LinkByName(h.Ifname)
		if err != nil {
			return fmt.Errorf("lab: find %s in %s: %w", h.Ifname, h.NSName, err)
		}
		if o.MTU > 0 {
			if err := nh.LinkSetMTU(link, o.MTU); err != nil {
				return fmt.Errorf("lab: set mtu of %s to %d: %w", h.Ifname, o.MTU, err)
			}
		}
		lo, err := nh.LinkByName("lo")
		if err != nil {
			return fmt.Errorf("lab: find lo in %s: %w", h.NSName, err)
		}
		if err := nh.LinkSetUp(lo); err != nil {
			return fmt.Errorf("lab: set lo up in %s: %w", h.NSName, err)
		}
		addrs := []netip.Prefix{netip.PrefixFrom(h.Addr, h.Prefix.Bits())}
		if o.IPv6 {
			addrs = append(addrs, netip.PrefixFrom(h.Addr6, h.Prefix6.Bits()))
		}
		for _, p := range addrs {
			a := &netlink.Addr{IPNet: ipNet(p)}
			if p.Addr().Is6() {
				a.Flags = unix.IFA_F_NODAD
			}
			if err := nh.AddrAdd(link, a); err != nil {
				return fmt.Errorf("lab: add address %v to %s: %w", p, h.Ifname, err)
			}
		}
		if err := h.SetOffloads(s.gro, o.TSO, o.TxChecksum); err != nil {
			return err
		}
		if err := nh.LinkSetUp(link); err != nil {
			return fmt.Errorf("lab: set %s up: %w", h.Ifname, err)
		}
		neigh := []netip.Addr{s.peer.Addr}
		if o.IPv6 {
			neigh = append(neigh, s.peer.Addr6)
		}
		peerMAC := MACB
		if h == &l.B {
			peerMAC = MACA
		}
		for _, ip := range neigh {
			fam := unix.AF_INET
			if ip.Is6() {
				fam = unix.AF_INET6
			}
			n := &netlink.Neigh{LinkIndex: link.Attrs().Index, Family: fam, State: netlink.NUD_PERMANENT,
				IP: net.IP(ip.AsSlice()), HardwareAddr: peerMAC}
			if err := nh.NeighSet(n); err != nil {
				return fmt.Errorf("lab: add neighbour %v lladdr %v on %s: %w", ip, peerMAC, h.Ifname, err)
			}
		}
	}
	if err := l.waitReady(hA, hB, readyTimeout); err != nil {
		return err
	}
	if o.Threaded {
		if err := l.B.SetThreaded(true); err != nil {
			return err
		}
	}
	return l.fill(hA, hB)
}

// readyTimeout bounds how long New waits for the link to become usable.
const readyTimeout = 5 * time.Second

// waitReady waits until the veth pair carries packets both ways and, with
// IPv6, each end's address has its local route. A veth end gets its carrier
// when both ends are up (veth_open in drivers/net/veth.c). Bringing up B, the
// second end, activates B's transmit queues at once, since its carrier is
// already on (dev_activate in net/sched/sch_generic.c); A's queues are
// activated later by the link watcher (linkwatch_do_dev in
// net/core/link_watch.c), right after it sets A's operational state to up,
// and until then they hold noop_qdisc, which drops every packet without an
// error to the sender. So A must be operationally up and B must have its
// carrier; B's own operational state may lag by up to a second, as the link
// watcher delays events it does not deem urgent. An IPv6 address becomes local
// only when its (skipped) DAD completes after the carrier is on
// (addrconf_dad_completed in net/ipv6/addrconf.c); until then a packet to it
// is dropped and counted in Ip6InAddrErrors.
func (l *Lab) waitReady(hA, hB *netlink.Handle, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for delay := 50 * time.Microsecond; ; delay = min(2*delay, 10*time.Millisecond) {
		why, err := l.notReady(hA, hB)
		if err != nil || why == "" {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lab: wait for the link: %s after %v", why, timeout)
		}
		time.Sleep(delay)
	}
}

// notReady says what is not ready yet, or "" when all is.
func (l *Lab) notReady(hA, hB *netlink.Handle) (string, error) {
	for _, s := range []struct {
		h  *Host
		nh *netlink.Handle
	}{{&l.A, hA}, {&l.B, hB}} {
		link, err := s.nh.LinkByName(s.h.Ifname)
		if err != nil {
			return "", fmt.Errorf("lab: find %s in %s: %w", s.h.Ifname, s.h.NSName, err)
		}
		if a := link.Attrs(); s.h == &l.A && a.OperState != netlink.OperUp {
			return fmt.Sprintf("%s is %v", s.h.Ifname, a.OperState), nil
		} else if a.RawFlags&unix.IFF_LOWER_UP == 0 {
			return fmt.Sprintf("%s has no carrier", s.h.Ifname), nil
		}
		if !s.h.Addr6.IsValid() {
			continue
		}
		routes, err := s.nh.RouteGet(net.IP(s.h.Addr6.AsSlice()))
		if err != nil {
			return "", fmt.Errorf("lab: route to %v in %s: %w", s.h.Addr6, s.h.NSName, err)
		}
		if len(routes) == 0 || routes[0].Type != unix.RTN_LOCAL {
			return fmt.Sprintf("%v is not yet local on %s", s.h.Addr6, s.h.Ifname), nil
		}
	}
	return "", nil
}

// attach opens the namespaces of a recorded lab and reads its links.
func (l *Lab) attach() error {
	for _, h := range []*Host{&l.A, &l.B} {
		ns, err := netns.GetFromName(h.NSName)
		if err != nil {
			return fmt.Errorf("open namespace %s: %w", h.NSName, err)
		}
		h.NS = ns
	}
	hA, err := netlink.NewHandleAt(l.A.NS, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink socket in %s: %w", l.A.NSName, err)
	}
	defer hA.Close()
	hB, err := netlink.NewHandleAt(l.B.NS, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink socket in %s: %w", l.B.NSName, err)
	}
	defer hB.Close()
	return l.fill(hA, hB)
}

// fill reads each host's interface index, MAC and MTU.
func (l *Lab) fill(hA, hB *netlink.Handle) error {
	for _, s := range []struct {
		h  *Host
		nh *netlink.Handle
	}{{&l.A, hA}, {&l.B, hB}} {
		link, err := s.nh.LinkByName(s.h.Ifname)
		if err != nil {
			return fmt.Errorf("lab: find %s in %s: %w", s.h.Ifname, s.h.NSName, err)
		}
		a := link.Attrs()
		s.h.Ifindex, s.h.MAC, s.h.MTU = a.Index, a.HardwareAddr, a.MTU
	}
	return nil
}

func (l *Lab) closeHandles() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closeHandlesLocked()
}

func (l *Lab) closeHandlesLocked() {
	for _, h := range []*Host{&l.A, &l.B} {
		if h.NS.IsOpen() {
			h.NS.Close()
		}
		h.NS = netns.None()
	}
}

// sysctl writes value to /proc/sys/<key> inside h's namespace. The net.*
// sysctls under /proc/sys/net belong to the namespace of the opening thread.
func (h *Host) sysctl(key, value string) error {
	return h.Do(func() error { return os.WriteFile("/proc/sys/"+key, []byte(value), 0) })
}

// makeNS makes the named network namespace with netns.NewNamed on a thread
// that is discarded afterwards (NewNamed leaves it inside the new namespace),
// in the namespace directory shareNSDir prepares.
func makeNS(name string) error {
	if err := shareNSDir(); err != nil {
		return err
	}
	var err error
	// NewNamed moves the thread into the new namespace: thread.Run ends
	// the thread with it (never the process's main thread).
	thread.Run(func() {
		var ns netns.NsHandle
		if ns, err = netns.NewNamed(name); err == nil {
			ns.Close()
		}
	})
	if err != nil && !errors.Is(err, os.ErrExist) {
		// NewNamed leaves its mount point file behind when the bind mount fails;
		// a file that is a mount point cannot be removed (EBUSY), so this never
		// removes a namespace.
		os.Remove(nsPath(name))
	}
	return err
}

func nsPath(name string) string { return nsDir + "/" + name }

// nsDir is where named network namespaces are mounted (ip-netns(8)).
const nsDir = "/run/netns"

// shareNSDir makes nsDir a mount point of its own with shared propagation,
// as ip-netns(8) does before it adds a namespace, unless it is one
// already. A namespace is a bind mount on a file in nsDir: made while nsDir
// is a plain directory, it sits under the mount that a later "ip netns
// add" puts over nsDir, where no path reaches it to unmount it, and its
// file cannot be removed (EBUSY): the lab could not be removed. The check
// and the mount hold an exclusive flock(2) on nsDir, so that two labs made
// at once do not mount it twice.
func shareNSDir() error {
	if err := os.MkdirAll(nsDir, 0o755); err != nil {
		return fmt.Errorf("lab: %w%s", err, need(err, "CAP_DAC_OVERRIDE"))
	}
	fd, err := unix.Open(nsDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("lab: open %s: %w", nsDir, err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		return fmt.Errorf("lab: lock %s: %w", nsDir, err)
	}
	defer unix.Flock(fd, unix.LOCK_UN)
	err = unix.Mount("", nsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) {
		// Not a mount point: bind it onto itself, then share it.
		if err = unix.Mount(nsDir, nsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err == nil {
			err = unix.Mount("", nsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		}
	}
	if err != nil {
		return fmt.Errorf("lab: make %s a shared mount: %w%s", nsDir, err, need(err, "CAP_SYS_ADMIN"))
	}
	return nil
}

// deleteNS unmounts and removes a named namespace; one already gone is not an error.
func deleteNS(name string) error {
	err := unix.Unmount(nsPath(name), unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("lab: remove namespace %s: unmount: %w%s", name, err, need(err, "CAP_SYS_ADMIN"))
	}
	if err := os.Remove(nsPath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("lab: remove namespace %s: %w", name, err)
	}
	return nil
}

func ipNet(p netip.Prefix) *net.IPNet {
	bits := 32
	if p.Addr().Is6() {
		bits = 128
	}
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), bits)}
}
